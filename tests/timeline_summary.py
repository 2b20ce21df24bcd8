#!/usr/bin/env python3
"""Summarises a tensor-multik timeline (MKBENCH_TIMELINE) against the run's event-timed median.

usage: timeline_summary.py TIMELINE.csv RESULTS.json LABEL
Every figure is in µs from the first block's entry; spreads are max - min over blocks.
"""
import csv
import json
import statistics
import sys


def main():
    path, results, label = sys.argv[1:4]
    try:
        lines = open(path).read().splitlines()
    except OSError as error:
        print(f"{label}: no timeline ({error})")
        return 1
    header = lines[0]
    last_finish = float(header.rsplit(" at ", 1)[1].split()[0]) / 1000
    rows = list(csv.DictReader(lines[1:]))
    us = lambda row, key: float(row[key]) / 1000 if row[key] else None
    warp_keys = [k for k in rows[0] if k.startswith("warp")]
    entry = [us(r, "entry_ns") for r in rows]
    barrier = [us(r, "loop_barrier_ns") for r in rows]
    ticket = [us(r, "ticket_ns") for r in rows]
    prologue = [us(r, "prologue_ns") - us(r, "entry_ns") for r in rows if r["prologue_ns"]]
    first_warp = [min(us(r, k) for k in warp_keys) for r in rows]
    last_warp = [max(us(r, k) for k in warp_keys) for r in rows]
    warp_spread = [b - a for a, b in zip(first_warp, last_warp)]
    epilogue = [t - b for b, t in zip(barrier, ticket)]
    median = None
    try:
        median = json.load(open(results))["rows"][0]["summary"]["median_ms"] * 1000
    except (OSError, KeyError, IndexError, ValueError):
        pass
    fmt = lambda xs: f"{min(xs):.1f}/{statistics.median(xs):.1f}/{max(xs):.1f}"
    print(f"{label}: {len(rows)} blocks; event median {median:.1f} us" if median else f"{label}: {len(rows)} blocks")
    print(f"  entry (min/med/max)          {fmt(entry)}")
    if prologue:
        print(f"  centroids loaded after entry {fmt(prologue)}")
    print(f"  first warp's loop end        {fmt(first_warp)}")
    print(f"  last warp's loop end         {fmt(last_warp)}")
    print(f"  warps' loop-end spread/block {fmt(warp_spread)}")
    print(f"  block barrier after the loop {fmt(barrier)}")
    print(f"  barrier to ticket            {fmt(epilogue)}")
    print(f"  ticket                       {fmt(ticket)}; last block's finish {last_finish:.1f}")
    if median:
        print(f"  event median - kernel span   {median - last_finish:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
