# tests/device.sh stage iteration-breakdown (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Where an iteration's time goes, kernel by kernel: ncu's gpu__time_duration of every launch
# (one replay pass each, --clock-control none) for BREAKDOWN_VARIANT (default auto) on
# BREAKDOWN_CASES (default 768/1000/1M), tabled by scripts/kernel-times.py: one column an
# iteration, the first (from the run's initial centroids) included.
IFS=';' read -ra cases <<<"${BREAKDOWN_CASES:-768 1000 1M}"
variant=${BREAKDOWN_VARIANT:-auto}
for case in "${cases[@]}"; do
  set -- $case
  if (($# < 3)); then note "iteration-breakdown: case '$case' needs N K M"; continue; fi
  tag=$variant-N$1-K$2-M$3
  timeout $(cap 120) ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    $MK run --variant $variant --dims $1 --k $2 --points $3 --iters 2 --warmup 1 --no-peak-measure \
    ${BREAKDOWN_ARGS:-} >$OUT/raw/ncu-times-$tag.csv 2>$OUT/raw/ncu-times-$tag.log
  rc=$?
  python3 scripts/kernel-times.py $OUT/raw/ncu-times-$tag.csv >$OUT/iteration-breakdown-$tag.txt 2>&1
  note "iteration-breakdown $tag: ncu rc=$rc, $(tail -1 $OUT/iteration-breakdown-$tag.txt)"
done
