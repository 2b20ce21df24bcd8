#!/usr/bin/env python3
"""Scaling table of sharded rows (tests/device.sh stages multigpu and multigpu-mpi).

usage: multigpu_table.py BASELINE.json OTHER.json... [--goal SHARDS=SPEEDUP ...] [--within PCT]
Each file holds one `mkbench run` row. BASELINE is the one-GPU run (or, for --within, the
one-process run the others must match). Prints one line per file: shards, communicator and
launch, the median iteration, the speedup over BASELINE, the slowest shard's accumulate,
the all-reduce's median and the verdict against the goal for that shard count.
Exits 1 when a goal is missed, 2 when a file cannot be read.
"""
import json
import sys


def row_of(path):
    with open(path) as f:
        rows = json.load(f)["rows"]
    if len(rows) != 1 or rows[0].get("status") != "ok":
        raise ValueError(f"{path}: expected one ok row, got {[r.get('status') for r in rows]}")
    return rows[0]


def main(argv):
    files, goals, within = [], {}, None
    i = 0
    while i < len(argv):
        if argv[i] == "--goal":
            shards, speedup = argv[i + 1].split("=")
            goals[int(shards)] = float(speedup)
            i += 2
        elif argv[i] == "--within":
            within = float(argv[i + 1])
            i += 2
        else:
            files.append(argv[i])
            i += 1
    try:
        rows = [(path, row_of(path)) for path in files]
    except (OSError, ValueError, KeyError) as error:
        print(f"multigpu table: {error}")
        return 2
    base = rows[0][1]["summary"]["median_ms"]
    print(f"{'shards':>6} {'how':<24} {'median ms':>10} {'speedup':>8} {'slowest shard ms':>17} "
          f"{'all-reduce ms':>13}  verdict")
    missed = False
    for path, row in rows:
        parallel = row.get("parallel") or {}
        shards = parallel.get("ranks", 1)
        how = f"{parallel.get('communicator', 'one GPU')}/{parallel.get('launch', '-')}" if parallel else "one-device"
        median = row["summary"]["median_ms"]
        speedup = base / median if median > 0 else 0.0
        slowest = max((s["step_median_ms"] for s in parallel.get("shards", [])), default=median)
        reduce_ms = parallel.get("allreduce_median_ms", 0.0)
        verdict = ""
        if within is not None and path != rows[0][0]:
            off = abs(median / base - 1) * 100
            verdict = f"{off:.1f}% from baseline (goal <= {within:g}%): {'ok' if off <= within else 'MISSED'}"
            missed |= off > within
        elif shards in goals:
            ok = speedup >= goals[shards]
            verdict = f"goal >= {goals[shards]:g}x: {'ok' if ok else 'MISSED'}"
            missed |= not ok
        print(f"{shards:>6} {how:<24} {median:>10.3f} {speedup:>7.2f}x {slowest:>17.3f} {reduce_ms:>13.3f}  {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
