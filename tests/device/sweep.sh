# tests/device.sh stage sweep (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Whole parameter sets of one variant, alternating, SWEEP_ROUNDS rounds, every row
# verified: SWEEP_CASES ("N K M [a=1,b=2];..."; the optional fourth field is the case's
# own base params, put before every set's), SWEEP_SETS ("--param a=1 --param b=2|--param a=3").
# A set may start with "defines:A=1,B=2": it runs with MKBENCH_NVRTC_DEFINES="A=1 B=2" (a
# kernel experiment behind a macro, against the default in the same binary).
need SWEEP_SETS || return
IFS=';' read -ra cases <<<"${SWEEP_CASES:-16 3..7 32M}"
IFS='|' read -ra sets <<<"${SWEEP_SETS}"
for case in "${cases[@]}"; do
  set -- $case
  base=""; for kv in ${4:+${4//,/ }}; do base+=" --param $kv"; done
  for round in $(seq 1 ${SWEEP_ROUNDS:-2}); do
    for i in "${!sets[@]}"; do
      tag=${SWEEP_VARIANT:-tensor-multik}-N$1-K$2-M$3-set$i-r$round
      defines=""; params=${sets[$i]}
      if [[ $params == defines:* ]]; then
        first=${params%% *}; defines=${first#defines:}; defines=${defines//,/ }; params=${params#"$first"}
      fi
      MKBENCH_NVRTC_DEFINES=$defines timeout $(cap 150) $MK run --variant ${SWEEP_VARIANT:-tensor-multik} --dims $1 \
        --k $2 --points $3 --iters 20 --verify --no-tuned $base $params --out $OUT/raw/sweep-$tag.json \
        >/dev/null 2>>$OUT/raw/sweep.log
      printf 'sweep N=%s K=%s M=%s round %s rc=%s set%s [%s] %s\n' $1 $2 $3 $round $? $i "$base ${sets[$i]}" \
        "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rows"][0]; print(round(r["summary"]["median_ms"],4), (r.get("verify") or {}).get("passed"))' $OUT/raw/sweep-$tag.json 2>/dev/null)" \
        | tee -a $OUT/sweep.txt
    done
  done
done
note "sweep done ($(grep -c True $OUT/sweep.txt 2>/dev/null) rows verified)"
