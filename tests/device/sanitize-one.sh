# tests/device.sh stage sanitize-one (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# One variant on a shape it implements: SANITIZE_VARIANT, SANITIZE_DIMS (SANITIZE_K, SANITIZE_POINTS).
need SANITIZE_VARIANT || return
for tool in memcheck racecheck; do
  timeout $(cap 300) compute-sanitizer --tool $tool --error-exitcode 9 $MK run --variant ${SANITIZE_VARIANT} --dims ${SANITIZE_DIMS:-32} \
    --points ${SANITIZE_POINTS:-4096} --k ${SANITIZE_K:-3..5} --iters 2 --warmup 1 --verify ${SANITIZE_ARGS:-} \
    >$OUT/raw/san-$tool-${SANITIZE_VARIANT}.log 2>&1
  rc=$?
  note "sanitize $tool ${SANITIZE_VARIANT} N=${SANITIZE_DIMS:-32} K=${SANITIZE_K:-3..5} ${SANITIZE_ARGS:-} rc=$rc $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/raw/san-$tool-${SANITIZE_VARIANT}.log | tail -1)"
  echo "$tool ${SANITIZE_VARIANT} N=${SANITIZE_DIMS:-32} K=${SANITIZE_K:-3..5} M=${SANITIZE_POINTS:-4096} ${SANITIZE_ARGS:-} rc=$rc: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/raw/san-$tool-${SANITIZE_VARIANT}.log | tail -1)" \
    >>$OUT/sanitize-${SANITIZE_VARIANT}.txt
done
