#!/usr/bin/env python3
"""Flash-KMeans (Triton; TF32/FP16 distances, labels not FP32-faithful) on the shapes of issue
32, for a same-machine comparison with mkbench's rows: one Lloyd iteration (assignment and
sorted centroid update, as its batch_kmeans_Euclid loop runs it) on uniform FP32 data, timed
with CUDA events, median of --iters after --warmup.

The source is not part of mkbench: put a checkout in third_party/flash-kmeans (git-ignored),
e.g. `git clone <flash-kmeans> third_party/flash-kmeans`, on a machine with torch and triton.
Without it, or without a GPU, the script says so and exits 0 (nothing to compare).

  scripts/peer-flash-kmeans.py [--cases "N K M [B];..."] [--out FILE.json]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CASES = "128 1024 2M;64 256 4M;32 64 16M;128 100 1M;256 4096 1M;768 1000 1M;128 1024 65536 32"


def count(text):
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * scale[text[-1]]) if text[-1] in scale else int(float(text))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=DEFAULT_CASES, help='"N K M [B];..." (B: batch of independent problems)')
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--source", default=os.path.join(ROOT, "third_party", "flash-kmeans"))
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.source, "flash_kmeans")):
        print(f"peer-flash-kmeans: skipped: no checkout at {args.source}")
        return 0
    sys.path.insert(0, args.source)
    try:
        import torch
        from flash_kmeans.kmeans_triton_impl import _euclid_iter
    except Exception as error:  # torch, triton or the package missing
        print(f"peer-flash-kmeans: skipped: cannot import Flash-KMeans ({error})")
        return 0
    if not torch.cuda.is_available():
        print("peer-flash-kmeans: skipped: no CUDA GPU")
        return 0
    rows = []
    print(f"{'N':>5} {'K':>5} {'M':>9} {'B':>3}  median ms  min ms")
    for case in filter(None, (c.strip() for c in args.cases.split(";"))):
        fields = case.split()
        if ".." in fields[1]:  # Flash-KMeans solves one K per call: a K range has no peer row
            print(f"{fields[0]:>5} {fields[1]:>5} {fields[2]:>9}      skipped: a K range (Flash-KMeans runs one K)")
            continue
        n, k, m = int(fields[0]), int(fields[1]), count(fields[2])
        b = int(fields[3]) if len(fields) > 3 else 1
        generator = torch.Generator(device="cuda").manual_seed(42)
        x = torch.rand((b, m, n), device="cuda", dtype=torch.float32, generator=generator)
        x_sq = (x * x).sum(dim=-1)
        centroids = x[:, :k, :].clone()
        times = []
        for i in range(args.warmup + args.iters):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            new_centroids, _, _ = _euclid_iter(x, x_sq, centroids)
            stop.record()
            torch.cuda.synchronize()
            if i >= args.warmup:
                times.append(start.elapsed_time(stop))
            centroids = new_centroids
        row = {"n": n, "k": k, "m": m, "batch": b, "median_ms": statistics.median(times), "min_ms": min(times),
               "samples_ms": times}
        rows.append(row)
        print(f"{n:>5} {k:>5} {m:>9} {b:>3}  {row['median_ms']:9.3f}  {row['min_ms']:6.3f}")
        del x, x_sq, centroids
        torch.cuda.empty_cache()
    if args.out:
        document = {"tool": "flash-kmeans", "device": torch.cuda.get_device_name(), "input": "float32 uniform [0,1)",
                    "timed": "one _euclid_iter (assign + sorted update), CUDA events", "rows": rows}
        folder = os.path.dirname(os.path.abspath(args.out))
        with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as tmp:
            json.dump(document, tmp, indent=1)
        os.replace(tmp.name, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
