#!/usr/bin/env python3
"""Executed SASS instructions of one kernel launch, per 32-point warp step, by opcode.

Input: the CSV that `ncu -i REPORT --page source --csv --print-source sass` prints for a
launch profiled with --section SourceCounters (tests/device.sh profile writes it).
Usage: reports/sass_mix.py NCU_SASS.csv POINTS [--top 30]
POINTS is M of the profiled run (32M = 2^25, as mkbench counts); a step is 32 points of one
warp.
"""
import argparse
import collections
import csv
import os
import sys


def point_count(text):
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv_file")
    parser.add_argument("points", type=point_count)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    rows = list(csv.reader(open(args.csv_file)))
    header_at = next((i for i, row in enumerate(rows) if "Instructions Executed" in row), None)
    if header_at is None:
        sys.exit(f"{args.csv_file}: no 'Instructions Executed' column (was SourceCounters collected?)")
    header = rows[header_at]
    source, executed = header.index("Source"), header.index("Instructions Executed")
    steps = args.points / 32.0
    total, by_opcode = 0, collections.Counter()
    for row in rows[header_at + 1:]:
        if len(row) <= executed or not row[executed].strip():
            continue
        count = int(row[executed].replace(",", ""))
        words = row[source].split()
        if not words:
            continue
        opcode = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
        by_opcode[opcode.split(".")[0]] += count
        total += count
    print(f"{os.path.basename(args.csv_file)}: {total} warp instructions executed, "
          f"{total / steps:.1f} per 32-point step")
    for opcode, count in by_opcode.most_common(args.top):
        print(f"  {opcode:10s} {count / steps:8.1f}")


if __name__ == "__main__":
    main()
