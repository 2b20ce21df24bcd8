# tests/device.sh stage generated (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 34's generated chunks on their own (the `ooc` stage runs them among the host-memory rows):
# the GPU tests of the device generator, compute-sanitizer over it (N=7: every chunk ends in a
# one-entry tail), then N=8 K=3..7 M=${GEN_POINTS:-256M} with every chunk generated on the device
# (by registers-multik's own kernel, where it reads its points), by chunk size, against the same
# problem in core (goal: within 10 %).
timeout $(cap 120) $BUILD/mkbench_tests --gtest_filter='GeneratedChunkOnDevice*:OutOfCoreGpu.AUniform*:GenerateRows*' \
  >$OUT/generated-chunk-tests.txt 2>&1
note "generated tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/generated-chunk-tests.txt | tr '\n' ' ')"
for tool in memcheck racecheck initcheck; do
  timeout $(cap 90) compute-sanitizer --tool $tool --error-exitcode 9 $MK run --variant registers-multik \
    --dataset uniform:zeros=0.2 --dims 7 --points 100003 --k 3..5 --chunk-points 30001 --iters 2 --warmup 1 \
    --no-tuned --no-peak-measure >$OUT/raw/generated-$tool.log 2>&1
  note "generated $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/raw/generated-$tool.log | tail -1)"
done
generated_row() {  # chunk points or "in-core", then the output name
  local extra=(--chunk-points $1 --out-of-core); [[ $1 == in-core ]] && extra=()
  timeout $(cap 90) $MK run --variant registers-multik --dims 8 --points ${GEN_POINTS:-256M} --k 3..7 "${extra[@]}" \
    --no-tuned --iters 10 --warmup 2 --out $OUT/$2 >/dev/null 2>$OUT/raw/$(basename $2).log
}
generated_row in-core incore-generated-registers-multik.json
for chunk in ${GEN_CHUNKS:-4M 32M 64M}; do generated_row $chunk raw/generated-$chunk.json; done
cp $OUT/raw/generated-${GEN_CHUNK:-32M}.json $OUT/ooc-generated.json 2>/dev/null
python3 - "$OUT" ${GEN_CHUNKS:-4M 32M 64M} <<'PY' | tee $OUT/generated.txt
import json, sys
out, chunks = sys.argv[1], sys.argv[2:]
def row(path):
    try: return json.load(open(path))["rows"][0]
    except Exception as e: return {"status": "missing: %s" % e}
inc = row(f"{out}/incore-generated-registers-multik.json")
base = inc["summary"]["median_ms"] if inc.get("status") == "ok" else None
print("registers-multik N=8 K=3..7, chunks generated on the device (%s), against in core (goal x1.10)"
      % row(f"{out}/raw/generated-{chunks[0]}.json").get("out_of_core", {}).get("transfer"))
print(f"{'chunk':>8} {'chunks':>7} {'median ms':>10} {'x in core':>10}")
for c in chunks:
    r = row(f"{out}/raw/generated-{c}.json")
    if r.get("status") != "ok": print(f"{c:>8} {r.get('status')} {r.get('reason', '')}"); continue
    ms = r["summary"]["median_ms"]
    print(f"{c:>8} {r['out_of_core']['chunks']:>7} {ms:10.3f} {ms / base if base else float('nan'):10.3f}")
print(f"{'in core':>8} {'':>7} {base if base else float('nan'):10.3f}")
PY
note "generated: $(grep -E '^ +32M' $OUT/generated.txt)"
