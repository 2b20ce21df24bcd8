#!/usr/bin/env python3
"""Issue 32's goal table from one device run (tests/device.sh mainstream): for each row, mkbench's
variants from $OUT/mainstream-N<n>-K<k>-M<m>.json (median of the timed iterations, --verify's
verdict) beside Flash-KMeans from $OUT/peer-flash-kmeans.json (scripts/peer-flash-kmeans.py) and
the issue's goal. A row that did not run says so instead of a number.

  scripts/mainstream-table.py --results OUT [--cases "N K M [B];..."]   (B: a batch, run --batch B)
"""
import argparse
import json
import os
import sys

# Issue 32's goals (ms, H100/H200, one Lloyd iteration), by (N, K, M[, B]) as the cases spell them.
GOALS = {
    ("128", "1024", "2M"): 1.5,
    ("64", "256", "4M"): 0.6,
    ("32", "64", "16M"): 0.9,
    ("128", "100", "1M"): 0.3,
    ("8", "3..12", "32M"): 1.0,
    ("256", "4096", "1M"): 4.0,
    ("768", "1000", "1M"): 3.0,
    ("128", "1024", "65536", "32"): 2.0,
}
DEFAULT_CASES = "128 1024 2M;64 256 4M;32 64 16M;128 100 1M;8 3..12 32M;256 4096 1M;768 1000 1M;128 1024 65536 32"


def count(text):
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * scale[text[-1]]) if text[-1] in scale else int(float(text))


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def mkbench_cells(results, fields):
    """variant -> 'ms ok|FAIL' for a row (a batch's: mainstream-N..-K..-M..-B<b>.json); {} when its file is missing."""
    n, k, m = fields[:3]
    batch = f"-B{fields[3]}" if len(fields) > 3 else ""
    document = load(os.path.join(results, f"mainstream-N{n}-K{k}-M{m}{batch}.json"))
    cells = {}
    for row in (document or {}).get("rows", []):
        summary = row.get("summary") or {}
        verify = row.get("verify") or {}
        if row.get("status") != "ok" or "median_ms" not in summary:
            cells[row["variant"]] = f"{row.get('status', '?')}"
            continue
        verdict = "ok" if verify.get("passed") is True else ("FAIL" if verify else "unverified")
        cells[row["variant"]] = f"{summary['median_ms']:.3f} {verdict}"
    return cells


def peer_cell(peer, fields):
    n, k, m = int(fields[0]), fields[1], count(fields[2])
    b = int(fields[3]) if len(fields) > 3 else 1
    if "." in k:
        return "-"
    for row in (peer or {}).get("rows", []):
        if (row["n"], row["k"], row["m"], row.get("batch", 1)) == (n, int(k), m, b):
            return f"{row['median_ms']:.3f}"
    return "-"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", required=True, help="the device run's $OUT")
    parser.add_argument("--cases", default=DEFAULT_CASES)
    args = parser.parse_args()
    cases = [c.split() for c in args.cases.split(";") if c.strip()]
    peer = load(os.path.join(args.results, "peer-flash-kmeans.json"))
    cells = {tuple(c): mkbench_cells(args.results, c) for c in cases}
    variants = []
    for row in cells.values():
        variants += [v for v in row if v not in variants]
    header = f"{'N':>4} {'K':>6} {'M':>6} {'B':>3} {'goal':>6} " + " ".join(f"{v:>18}" for v in variants)
    print("issue 32 (ms, median of 10; ok = --verify passed)")
    print(header + f" {'flash-kmeans':>13}")
    for c in cases:
        goal = GOALS.get(tuple(c))
        mk = cells[tuple(c)]
        line = f"{c[0]:>4} {c[1]:>6} {c[2]:>6} {c[3] if len(c) > 3 else '1':>3} {goal if goal else '-':>6} "
        line += " ".join(f"{mk.get(v, 'missing'):>18}" for v in variants)
        print(line + f" {peer_cell(peer, c):>13}")
    if peer is None:
        print("flash-kmeans: no peer-flash-kmeans.json (no checkout in third_party/flash-kmeans, or it failed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
