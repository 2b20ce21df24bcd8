# tests/device.sh stage test (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# The whole ctest suite. Two things keep it inside one lease call:
# - OMP_NUM_THREADS=2 a test: at -j16 on 16 cores every OpenMP test otherwise starts 16 threads,
#   and the H200 run of 3751d68 (reports/results/nvidia-h200/ctest.txt) spent 381 s in one
#   k-means++ CPU test that takes seconds alone;
# - the committed ctest.txt of this or any GPU seeds ctest's cost data, so the longest tests start
#   first instead of last (a fresh build directory has no times of its own).
costs=$BUILD/Testing/Temporary/CTestCostData.txt
if [[ ! -s $costs ]]; then
  mkdir -p $(dirname $costs)
  cat reports/results/*/ctest.txt 2>/dev/null | python3 tests/ctest_cost_data.py >$costs
fi
(cd $BUILD && OMP_NUM_THREADS=${CTEST_OMP_THREADS:-2} timeout $(cap ${CTEST_BUDGET:-400}) \
  ctest -j${CTEST_JOBS:-16} --output-on-failure --timeout 300 >$OUT/raw/ctest.log 2>&1); rc=$?
tail -4 $OUT/raw/ctest.log; grep -E "Failed|\*\*\*" $OUT/raw/ctest.log | head -20
cp $OUT/raw/ctest.log $OUT/ctest.txt
note "ctest rc=$rc: $(grep -E 'tests passed|tests failed' $OUT/raw/ctest.log | tail -1)"
