# tests/device.sh stage multigpu-verify (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# ---------------------------------------------------------------- several GPUs (issue 35)
# Run on a 2- or 4-GPU kind (nvidia-h100-x2 / -x4), after build (or unpack):
#   tests/device.sh build multigpu-verify multigpu [mpi-setup build multigpu-mpi]
# docs/multi-gpu.md says what each prints and what the goals are.
# The multi-GPU tests (2 GPUs, and 4 where present, give one GPU's labels and centroids;
# every GPU variant passes the reference over 2 GPUs; `fit --device 0,1` equals `--device 0`), then one verified CLI row over all GPUs.
timeout $(cap 240) $BUILD/mkbench_tests --gtest_filter='ShardedGpu.*:ShardedRun.*:ShardedCli.*:DeviceOption.*:FitSharded.*:FitShardedGpu.*' \
  >$OUT/raw/multigpu-tests.log 2>&1; rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[       OK \] (Fit)?Sharded|needs [0-9] CUDA" $OUT/raw/multigpu-tests.log | head -20
cp $OUT/raw/multigpu-tests.log $OUT/multigpu-tests.txt
note "multigpu tests rc=$rc: $(grep -E '^\[  PASSED|^\[  FAILED|^\[  SKIPPED' $OUT/raw/multigpu-tests.log | tr '\n' ' ')"
timeout $(cap 180) $MK run --variant ${MGPU_VARIANT:-tensor-multik} --dims 8 --k 3..7 --points 8000001 --iters 5 \
  --verify --device all --out $OUT/multigpu-verify.json >$OUT/raw/multigpu-verify.txt 2>&1; rc=$?
tail -4 $OUT/raw/multigpu-verify.txt
note "multigpu --device all --verify rc=$rc $(csv_row_json $OUT/multigpu-verify.json)"
