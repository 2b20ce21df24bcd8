# tests/device.sh stage ooc-large-file (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 34's file truly larger than one GPU: a C-order .npy of N=8 float32 rows, LARGE_FACTOR
# (1.15) times GPU 0's total memory, written by numpy on all cores into LARGE_NPY's folder (the
# 2- and 4-GPU kinds have the disk and RAM: the file must also stay in the page cache), then
#  1. `mkbench run` on one GPU, whose memory plan must go out of core on its own (no
#     --chunk-points): chunks staged from the mapping, the row's share of the pinned H2D
#     bandwidth (goal >= 85 %), the load phase ("ready in");
#  2. where there are 2 GPUs or more, the same file sharded over them (`--device all`), each
#     GPU holding its share in core.
# Refuses (a note, nothing run) where the disk or the RAM cannot hold the file with a margin.
LARGE_NPY=${LARGE_NPY:-/tmp/mkbench-large.npy}
gpu_bytes=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 2>/dev/null | awk '{print $1 * 1048576}')
if [[ -z $gpu_bytes ]]; then note "skipped ooc-large-file: no GPU (nvidia-smi)"; return; fi
points=$(python3 -c "import sys; print(int(float(sys.argv[1]) * ${LARGE_FACTOR:-1.15} / 32) // 4096 * 4096)" $gpu_bytes)
file_bytes=$((points * 32 + 128))
disk_free=$(df -B1 --output=avail "$(dirname $LARGE_NPY)" | tail -1)
ram_total=$(awk '/MemTotal/ {print $2 * 1024}' /proc/meminfo)
echo "GPU 0 holds $gpu_bytes bytes; the file: $points x 8 float32, $file_bytes bytes; disk free $disk_free, RAM $ram_total"
if ((file_bytes + (8 << 30) > disk_free || file_bytes + (32 << 30) > ram_total)); then
  note "skipped ooc-large-file: $file_bytes bytes do not fit the disk ($disk_free free) and the page cache ($ram_total RAM) with a margin: use a 2- or 4-GPU kind"
  return
fi
write_start=$SECONDS
timeout $(cap 300) python3 - "$LARGE_NPY" "$points" <<'PY'
import multiprocessing as mp, numpy as np, sys
path, m = sys.argv[1], int(sys.argv[2])
out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(m, 8))
del out
step = 1 << 24  # rows a piece: 512 MiB
def fill(first):
    a = np.load(path, mmap_mode="r+")
    rows = min(step, m - first)
    a[first:first + rows] = np.random.default_rng(first).random((rows, 8), dtype=np.float32)
    a.flush()
with mp.Pool() as pool:
    pool.map(fill, range(0, m, step))
PY
rc=$?
note "ooc-large-file: wrote $file_bytes bytes in $((SECONDS - write_start)) s rc=$rc"
if ((rc != 0)); then rm -f $LARGE_NPY; return; fi
share() {  # the row's transfer and share of the pinned H2D roof, or its status
  python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["rows"][0]
if r["status"] != "ok": print(r["status"], r.get("reason", "")); sys.exit()
ms = r["summary"]["median_ms"]; x = r.get("out_of_core")
if not x: print("in core, %.1f ms/iter" % ms); sys.exit()
gbs = x["bytes_per_iteration"] / ms / 1e6
line = "%d chunks of %d (%s, from %s), %.1f ms/iter, %.1f GB/s" % (x["chunks"], x["chunk_points"], x["transfer"],
                                                                 x["source"], ms, gbs)
if "h2d_gb_per_s" in x: line += " = %.1f %% of pinned H2D %.1f GB/s" % (100 * gbs / x["h2d_gb_per_s"], x["h2d_gb_per_s"])
print(line)' "$1" 2>&1 | tail -1
}
timeout $(cap 300) $MK run --variant registers-multik --dataset npy:$LARGE_NPY --k 3..7 --no-tuned --iters 5 --warmup 1 \
  --out $OUT/ooc-large-file.json >$OUT/raw/ooc-large-file.txt 2>$OUT/raw/ooc-large-file.log
rc=$?; ready=$(grep -o 'ready in [0-9.]* s' $OUT/raw/ooc-large-file.log)
echo "one GPU, out of core on its own: rc=$rc, $ready, $(share $OUT/ooc-large-file.json)" | tee $OUT/ooc-large-file.txt
note "ooc-large-file one GPU rc=$rc: $(tail -1 $OUT/ooc-large-file.txt)"
# The shards copy their rows out of the mapping: the host then holds the file twice (page cache and copy).
if (( $(nvidia-smi -L | wc -l) >= 2 && 2 * file_bytes + (32 << 30) <= ram_total )); then
  timeout $(cap 300) $MK run --variant ${LARGE_SHARDED_VARIANT:-tensor-multik} --dataset npy:$LARGE_NPY --k 3..7 \
    --iters 5 --warmup 1 --device all --out $OUT/ooc-large-file-sharded.json >$OUT/raw/ooc-large-file-sharded.txt \
    2>$OUT/raw/ooc-large-file-sharded.log
  rc=$?
  echo "every GPU (--device all), sharded: rc=$rc, $(share $OUT/ooc-large-file-sharded.json)" | tee -a $OUT/ooc-large-file.txt
  note "ooc-large-file sharded rc=$rc: $(tail -1 $OUT/ooc-large-file.txt)"
fi
rm -f $LARGE_NPY
