# tests/device.sh stage matrix (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 3's matrix, or a slice of it (MATRIX_POINTS, MATRIX_DIMS) named MATRIX_TAG; the
# JSON is rewritten after every shape, so a slice stopped by the timeout keeps its cells.
# The whole matrix is verify-matrix.json/.md; a slice verify-matrix-<MATRIX_TAG>.json/.md.
tag=${MATRIX_TAG:-all}; name=verify-matrix${MATRIX_TAG:+-$MATRIX_TAG}
timeout $(cap ${MATRIX_BUDGET:-280}) $MK verify-matrix --variants ${MATRIX_VARIANTS:-all} --points ${MATRIX_POINTS:-1000,1M,8M} --k ${MATRIX_K:-3..7,3..12,16..16,256..256,1024..1024} --dims ${MATRIX_DIMS:-2,4,8,16,32,128} \
  --iterations ${MATRIX_ITERATIONS:-2} --max-reference-work ${MATRIX_MAX_WORK:-4e11} --out $OUT/$name.json \
  >$OUT/$name.md 2>$OUT/raw/$name.log
rc=$?; tail -3 $OUT/$name.md; grep -E "✗" $OUT/raw/$name.log | head -5
note "verify-matrix $tag rc=$rc (124 = stopped by the timeout) $(tail -1 $OUT/$name.md) cells logged: $(grep -cE '  (✓|✗|-)  \(' $OUT/raw/$name.log)"
