#!/usr/bin/env python3
"""Where a Lloyd iteration's time goes, kernel by kernel: reads the CSV that
`ncu --metrics gpu__time_duration.sum --csv --print-units base mkbench run ...` prints (stdout, with mkbench's own
lines among it) and prints one row a kernel and one column an iteration, in milliseconds, with
each iteration's sum. An iteration starts at each launch of the --first kernel (default: the
first kernel name that launches more than once, once the set-up kernels before it are left out).

  scripts/kernel-times.py NCU.csv [--first NAME] [--last N]

Values are scaled by their Metric Unit (ns, us, ms, s, or nsecond ... second). Exit 2 when the
file holds no kernel rows (ncu failed, or profiled nothing) or a unit it does not know."""
import argparse
import csv
import re
import sys


NANOSECONDS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6,
               "s": 1e9, "second": 1e9}


class UnknownUnit(ValueError):
    pass


def short_name(name):
    """'void ns::<unnamed>::kernel<T>(args)' -> 'kernel' (and '(anonymous namespace)' alike)."""
    name = name.replace("<unnamed>::", "").replace("(anonymous namespace)::", "")
    if name.startswith("void "):
        name = name[len("void "):]
    name = re.sub(r"\(.*$", "", name)
    name = re.sub(r"<.*$", "", name)
    return name.split("::")[-1].strip() or "?"


def read_launches(path):
    """[(id, kernel, ns)] in launch order, from the CSV rows that have a Kernel Name column."""
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if len(r) > 5]
    header = next((r for r in rows if "Kernel Name" in r and "Metric Value" in r), None)
    if header is None:
        return []
    ki, vi, ii = header.index("Kernel Name"), header.index("Metric Value"), header.index("ID")
    ni = header.index("Metric Name") if "Metric Name" in header else None
    ui = header.index("Metric Unit") if "Metric Unit" in header else None
    launches = []
    for r in rows:
        if r is header or len(r) <= max(ki, vi, ii) or not r[ii].isdigit():
            continue
        if ni is not None and r[ni] != "gpu__time_duration.sum":
            continue
        unit = r[ui] if ui is not None else "ns"
        if unit not in NANOSECONDS:
            raise UnknownUnit(unit)
        try:
            value = float(r[vi].replace(",", ""))
        except ValueError:  # "n/a": the launch was not measured
            continue
        launches.append((int(r[ii]), short_name(r[ki]), value * NANOSECONDS[unit]))
    launches.sort()
    return launches


def split_iterations(launches, first):
    names = [k for _, k, _ in launches]
    if first is None:
        counts = {k: names.count(k) for k in names}
        first = next((k for k in names if counts[k] > 1), None)
    starts = [i for i, k in enumerate(names) if k == first]
    if not starts:
        return first, []
    bounds = starts + [len(launches)]
    return first, [launches[bounds[j]:bounds[j + 1]] for j in range(len(starts))]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv")
    parser.add_argument("--first", help="the kernel that starts an iteration")
    parser.add_argument("--last", type=int, default=0, help="only the last N iterations (0: all)")
    args = parser.parse_args()
    try:
        launches = read_launches(args.csv)
    except UnknownUnit as unit:
        print(f"kernel-times: unknown time unit {unit} in {args.csv}", file=sys.stderr)
        return 2
    if not launches:
        print(f"kernel-times: no kernel rows in {args.csv}", file=sys.stderr)
        return 2
    first, iterations = split_iterations(launches, args.first)
    if not iterations:
        print(f"kernel-times: no launch of {first!r} in {args.csv}", file=sys.stderr)
        return 2
    if args.last > 0:
        iterations = iterations[-args.last:]
    order = []
    for it in iterations:
        for _, k, _ in it:
            if k not in order:
                order.append(k)
    width = max(len(k) for k in order + ["sum"])
    print(f"{'kernel (ms)':<{width}} " + " ".join(f"{'iter ' + str(j + 1):>9}" for j in range(len(iterations))))
    for k in order:
        cells = [sum(ns for _, name, ns in it if name == k) / 1e6 for it in iterations]
        print(f"{k:<{width}} " + " ".join(f"{c:9.3f}" for c in cells))
    totals = [sum(ns for _, _, ns in it) / 1e6 for it in iterations]
    print(f"{'sum':<{width}} " + " ".join(f"{t:9.3f}" for t in totals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
