# tests/device.sh stage sanitize-generated (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# The device generator of out-of-core chunks (variants/chunked/generated_chunk.cu) under
# compute-sanitizer: `mkbench run` with chunks generated on the device (uniform, with zeros, chunks
# that do not divide M), then its tests (GeneratedChunkOnDevice, the generated OutOfCoreGpu case).
# uniform:zeros=0.2: a kernel of its own makes each chunk; uniform: registers-multik's kernel makes
# its rows where it reads them (GENERATED), with the MMA accumulation's per-warp rows in shared memory.
for tool in memcheck racecheck synccheck initcheck; do
  for spec in "uniform:zeros=0.2 8" "uniform 8" "uniform 5"; do
    read -r dataset dims <<<"$spec"
    log=$OUT/raw/san-generated-$tool-${dataset//[:=.]/}-n$dims.log
    timeout $(cap 240) compute-sanitizer --tool $tool --error-exitcode 9 $MK run --variant registers-multik \
      --dataset $dataset --dims $dims --points 100003 --k 3..5 --chunk-points 30001 --iters 2 --warmup 1 \
      --no-tuned --no-peak-measure --out $log.json >$log 2>&1
    rc=$?; errs=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $log | tail -1)
    transfer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rows"][0]["out_of_core"]["transfer"])' $log.json 2>/dev/null)
    note "sanitize $tool run $dataset N=$dims chunks ($transfer) rc=$rc ${errs}"
    echo "$tool run registers-multik $dataset N=$dims K=3..5 M=100003 chunks 30001 ($transfer) rc=$rc: ${errs}" \
      >>$OUT/sanitize-generated.txt
  done
done
log=$OUT/raw/san-generated-tests.log
timeout $(cap 300) compute-sanitizer --tool memcheck --error-exitcode 9 $BUILD/mkbench_tests \
  --gtest_filter='GeneratedChunkOnDevice*:OutOfCoreGpu.AUniform*' >$log 2>&1
rc=$?; errs=$(grep -E "ERROR SUMMARY" $log | tail -1)
note "sanitize memcheck generated-chunk tests rc=$rc ${errs} $(grep -E '^\[  (PASSED|FAILED) ' $log | tr '\n' ' ')"
echo "memcheck mkbench_tests GeneratedChunkOnDevice*:OutOfCoreGpu.AUniform* rc=$rc: ${errs}" >>$OUT/sanitize-generated.txt
