# tests/device.sh stage mainstream-limiters (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 32's acceptance for a goal not met: the row's time and its limiter. ncu on every launch
# of LIMITER_VARIANT (default auto) for each of LIMITER_CASES (default: every row of the issue; a
# fourth field is a batch), one replay of each launch for its time, the % of peak of DRAM, L2,
# L1, the tensor pipe and the issue slots, and the warp stall ratios; scripts/kernel-times.py
# tables the last iteration kernel by kernel (--iterations 3: the warm-up and two timed ones,
# whatever each launches), the busiest unit and the top stall.
IFS=';' read -ra cases <<<"${LIMITER_CASES:-768 1000 1M;256 4096 1M;128 1024 2M;64 256 4M;32 64 16M;128 100 1M;8 3..12 32M;128 1024 65536 32}"
variant=${LIMITER_VARIANT:-auto}
metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,l1tex__throughput.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
metrics+=,sm__issue_active.avg.pct_of_peak_sustained_active,'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
for case in "${cases[@]}"; do
  set -- $case
  if (($# < 3)); then note "mainstream-limiters: case '$case' needs N K M [B]"; continue; fi
  tag=$variant-N$1-K$2-M$3
  batch=()
  if [[ -n ${4:-} ]]; then tag+=-B$4; batch=(--batch "$4"); fi
  # A batch profiles B times the launches: 32 problems outran 150 s at 397ceb9 (H200,
  # mainstream-limiters.txt) and finished within a 320 s limit.
  timeout $(cap ${LIMITER_TIMEOUT:-$((${4:-1} > 1 ? 320 : 150))}) ncu --clock-control none --metrics "$metrics" --csv --print-units base \
    $MK run --variant $variant --dims $1 --k $2 --points $3 "${batch[@]}" --iters 2 --warmup 1 --no-peak-measure \
    ${LIMITER_ARGS:-} >$OUT/raw/ncu-limiters-$tag.csv 2>$OUT/raw/ncu-limiters-$tag.log
  rc=$?
  { echo "$variant N=$1 K=$2 M=$3${4:+ B=$4}: ncu rc=$rc"; python3 scripts/kernel-times.py --iterations 3 $OUT/raw/ncu-limiters-$tag.csv 2>&1; echo; } \
    >>$OUT/mainstream-limiters.txt
  note "mainstream-limiters $tag: ncu rc=$rc"
done
