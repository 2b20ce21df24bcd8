# tests/device.sh stage sanitize (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
for variant in $($MK list --names-only --gpu-only 2>/dev/null); do
  for tool in memcheck racecheck; do
    timeout $(cap 300) compute-sanitizer --tool $tool --error-exitcode 9 $MK run --variant $variant --dims 8 --points 4096 \
      --k 3..5 --iters 2 --warmup 1 --verify >$OUT/raw/san-$tool-$variant.log 2>&1
    rc=$?
    errs=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/raw/san-$tool-$variant.log | tail -1)
    note "sanitize $tool $variant rc=$rc ${errs}"
    echo "$tool $variant N=8 K=3..5 M=4096 rc=$rc: ${errs}" >>$OUT/sanitize.txt
  done
done
