# tests/device.sh stage quantize (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 33 part 2 (docs/quantize.md): the quantize tests (GPU ones included), then the goal
# case, a 1024x1024 image with K=255 and 100 steps at tol 0 (goal <= 10 ms on an H200,
# without file I/O and seeding; the median of QUANTIZE_REPEATS runs), a 4096x4096 one, and
# cpu-openmp on the goal image. The table: steps, PSNR and the time split from each --json.
py=python3; /usr/bin/python3 -c 'import numpy' 2>/dev/null && py=/usr/bin/python3
MKBENCH_PYTHON=$py timeout $(cap 300) $BUILD/mkbench_tests --gtest_filter='Quantize*' >$OUT/raw/quantize-tests.log 2>&1
note "quantize tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $OUT/raw/quantize-tests.log | tr '\n' ' ')"
grep -E '^K=' $OUT/raw/quantize-tests.log | sed 's/^/== /'
for size in 1024 4096; do
  $py tests/make_quantize_image.py $OUT/raw/quantize-$size.png $size $size
done
# The goal case runs QUANTIZE_REPEATS times (default 5; a run's steps move by a few percent): its
# JSON is the median run's, and quantize.txt ends with every run's time.
repeats=${QUANTIZE_REPEATS:-5}
for run in "1024 auto" "4096 auto" "1024 cpu-openmp"; do
  read -r size variant <<<"$run"
  runs=1; [[ $run == "1024 auto" ]] && runs=$repeats
  for ((r = 1; r <= runs; r++)); do
    timeout $(cap 240) $MK quantize $OUT/raw/quantize-$size.png $OUT/raw/quantize-$size-$variant-out.png --k 255 \
      --max-iter 100 --tol 0 --variant $variant --out-palette $OUT/raw/quantize-$size-$variant-palette.png \
      --json $OUT/raw/quantize-$size-$variant-run$r.json 2>&1 | tail -3
    note "quantize ${size}x$size K=255 $variant run $r rc=${PIPESTATUS[0]}"
  done
  python3 - $OUT/raw/quantize-$size-$variant-run*.json <<'PY' >$OUT/raw/quantize-$size-$variant-median.txt
import json, sys
runs = []
for path in sys.argv[1:]:
    try:
        runs.append((json.load(open(path))["seconds"]["steps"], path))
    except Exception:
        pass
runs.sort()
if runs:
    print(runs[(len(runs) - 1) // 2][1])
    print(" ".join("%.2f" % (s * 1e3) for s, _ in runs))
PY
  median=$(sed -n 1p $OUT/raw/quantize-$size-$variant-median.txt)
  [[ -n $median ]] && cp "$median" $OUT/quantize-$size-$variant.json
done
python3 - $OUT/quantize-*.json <<'PY' | tee $OUT/quantize.txt
import json, sys
print("%-10s %-12s %5s %9s %7s %9s %9s %9s %9s %8s %7s" % ("image", "variant", "steps", "PSNR dB", "load s",
      "seeding s", "prepare s", "steps ms", "labels ms", "ms/step", "write s"))
for path in sys.argv[1:]:
    try:
        d = json.load(open(path))
    except Exception as e:
        print(path, "unreadable:", e); continue
    t = d["seconds"]
    psnr = "inf" if d["psnr_db"] is None else "%.3f" % d["psnr_db"]
    print("%-10s %-12s %5d %9s %7.3f %9.4f %9.4f %9.2f %9.2f %8.4f %7.3f" % ("%dx%d" % (d["width"], d["height"]),
          d["variant"], d["iterations"], psnr, t["load"], t["seeding"], t["prepare"], t["steps"] * 1e3,
          t["labels"] * 1e3, t["steps"] * 1e3 / max(d["iterations"], 1), t["write"]))
PY
runs=$(sed -n 2p $OUT/raw/quantize-1024-auto-median.txt 2>/dev/null)
echo "1024x1024 auto: steps ms of the $repeats runs, sorted: $runs (the row above is the median run)" | tee -a $OUT/quantize.txt
