# tests/device.sh stage mainstream-stats (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# How often gemm-window's exact paths run (MKBENCH_GEMM_WINDOW_STATS): the share of
# point-group steps arbitrated exactly, slice scans and exact distances per point.
IFS=';' read -ra cases <<<"${MAINSTREAM_CASES:-128 1024 2M;64 256 4M;32 64 16M;128 100 1M;8 3..12 32M;256 4096 1M;768 1000 1M}"
for case in "${cases[@]}"; do
  set -- $case
  MKBENCH_GEMM_WINDOW_STATS=1 timeout $(cap 120) $MK run --variant gemm-window --dims $1 --k $2 --points $3 --iters 3 \
    --warmup 1 ${MAINSTREAM_ARGS:-} 2>&1 >/dev/null | grep "gemm-window stats" | sed "s/^/N=$1 K=$2 M=$3: /" | tee -a $OUT/mainstream-stats.txt
done
note "mainstream-stats done"
