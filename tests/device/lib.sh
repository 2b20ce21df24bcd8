# Helpers every stage of tests/device.sh may use (sourced by tests/device.sh before the stages; not
# a stage itself). The dispatcher also gives the stages $BUILD, $MK, $OUT, $stage, DEADLINE and
# note; a stage that must stop the stages after it sets stop_stages=1.

# Seconds for a stage's timeout: the wanted value, or what is left before DEADLINE. Values
# with a unit (10m) pass through uncapped, with a warning, rather than breaking the stage.
cap() {
  if [[ ! $1 =~ ^[0-9]+$ ]]; then echo "cap: '$1' is not whole seconds; not capped" >&2; echo "$1"; return; fi
  local left=$((DEADLINE - SECONDS)); ((left < 1)) && left=1; echo $(($1 < left ? $1 : left))
}
# The last row of a results CSV as "median min IQR verify" (Params is a quoted field with commas).
csv_row() {
  python3 -c 'import csv,sys; r=list(csv.reader(open(sys.argv[1])))[-1]; print("median", r[5], "min", r[6], "IQR", r[7], "verify", r[-1])' "$1" 2>/dev/null
}
# The row of a one-row results JSON as "median ms, verify passed" (multigpu stages).
csv_row_json() {
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rows"][0]; print("median", r["summary"]["median_ms"], "verify", (r.get("verify") or {}).get("passed"))' "$1" 2>/dev/null
}
# `need VAR... || return`: a stage that needs variables notes which is missing and stops.
need() { local name; for name; do [[ -n ${!name:-} ]] || { note "skipped $stage: set $name"; return 1; }; done; }
# The stages named after a suite (table1.sh, table2.sh, table3.sh, kernels.sh, blobs.sh, smoke.sh):
# `mkbench --suite $stage` with the tuned config.
suite_stage() {
  timeout $(cap ${SUITE_TIMEOUT:-590}) $MK --suite $stage --out $OUT/$stage.json 2>$OUT/raw/$stage.log | tee $OUT/$stage.txt | tail -25
  note "suite $stage rc=${PIPESTATUS[0]}"
}
