# tests/device.sh stage fit-iteration (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 31, iteration cost: a fit's step on N=8 K=3..7 M=32M (accumulate, then update with
# per-K freezing and one small read-back) against `run`'s fused iteration, for the variant the
# fit ran and for auto (the issue's 0.49 ms on an H200). --tol 0 from `first` keeps the Ks
# moving; a step's time is the fit's iterations time over its steps (host clock, each step's
# synchronisation included). The labels (640 MB) stay out of $OUT: only fit.json is kept.
rm -rf $BUILD/fit-iteration
timeout $(cap 240) $MK fit --dataset uniform --dims 8 --points 32M --k 3..7 --init first --tol 0 \
  --max-iter ${FIT_STEPS:-100} --quiet --out $BUILD/fit-iteration >$OUT/raw/fit-iteration.txt 2>&1
rc=$?; cp $BUILD/fit-iteration/fit.json $OUT/fit-iteration-fit.json 2>/dev/null
fit_variant=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["variant"]["name"])' \
  $OUT/fit-iteration-fit.json 2>/dev/null)
for v in $fit_variant auto; do
  timeout $(cap 120) $MK run --variant $v --dims 8 --k 3..7 --points 32M --iters 20 \
    --out $OUT/fit-iteration-run-$v.json >/dev/null 2>>$OUT/raw/fit-iteration.txt
done
python3 - $OUT/fit-iteration-fit.json $OUT/fit-iteration-run-$fit_variant.json $OUT/fit-iteration-run-auto.json \
  $OUT/fit-iteration.json <<'PY' | tee $OUT/fit-iteration.txt
import json, sys
fit = json.load(open(sys.argv[1]))
step_ms = 1000 * fit["time_s"]["iterations"] / fit["steps"]
out = {"benchmark": "fit-iteration", "problem": "N=8 K=3..7 M=32M", "device": fit["device"].get("name"),
       "build": fit["build"], "fit": {"variant": fit["variant"]["name"], "steps": fit["steps"],
       "iterations_s": fit["time_s"]["iterations"], "ms_per_step": step_ms}, "run": {}}
for path in sys.argv[2:4]:
    try:
        row = json.load(open(path))["rows"][0]
        out["run"][row["variant"] if "auto" not in path else "auto"] = {
            "ran": row.get("params", {}), "variant": row["variant"], "median_ms": row["summary"]["median_ms"],
            "fit_step_over_run": step_ms / row["summary"]["median_ms"]}
    except Exception as error:
        out["run"][path] = {"error": str(error)}
json.dump(out, open(sys.argv[4], "w"), indent=1)
print(f"fit step {step_ms:.4f} ms ({fit['variant']['name']}, {fit['steps']} steps); " + "; ".join(
    f"run {name} {r['median_ms']:.4f} ms: x{r['fit_step_over_run']:.3f}" for name, r in out["run"].items() if "median_ms" in r))
PY
note "fit-iteration rc=$rc: $(tail -1 $OUT/fit-iteration.txt)"
