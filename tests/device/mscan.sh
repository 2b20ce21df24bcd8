# tests/device.sh stage mscan (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Time per iteration against M for one variant and shape (MSCAN_VARIANT, MSCAN_DIMS,
# MSCAN_K, MSCAN_POINTS): the intercept is the per-iteration cost that does not scale
# with the data (launch, prologue, epilogue).
for points in ${MSCAN_POINTS:-1M 2M 4M 8M 16M}; do
  timeout $(cap 60) $MK run --variant ${MSCAN_VARIANT:-tensor-multik} --dims ${MSCAN_DIMS:-8} --k ${MSCAN_K:-16} \
    --points $points --iters 30 ${MSCAN_ARGS:-} --format csv --out $OUT/raw/mscan-$points.json \
    >$OUT/raw/mscan-$points.csv 2>>$OUT/raw/mscan.log
  printf 'mscan %s N=%s K=%s M=%s rc=%s %s\n' ${MSCAN_VARIANT:-tensor-multik} ${MSCAN_DIMS:-8} ${MSCAN_K:-16} $points $? \
    "$(csv_row $OUT/raw/mscan-$points.csv)" | tee -a $OUT/mscan.txt
done
note "mscan done"
