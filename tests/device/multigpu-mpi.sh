# tests/device.sh stage multigpu-mpi (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# mpirun -np 2 (one GPU a rank, NCCL id over MPI) against one process driving both GPUs;
# goal: within 5 %. MGPU_MPI_CASE defaults to the shape.
if ! command -v mpirun >/dev/null; then note "skipped multigpu-mpi: no mpirun (carry OpenMPI's .deb files, stage mpi-setup)"; return; fi
if ! grep -q "MPI built in" $OUT/raw/cmake.log 2>/dev/null && ! grep -q "MPI built in" $BUILD/CMakeFiles/CMakeOutput.log 2>/dev/null; then
  note "multigpu-mpi: this build may lack MPI (no 'MPI built in' in raw/cmake.log); mkbench refuses mpirun then"
fi
set -- ${MGPU_MPI_CASE:-8 3..7 256M}
common=(run --variant ${MGPU_VARIANT:-tensor-multik} --dims $1 --k $2 --points $3 --iters ${MGPU_ITERS:-20} --no-peak-measure)
timeout $(cap 200) $MK "${common[@]}" --device 0,1 --out $OUT/multigpu-one-process.json >$OUT/raw/multigpu-one.txt 2>&1
rc1=$?
timeout $(cap 240) mpirun -np 2 --allow-run-as-root --oversubscribe -x NCCL_NVLS_ENABLE=0 -x LD_LIBRARY_PATH \
  $MK "${common[@]}" --device all --out $OUT/multigpu-mpirun.json >$OUT/raw/multigpu-mpi.txt 2>&1
rc2=$?; ((rc1 && rc2)) || tail -3 $OUT/raw/multigpu-mpi.txt
python3 tests/multigpu_table.py $OUT/multigpu-one-process.json $OUT/multigpu-mpirun.json --within 5 | tee $OUT/multigpu-mpi.txt
note "multigpu-mpi rc=$rc1/$rc2 table=${PIPESTATUS[0]}: $(tail -1 $OUT/multigpu-mpi.txt)"
