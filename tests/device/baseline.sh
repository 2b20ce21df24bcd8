# tests/device.sh stage baseline (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# A fresh perf-gate baseline of each suite in BASELINE_SUITES (default table1) on this GPU:
# `mkbench baseline update` runs the suite as `mkbench --suite S` and stores the checked file
# under $OUT/baselines/<device-slug>/<suite>.json (also copied to $OUT/baseline-<slug>-<suite>.json);
# commit it as reports/baselines/<device-slug>/<suite>.json. The writer refuses a build that
# does not know its commit: on a copied tree, prefix the call with MKBENCH_GIT_SHA=<sha>.
for suite in ${BASELINE_SUITES:-table1}; do
  timeout $(cap ${SUITE_TIMEOUT:-590}) $MK baseline update --suite $suite --dir $OUT/baselines \
    >$OUT/raw/baseline-$suite.txt 2>$OUT/raw/baseline-$suite.log
  rc=$?; tail -3 $OUT/raw/baseline-$suite.log; stored=$(tail -1 $OUT/raw/baseline-$suite.txt)
  [[ $rc == 0 && -f $stored ]] && cp "$stored" "$OUT/baseline-$(basename "$(dirname "$stored")")-$suite.json"
  note "baseline $suite rc=$rc: ${stored:-nothing stored}"
done
