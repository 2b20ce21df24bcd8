# tests/device.sh stage gpu-tests (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Only the tests that need the GPU (fast; ctest runs everything).
timeout $(cap ${CTEST_BUDGET:-300}) $BUILD/mkbench_tests --gtest_filter="${GPU_TEST_FILTER:-Registered/*:GemmVariantsOnDevice*:OutOfMemory*}" \
  --gtest_repeat=${GPU_TEST_REPEAT:-1} >$OUT/raw/gpu-tests.log 2>&1; rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) " $OUT/raw/gpu-tests.log | head -20
cp $OUT/raw/gpu-tests.log $OUT/gpu-tests.txt
note "gpu tests rc=$rc: $(grep -E '^\[  PASSED|tests ran' $OUT/raw/gpu-tests.log | tr '\n' ' ')"
