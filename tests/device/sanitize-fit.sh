# tests/device.sh stage sanitize-fit (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# fit's own kernels (apps/fit/metric_passes_gpu.cu: the Davies-Bouldin distance pass in its
# thread-per-point (N=5) and warp-per-point (N=40) forms, the pairwise distances and the
# silhouette rows over a sample smaller than M) under compute-sanitizer, through `mkbench fit`
# on naive-atomics (the variant's own kernels are the sanitize stage's); then tensor-multik's
# split step inside a fit (memcheck); then the FitMetricPassesOnGpu tests under memcheck.
for tool in memcheck racecheck synccheck initcheck; do
  for dims in 5 40; do
    log=$OUT/raw/san-fit-$tool-n$dims.log
    timeout $(cap 240) compute-sanitizer --tool $tool --error-exitcode 9 $MK fit --dataset blobs:centers=4 \
      --dims $dims --points 3000 --k 2..6 --variant naive-atomics --max-iter 15 --silhouette-sample 1000 \
      --quiet >$log 2>&1
    rc=$?; errs=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $log | tail -1)
    note "sanitize $tool fit naive-atomics N=$dims K=2..6 M=3000 rc=$rc ${errs}"
    echo "$tool fit naive-atomics N=$dims K=2..6 M=3000 rc=$rc: ${errs}" >>$OUT/sanitize-fit.txt
  done
done
log=$OUT/raw/san-fit-memcheck-tensor-multik.log
timeout $(cap 240) compute-sanitizer --tool memcheck --error-exitcode 9 $MK fit --dataset blobs:centers=5 \
  --dims 8 --points 5000 --k 3..7 --variant tensor-multik --max-iter 15 --silhouette-sample 1000 --quiet >$log 2>&1
rc=$?; errs=$(grep -E "ERROR SUMMARY" $log | tail -1)
note "sanitize memcheck fit tensor-multik N=8 K=3..7 M=5000 rc=$rc ${errs}"
echo "memcheck fit tensor-multik N=8 K=3..7 M=5000 rc=$rc: ${errs}" >>$OUT/sanitize-fit.txt
timeout $(cap 300) compute-sanitizer --tool memcheck --error-exitcode 9 $BUILD/mkbench_tests \
  --gtest_filter='*/FitMetricPassesOnGpu.*' >$OUT/raw/san-fit-tests.log 2>&1
rc=$?; errs=$(grep -E "ERROR SUMMARY" $OUT/raw/san-fit-tests.log | tail -1)
note "sanitize memcheck FitMetricPassesOnGpu tests rc=$rc ${errs} $(grep -E '^\[  (PASSED|FAILED) ' $OUT/raw/san-fit-tests.log | tr '\n' ' ')"
echo "memcheck FitMetricPassesOnGpu tests rc=$rc: ${errs}" >>$OUT/sanitize-fit.txt
