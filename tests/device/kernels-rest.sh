# tests/device.sh stage kernels-rest (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# The part of the kernels suite earlier calls could not fit: KERNELS_REST names a suite
# file holding only those cases (default: the N=128, M=8M rows, written here). Merge the
# parts into the standing with scripts/merge-results.py kernels.json PART.json...
rest=${KERNELS_REST:-$BUILD/kernels-rest-suite.json}
[[ -n ${KERNELS_REST:-} ]] || python3 - $rest <<'PY'
import json, sys
json.dump({"name": "kernels", "description": "the kernels suite's N=128, M=8M rows", "dataset": "uniform", "seed": 42,
           "iters": 5, "warmup": 1, "verify": False,
           "cases": [{"dims": [128], "k": ["16", "64", "256", "1024", "4096"], "points": ["8M"], "variants": ["all-gpu"]}],
           "cpu_fallback": {"points": ["8K"], "variants": ["cpu-openmp"]}, "report": {"kind": "generic"}}, open(sys.argv[1], "w"), indent=2)
PY
timeout $(cap ${SUITE_TIMEOUT:-590}) $MK --suite $rest --out $OUT/kernels-rest.json 2>$OUT/raw/kernels-rest.log | tail -5
note "suite $(basename $rest) rc=${PIPESTATUS[0]} rows: $(grep -c '"variant"' $OUT/kernels-rest.json)"
