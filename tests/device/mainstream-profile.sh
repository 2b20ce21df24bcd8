# tests/device.sh stage mainstream-profile (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# ncu on gemm-window's kernel (PROFILE_CASES, default 128/1024/2M): DRAM %, tensor pipe %,
# issue slots %, occupancy and the top warp stalls.
IFS=';' read -ra cases <<<"${PROFILE_CASES:-128 1024 2M}"
for case in "${cases[@]}"; do
  set -- $case
  tag=gemm-window-N$1-K$2-M$3
  timeout $(cap 300) ncu --clock-control none --kernel-name regex:gemm_window_kernel --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
    --section Occupancy --section MemoryWorkloadAnalysis --section LaunchStats \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__issue_active.avg.pct_of_peak_sustained_active \
    -f -o $OUT/raw/ncu-$tag $MK run --variant gemm-window --dims $1 --k $2 --points $3 --iters 3 --warmup 1 \
    ${PROFILE_ARGS:-} >/dev/null 2>$OUT/raw/ncu-$tag.log
  ncu -i $OUT/raw/ncu-$tag.ncu-rep --print-details all >$OUT/raw/ncu-$tag.txt 2>&1
  rm -f $OUT/raw/ncu-$tag.ncu-rep
  grep -E " Duration|DRAM Throughput|sm__pipe_tensor_op_hmma|sm__inst_executed_pipe_alu|sm__issue_active|dram__throughput|Issue Slots Busy|Achieved Occupancy|Registers Per|Stall [A-Z][a-z]+ " \
    $OUT/raw/ncu-$tag.txt | head -24 | tee $OUT/mainstream-profile-$tag.txt
  note "mainstream-profile $tag done"
done
