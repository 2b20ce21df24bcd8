# tests/device.sh stage sanitize-generated (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# The device generator of out-of-core chunks (variants/chunked/generated_chunk.cu) under
# compute-sanitizer: `mkbench run` with chunks generated on the device (uniform, with zeros, chunks
# that do not divide M), then its tests (GeneratedChunkOnDevice, the generated OutOfCoreGpu case).
for tool in memcheck racecheck synccheck initcheck; do
  log=$OUT/raw/san-generated-$tool.log
  timeout $(cap 240) compute-sanitizer --tool $tool --error-exitcode 9 $MK run --variant registers-multik \
    --dataset uniform:zeros=0.2 --dims 8 --points 100003 --k 3..5 --chunk-points 30001 --iters 2 --warmup 1 \
    --no-tuned --no-peak-measure >$log 2>&1
  rc=$?; errs=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $log | tail -1)
  note "sanitize $tool run generated chunks rc=$rc ${errs} ($(grep -c 'generated chunk by chunk' $log) notice)"
  echo "$tool run registers-multik uniform:zeros=0.2 N=8 K=3..5 M=100003 chunks 30001 (generated on the device) rc=$rc: ${errs}" \
    >>$OUT/sanitize-generated.txt
done
log=$OUT/raw/san-generated-tests.log
timeout $(cap 300) compute-sanitizer --tool memcheck --error-exitcode 9 $BUILD/mkbench_tests \
  --gtest_filter='GeneratedChunkOnDevice*:OutOfCoreGpu.AUniform*' >$log 2>&1
rc=$?; errs=$(grep -E "ERROR SUMMARY" $log | tail -1)
note "sanitize memcheck generated-chunk tests rc=$rc ${errs} $(grep -E '^\[  (PASSED|FAILED) ' $log | tr '\n' ' ')"
echo "memcheck mkbench_tests GeneratedChunkOnDevice*:OutOfCoreGpu.AUniform* rc=$rc: ${errs}" >>$OUT/sanitize-generated.txt
