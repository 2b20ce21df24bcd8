# tests/device.sh stage auto-check (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 32's check of `auto`: every GPU variant and auto on the mainstream suite (the rows a rule
# is fitted on, with the kernels suite) and on the held-out suite (shapes fixed before any fit),
# then scripts/auto-vs-best.py on each and on a kernels.json already in $OUT (stage kernels):
# auto within 10 % of the best variant measured, shape by shape. Writes mainstream-suite.json,
# mainstream-heldout.json and auto-vs-best.txt. A suite that runs out of time keeps the rows it
# finished (suites write their file row by row); run the stage again with `--resume` in
# AUTO_CHECK_ARGS to finish it.
for suite in mainstream mainstream-heldout; do
  out=$OUT/$([[ $suite == mainstream ]] && echo mainstream-suite || echo $suite).json
  timeout $(cap ${AUTO_CHECK_TIMEOUT:-280}) $MK --suite $suite --out $out ${AUTO_CHECK_ARGS:-} \
    >$OUT/raw/$suite.txt 2>$OUT/raw/$suite.log
  note "suite $suite rc=$? $(tail -1 $OUT/raw/$suite.log)"
done
for file in $OUT/kernels.json $OUT/mainstream-suite.json $OUT/mainstream-heldout.json; do
  [[ -f $file ]] || continue
  { echo "== $(basename $file)"; python3 scripts/auto-vs-best.py $file; echo "exit $?"; } >>$OUT/auto-vs-best.txt 2>&1
  note "auto-vs-best $(basename $file): $(grep -E '^[0-9]+ shapes' $OUT/auto-vs-best.txt | tail -1)"
done
