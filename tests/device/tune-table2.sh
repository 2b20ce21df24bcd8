# tests/device.sh stage tune-table2 (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 6: the suite tune with a 10-minute measurement budget, writing configs/<slug>.json.
# The cache lives in build-carry/ so a call stopped by the lease limit resumes in the
# next call with the rest of the same budget (cached points charge their recorded time).
mkdir -p build-carry
timeout $(cap ${TUNE_TIMEOUT:-520}) $MK tune --suite table2 --budget 10m --cache build-carry/tune-table2.jsonl \
  >$OUT/tune-table2.txt 2>$OUT/raw/tune-table2.log
rc=$?; tail -4 $OUT/raw/tune-table2.log; head -60 $OUT/tune-table2.txt
cp build-carry/tune-table2.jsonl $OUT/ 2>/dev/null; mkdir -p $OUT/configs; cp configs/*.json $OUT/configs/ 2>/dev/null
note "tune table2 rc=$rc (124 = stopped by the call limit; the same stage resumes it)"
