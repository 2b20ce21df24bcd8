# tests/device.sh stage sanitize-seeding (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# The k-means++ kernels under compute-sanitizer: float4 and scalar rows (N=8 takes the
# four-block narrow pass), 8- and 16-candidate kernels, a K range over several tiles; then the GPU tests (all D²
# zero, fewer points than a tile, 32 candidates) under memcheck. k-means|| the same way: the
# float4 and any-N update passes, and its GPU tests (fill-in, grown buffers, weighted k-means++).
for tool in memcheck racecheck synccheck initcheck; do
  for args in "--k 40 --dims 8 --points 5000" "--k 20 --dims 5 --points 3000 --candidates 12" \
    "--k 30 --dims 32 --points 4000"; do
    log=$OUT/raw/san-seed-$tool-$(echo $args | tr -d ' -').log
    timeout $(cap 300) compute-sanitizer --tool $tool --error-exitcode 9 $MK seed --init k-means++ $args \
      --runs 1 >$log 2>&1
    note "sanitize $tool seed $args rc=$? $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $log | tail -1)"
  done
  for args in "--k 40 --dims 8 --points 5000" "--k 20 --dims 5 --points 3000"; do
    log=$OUT/raw/san-seedpar-$tool-$(echo $args | tr -d ' -').log
    timeout $(cap 300) compute-sanitizer --tool $tool --error-exitcode 9 $MK seed --init 'k-means||' $args \
      --runs 1 >$log 2>&1
    note "sanitize $tool seed k-means|| $args rc=$? $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $log | tail -1)"
  done
done
timeout $(cap 400) compute-sanitizer --tool memcheck --error-exitcode 9 $BUILD/mkbench_tests \
  --gtest_filter='KmeansppGpu.*:KmeansParallelGpu.*' >$OUT/raw/san-seed-tests.log 2>&1
note "sanitize memcheck KmeansppGpu+KmeansParallelGpu tests rc=$? $(grep -E "ERROR SUMMARY" $OUT/raw/san-seed-tests.log | tail -1) $(grep -E '^\[  (PASSED|FAILED) ' $OUT/raw/san-seed-tests.log | tr '\n' ' ')"
