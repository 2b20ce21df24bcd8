# tests/device.sh stage timeline (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Where one launch's time goes (issue 4), from tensor-multik's global-timer stamps
# (MKBENCH_TIMELINE): block start skew, prologue, loop, the spread of warps' loop ends, the
# epilogue and the last block's division, against the event-timed median of the same run.
# TIMELINE_CASES ("N K M [a=1,b=2];..."), TIMELINE_ARGS (extra mkbench run arguments).
IFS=';' read -ra cases <<<"${TIMELINE_CASES:-4 3..5 32M}"
for case in "${cases[@]}"; do
  set -- $case
  params=""; for kv in ${4:+${4//,/ }}; do params+=" --param $kv"; done
  tag=tensor-multik-N$1-K$2-M$3${4:+-${4//[=,]/-}}
  MKBENCH_TIMELINE=$OUT/raw/timeline-$tag.csv timeout $(cap 120) $MK run --variant tensor-multik --dims $1 --k $2 \
    --points $3 --iters 20 --no-tuned $params ${TIMELINE_ARGS:-} --out $OUT/raw/timeline-$tag.json \
    >/dev/null 2>$OUT/raw/timeline-$tag.log
  python3 tests/timeline_summary.py $OUT/raw/timeline-$tag.csv $OUT/raw/timeline-$tag.json "$tag" | tee -a $OUT/timeline.txt
done
note "timeline done"
