# tests/device.sh stage tune-issue4 (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 4's cases tuned into the device config (configs/<slug>.json, merged by bucket):
# TUNE4_CASES="N K M variants strategy budget;...", TUNE4_ARGS extra tune options (--fix update=f16).
IFS=';' read -ra cases <<<"${TUNE4_CASES:-32 1024 2M gemm-tf32x3 exhaustive 90s;8 3..7 32M registers-multik anneal 60s;16 3..7 32M registers-multik anneal 60s;8 16 8M registers-multik anneal 60s}"
for case in "${cases[@]}"; do
  set -- $case
  timeout $(cap 150) $MK tune --dims $1 --k $2 --points $3 --variants $4 --strategy $5 --budget $6 --samples 10 --warmup 2 ${TUNE4_ARGS:-} \
    --cache $OUT/raw/tune-issue4.jsonl >$OUT/raw/tune-issue4-case.txt 2>>$OUT/raw/tune-issue4.log
  rc=$?; cat $OUT/raw/tune-issue4-case.txt >>$OUT/tune-issue4.txt
  echo "tune N=$1 K=$2 M=$3 $4 $5 $6 rc=$rc $(tail -n +2 $OUT/raw/tune-issue4-case.txt | cut -f3-8)"
done
grep -E "^config " $OUT/raw/tune-issue4.log
mkdir -p $OUT/configs; cp configs/*.json $OUT/configs/ 2>/dev/null; cp $OUT/raw/tune-issue4.jsonl $OUT/
note "tune-issue4 done"
