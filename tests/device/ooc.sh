# tests/device.sh stage ooc (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Out-of-core Lloyd (docs/out-of-core.md). 1) The GPU tests: chunked == in core == FP64
# reference with chunk sizes that do not divide M, and the planner's own choice.
timeout $(cap 240) $BUILD/mkbench_tests --gtest_filter='OutOfCore*:MemoryPlanOutOfCore*:MemoryPlanGpu*' \
  >$OUT/ooc-tests.txt 2>&1
rc=$?; tail -3 $OUT/ooc-tests.txt; grep -E "SKIPPED|FAILED" $OUT/ooc-tests.txt | head -10
note "ooc tests rc=$rc"
# 2) --verify of every streaming GPU variant, 7 chunks of 300001 (the last short).
timeout $(cap 150) $MK run --variant naive-atomics,shared-atomics,registers-multik,gemm-cublas --dims 8 \
  --points 2M --k 3..7 --chunk-points 300001 --verify --no-tuned --iters 5 --warmup 1 \
  --out $OUT/ooc-verify.json >$OUT/raw/ooc-verify.txt 2>$OUT/raw/ooc-verify.log
rc=$?; grep "^verify" $OUT/raw/ooc-verify.log
note "ooc verify rc=$rc ($(grep -c ': PASS' $OUT/raw/ooc-verify.log) of 4 PASS)"
# One line per out-of-core row against the same problem in core: its chunks, how they reached
# the GPU, ms an iteration; from host memory its share of the pinned H2D floor (goal >= 85 %),
# generated on the device its ratio to in core (goal <= 1.10).
summarise() {
  python3 - "$1" "$2" <<'PY' | tee -a $OUT/ooc-overlap.txt
import json, sys
def row(path):
    try: return json.load(open(path))["rows"][0]
    except Exception as e: return {"status": "missing: %s" % e}
o, i = row(sys.argv[1]), row(sys.argv[2])
if o.get("status") != "ok" or "out_of_core" not in o:
    print(o.get("variant"), "out of core:", o.get("status"), o.get("reason", "")); sys.exit(0)
x = o["out_of_core"]; ms = o["summary"]["median_ms"]
line = "%s out of core: %d chunks of %d (%s, from %s), %.2f ms/iter" % (
    o["variant"], x["chunks"], x["chunk_points"], x["transfer"], x["source"], ms)
if x["transfer"] != "generated on the device":
    gbs = x["bytes_per_iteration"] / (ms * 1e-3) / 1e9
    line += ", %.1f GB/s = %.1f %% of pinned H2D %.1f GB/s" % (gbs, 100 * gbs / x["h2d_gb_per_s"], x["h2d_gb_per_s"])
if i.get("status") == "ok": line += "; in core %.2f ms/iter (x%.3f)" % (i["summary"]["median_ms"], ms / i["summary"]["median_ms"])
print(line)
PY
}
# 3) Overlap: N=8 K=3..7 M=${OOC_POINTS:-256M} (8 GiB) in chunks of ${OOC_CHUNK:-32M} (1 GiB),
# the points held in host memory (--hold-points), then the same problem in core.
for v in ${OOC_VARIANTS:-registers-multik naive-atomics}; do
  timeout $(cap 150) $MK run --variant $v --dims 8 --points ${OOC_POINTS:-256M} --k 3..7 --hold-points \
    --chunk-points ${OOC_CHUNK:-32M} --no-tuned --iters 10 --warmup 2 --out $OUT/ooc-$v.json \
    >$OUT/raw/ooc-$v.txt 2>$OUT/raw/ooc-$v.log
  note "ooc $v rc=$?"
  timeout $(cap 120) $MK run --variant $v --dims 8 --points ${OOC_POINTS:-256M} --k 3..7 --no-tuned \
    --iters 10 --warmup 2 --out $OUT/incore-$v.json >$OUT/raw/incore-$v.txt 2>$OUT/raw/incore-$v.log
  note "in-core $v rc=$?"
  summarise $OUT/ooc-$v.json $OUT/incore-$v.json
done
# 4) Generated chunks: the same problem, each chunk generated on the device (no host copy of the
# points), against in core: issue 34's goal is a per-point time within 10 % of in-core.
timeout $(cap 150) $MK run --variant registers-multik --dims 8 --points ${OOC_POINTS:-256M} --k 3..7 \
  --chunk-points ${OOC_CHUNK:-32M} --no-tuned --iters 10 --warmup 2 --out $OUT/ooc-generated.json \
  >$OUT/raw/ooc-generated.txt 2>$OUT/raw/ooc-generated.log
note "ooc generated rc=$?"
summarise $OUT/ooc-generated.json $OUT/incore-registers-multik.json
