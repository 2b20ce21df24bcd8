# tests/device.sh stage perf (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 4's five cases, every GPU variant in one results file per case, all verified.
gpu_variants=${PERF_VARIANTS:-$($MK list --names-only --gpu-only | paste -sd,)}
IFS=';' read -ra cases <<<"${PERF_CASES:-8 3..7 32M;4 3..5 32M;16 3..7 32M;32 1024 2M;8 16 8M}"
for case in "${cases[@]}"; do
  set -- $case
  timeout $(cap 200) $MK run --variant $gpu_variants --dims $1 --k $2 --points $3 --iters 20 --verify \
    --out $OUT/perf-N$1-K$2-M$3.json --format csv >$OUT/raw/perf-N$1-K$2-M$3.csv 2>>$OUT/raw/perf.log
  echo "case N=$1 K=$2 M=$3 rc=$?"
  [[ -s $OUT/perf-N$1-K$2-M$3.json ]] && python3 -c "import json,sys; [print(r[\"variant\"], r[\"status\"], round(r[\"summary\"][\"median_ms\"],4) if r.get(\"summary\") else \"-\", (r.get(\"verify\") or {}).get(\"passed\")) for r in json.load(open(sys.argv[1]))[\"rows\"]]" $OUT/perf-N$1-K$2-M$3.json
done
note "perf done"
