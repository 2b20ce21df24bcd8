# tests/device.sh stage test (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
(cd $BUILD && timeout $(cap ${CTEST_BUDGET:-400}) ctest -j8 --output-on-failure --timeout 300 >$OUT/raw/ctest.log 2>&1); rc=$?
tail -4 $OUT/raw/ctest.log; grep -E "Failed|\*\*\*" $OUT/raw/ctest.log | head -20
cp $OUT/raw/ctest.log $OUT/ctest.txt
note "ctest rc=$rc: $(grep -E 'tests passed|tests failed' $OUT/raw/ctest.log | tail -1)"
