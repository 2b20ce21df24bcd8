# tests/device.sh stage auto-check (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 32's check of `auto`, whose choice comes from measurements (docs/tuning.md, "auto's
# measured order"):
#   1. every GPU variant and auto on the mainstream suite (issue 32's rows);
#   2. scripts/fit-auto-table.py fits auto's table from those rows and a kernels.json already in
#      $OUT (stage kernels) into a copy of the device's tuned configuration, $OUT/configs/<slug>.json
#      (promote it to configs/ to make it the device's rule);
#   3. with that configuration (MKBENCH_CONFIG_DIR), auto again on the mainstream suite, then every
#      GPU variant and auto on the held-out suite (shapes fixed before any fit);
#   4. scripts/auto-vs-best.py on each: auto within 10 % of the best variant measured, shape by shape.
# Writes mainstream-suite.json, mainstream-auto.json, mainstream-heldout.json, auto-table.txt,
# configs/<slug>.json and auto-vs-best.txt. A suite that runs out of time keeps the rows it
# finished (suites write their file row by row); run the stage again with `--resume` in
# AUTO_CHECK_ARGS to finish it (a finished suite's rows are then skipped). The table is fitted
# again from what mainstream-suite.json holds then, and auto is measured afresh with it (its
# rows are few), so mainstream-auto.json never mixes two tables; held-out rows measured before a
# refit keep the table they ran with (a --resume without new mainstream rows keeps it the same).
# If the fit fails, the suites that need its table are skipped.
suite_run() {  # suite, output name, extra arguments (AUTO_CHECK_ARGS unless the first is --fresh)
  local suite=$1 name=$2 args=${AUTO_CHECK_ARGS:-}; shift 2
  [[ ${1:-} == --fresh ]] && { args=; shift; }
  timeout $(cap ${AUTO_CHECK_TIMEOUT:-280}) $MK --suite $suite --out $OUT/$name.json $args "$@" \
    >$OUT/raw/$name.txt 2>$OUT/raw/$name.log
  note "suite $suite ($name) rc=$? $(tail -1 $OUT/raw/$name.log)"
}
suite_run mainstream mainstream-suite
slug=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["device"]["slug"])' $OUT/mainstream-suite.json 2>/dev/null)
if [[ -n $slug ]]; then
  mkdir -p $OUT/configs
  [[ -f configs/$slug.json && ! -f $OUT/configs/$slug.json ]] && cp configs/$slug.json $OUT/configs/
  fit_inputs=($OUT/mainstream-suite.json); [[ -f $OUT/kernels.json ]] && fit_inputs+=($OUT/kernels.json)
  python3 scripts/fit-auto-table.py --config $OUT/configs/$slug.json "${fit_inputs[@]}" >$OUT/auto-table.txt 2>&1
  fit_rc=$?
  note "auto table rc=$fit_rc $(tail -1 $OUT/auto-table.txt)"
  if ((fit_rc == 0)); then
    rm -f $OUT/mainstream-auto.json
    MKBENCH_CONFIG_DIR=$OUT/configs suite_run mainstream mainstream-auto --fresh --variants auto
    MKBENCH_CONFIG_DIR=$OUT/configs suite_run mainstream-heldout mainstream-heldout
  else
    note "auto with the table and the held-out suite skipped: no table was fitted"
  fi
else
  note "auto table skipped: mainstream-suite.json names no device"
fi
for file in $OUT/kernels.json $OUT/mainstream-suite.json $OUT/mainstream-heldout.json; do
  [[ -f $file ]] || continue
  { echo "== $(basename $file)"; python3 scripts/auto-vs-best.py $file; echo "exit $?"; } >>$OUT/auto-vs-best.txt 2>&1
  note "auto-vs-best $(basename $file): $(grep -E '^[0-9]+ shapes' $OUT/auto-vs-best.txt | tail -1)"
done
# auto with the fitted table against the variants measured on the same shapes before the fit.
if [[ -f $OUT/mainstream-auto.json && -f $OUT/mainstream-suite.json ]]; then
  python3 - $OUT/mainstream-suite.json $OUT/mainstream-auto.json $OUT/raw/mainstream-refit.json <<'PY'
import json, sys
before, after, out = sys.argv[1:4]
rows = [r for r in json.load(open(before))["rows"] if r.get("variant") != "auto"]
doc = json.load(open(after))
doc["rows"] = rows + [r for r in doc["rows"] if r.get("variant") == "auto"]
json.dump(doc, open(out, "w"))
PY
  { echo "== mainstream-auto.json (auto with the fitted table, the variants of mainstream-suite.json)"
    python3 scripts/auto-vs-best.py $OUT/raw/mainstream-refit.json; echo "exit $?"; } >>$OUT/auto-vs-best.txt 2>&1
  note "auto-vs-best mainstream with the table: $(grep -E '^[0-9]+ shapes' $OUT/auto-vs-best.txt | tail -1)"
fi
