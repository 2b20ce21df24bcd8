# Stage `load` (issue 34 §3, docs/out-of-core.md "Files"): a 1 GiB .npy (32M × 8 float32, written
# by numpy) made ready by `mkbench run`: memory-mapped, hashed (XXH3-128 over 4 MiB blocks),
# checked for NaN/Inf and copied in one pass on all cores. Goal: ≤ 0.5 s on the device's host.
# `run` prints "dataset ... ready in S s" on stderr for a file; that line is the load phase.
# The file is read once before timing (page cache warm, as numpy's own figure is measured: a
# cold read times the disk), then three runs; then the same file streamed out of core on the
# GPU straight from its mapping (chunks staged, no copy of the file on the host).
LOAD_NPY=${LOAD_NPY:-/tmp/mkbench-load-32Mx8.npy}
python3 -c 'import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(1).random((32 << 20, 8), dtype=np.float32))' \
  $LOAD_NPY && cat $LOAD_NPY >/dev/null
numpy_s=$(python3 -c 'import numpy as np, sys, time; t = time.perf_counter(); a = np.load(sys.argv[1]); a.sum(); print("%.3f" % (time.perf_counter() - t))' $LOAD_NPY)
ready=()
for run in 1 2 3; do
  timeout $(cap 120) $MK run --variant cpu-openmp --dataset npy:$LOAD_NPY --k 3 --iters 1 --warmup 0 \
    >$OUT/raw/load-$run.txt 2>$OUT/raw/load-$run.log
  ready+=("$(grep -o 'ready in [0-9.]* s' $OUT/raw/load-$run.log | grep -o '[0-9.]*' || echo "rc=$?")")
done
timeout $(cap 150) $MK run --variant registers-multik --dataset npy:$LOAD_NPY --k 3..7 --chunk-points 8M --no-tuned \
  --iters 5 --warmup 1 --out $OUT/load-ooc-mapped.json >$OUT/raw/load-ooc.txt 2>$OUT/raw/load-ooc.log
ooc_rc=$?
ooc=$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["rows"][0]; x = r["out_of_core"]; ms = r["summary"]["median_ms"]
print("%s %s, %.2f ms/iter, %.1f GB/s of %.1f pinned" % (x["source"], x["transfer"], ms, x["bytes_per_iteration"] / ms / 1e6, x["h2d_gb_per_s"]))' \
  $OUT/load-ooc-mapped.json 2>/dev/null || echo "rc=$ooc_rc")
rm -f $LOAD_NPY
note "load 1 GiB npy ready in ${ready[*]} s (goal <= 0.5; np.load+sum ${numpy_s} s); out of core from the mapping: $ooc"
