# tests/device.sh stage sanitize-quantize (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# quantize end to end under compute-sanitizer (k-means++ on the GPU, the step-split
# variant fit's auto picks for N=3, the empty policies), then the GPU tests under memcheck.
py=python3; /usr/bin/python3 -c 'import numpy' 2>/dev/null && py=/usr/bin/python3
$py tests/make_quantize_image.py $OUT/raw/quantize-san.png 200 150 --channels 4
for tool in memcheck racecheck synccheck initcheck; do
  for empty in farthest random; do
    log=$OUT/raw/san-quantize-$tool-$empty.log
    timeout $(cap 300) compute-sanitizer --tool $tool --error-exitcode 9 $MK quantize $OUT/raw/quantize-san.png \
      $OUT/raw/quantize-san-out.png --k 255 --max-iter 5 --empty $empty >$log 2>&1
    note "sanitize $tool quantize K=255 --empty $empty rc=$? $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $log | tail -1)"
  done
done
timeout $(cap 400) compute-sanitizer --tool memcheck --error-exitcode 9 $BUILD/mkbench_tests \
  --gtest_filter='QuantizeGpu.*' >$OUT/raw/san-quantize-tests.log 2>&1
note "sanitize memcheck QuantizeGpu tests rc=$? $(grep -E "ERROR SUMMARY" $OUT/raw/san-quantize-tests.log | tail -1) $(grep -E '^\[  (PASSED|FAILED) ' $OUT/raw/san-quantize-tests.log | tr '\n' ' ')"
