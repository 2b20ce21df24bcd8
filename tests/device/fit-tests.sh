# tests/device.sh stage fit-tests (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 31's checks on the GPU: the fit gtests (the metric passes' GPU paths against their CPU
# paths; best_k's recovery of planted K on the variant `fit --variant auto` picks) and
# tests/fit_vs_sklearn.py for every GPU variant (ctest FitVsSklearn.*; skipped without python3-sklearn).
timeout $(cap 400) $BUILD/mkbench_tests --gtest_filter='Fit*:*/FitMetricPassesOnGpu.*:*/FitBestK.*' >$OUT/raw/fit-gtests.log 2>&1; rc=$?
grep -E "^best_k |^\[  (PASSED|FAILED) |^\[  SKIPPED" $OUT/raw/fit-gtests.log | tee $OUT/fit-tests.txt | head -30
(cd $BUILD && timeout $(cap 400) ctest -R FitVsSklearn --output-on-failure >$OUT/raw/fit-sklearn.log 2>&1); rc2=$?
grep -E "fit_vs_sklearn|tests passed|tests failed|FAIL" $OUT/raw/fit-sklearn.log | tee -a $OUT/fit-tests.txt | head -20
note "fit-tests gtest rc=$rc, FitVsSklearn rc=$rc2: $(grep -E 'tests passed|tests failed' $OUT/raw/fit-sklearn.log | tail -1)"
