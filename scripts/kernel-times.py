#!/usr/bin/env python3
"""Where a Lloyd iteration's time goes, kernel by kernel: reads the CSV that
`ncu --metrics gpu__time_duration.sum --csv --print-units base mkbench run ...` prints (stdout, with mkbench's own
lines among it) and prints one row a kernel and one column an iteration, in milliseconds, with
each iteration's sum. With --iterations I (the run's warm-up and timed iterations), the iterations
are the last I equal runs of kernel names, the longest there are: an iteration may launch a
kernel several times (tensor-multik-passes' passes, a batch's problems), and the set-up launches
before them are left out. Without it, or where the launches end in no I equal runs, an iteration
starts at each launch of the --first kernel (default: the first kernel name that launches more
than once, once the set-up kernels before it are left out).

  scripts/kernel-times.py NCU.csv [--iterations I] [--first NAME] [--last N]

Where the CSV also holds the limiter metrics (LIMITERS below, and the warp stall ratios
smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio), a second table follows for
the last iteration: each kernel's time, its share of the iteration, each unit's % of its peak
(averaged over the kernel's launches, weighted by time), the busiest of them, and the top stall
(warps stalled for that reason per issued instruction): issue 32's "limiter" of a row.

Times are scaled by their Metric Unit (ns, us, ms, s, or nsecond ... second). Exit 2 when the
file holds no kernel rows (ncu failed, or profiled nothing) or a time unit it does not know."""
import argparse
import csv
import re
import sys


NANOSECONDS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6,
               "s": 1e9, "second": 1e9}


# Column title -> ncu metric, each a % of its unit's peak.
LIMITERS = [("DRAM", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
            ("L2", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
            ("L1", "l1tex__throughput.avg.pct_of_peak_sustained_active"),
            ("tensor", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"),
            ("issue", "sm__issue_active.avg.pct_of_peak_sustained_active")]
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(.+)_per_issue_active\.ratio$")
TIME = "gpu__time_duration.sum"


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
    """[(id, kernel, ns, metrics)] in launch order, from the CSV rows that have a Kernel Name
    column; metrics maps every other metric's name to its value as printed (a launch without a
    measured time is left out)."""
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if len(r) > 5]
    header = next((r for r in rows if "Kernel Name" in r and "Metric Value" in r), None)
    if header is None:
        return []
    ki, vi, ii = header.index("Kernel Name"), header.index("Metric Value"), header.index("ID")
    ni = header.index("Metric Name") if "Metric Name" in header else None
    ui = header.index("Metric Unit") if "Metric Unit" in header else None
    names, times, metrics = {}, {}, {}
    for r in rows:
        if r is header or len(r) <= max(ki, vi, ii) or not r[ii].isdigit():
            continue
        launch = int(r[ii])
        names[launch] = short_name(r[ki])
        metric = r[ni] if ni is not None else TIME
        try:
            value = float(r[vi].replace(",", ""))
        except ValueError:  # "n/a": the launch was not measured
            continue
        if metric != TIME:
            metrics.setdefault(launch, {})[metric] = value
            continue
        unit = r[ui] if ui is not None else "ns"
        if unit not in NANOSECONDS:
            raise UnknownUnit(unit)
        times[launch] = value * NANOSECONDS[unit]
    return [(i, names[i], times[i], metrics.get(i, {})) for i in sorted(times)]


def split_periodic(launches, count):
    """The last `count` runs of equal kernel-name sequences, each as long as it can be; None where
    the launches do not end in `count` equal runs."""
    names = [k for _, k, _, _ in launches]
    n = len(names)
    for period in range(n // count, 0, -1):
        start = n - count * period
        runs = [names[start + j * period:start + (j + 1) * period] for j in range(count)]
        if all(run == runs[0] for run in runs):
            return [launches[start + j * period:start + (j + 1) * period] for j in range(count)]
    return None


def split_iterations(launches, first):
    names = [k for _, k, _, _ in launches]
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
    parser.add_argument("--iterations", type=int, default=0,
                        help="the run's iterations (warm-up and timed): the launches' last I equal runs")
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
    if args.iterations < 0:
        print("kernel-times: --iterations must be 0 (not given) or more", file=sys.stderr)
        return 2
    iterations = split_periodic(launches, args.iterations) if args.iterations > 0 and not args.first else None
    if iterations is not None:
        # Any I equal runs at the end are taken: I must be the run's iterations, or the runs may be
        # a batch's problems. Said on stderr, beside the table in the stage's file.
        print(f"kernel-times: iterations are the last {len(iterations)} equal runs of {len(iterations[0])} "
              f"launches each", file=sys.stderr)
    else:
        if args.iterations > 0:
            print(f"kernel-times: the launches do not end in {args.iterations} equal runs; an iteration starts "
                  f"at each launch of {args.first or 'the first kernel that repeats'}", file=sys.stderr)
        first, iterations = split_iterations(launches, args.first)
    if not iterations:
        print(f"kernel-times: no launch of {first!r} in {args.csv}", file=sys.stderr)
        return 2
    if args.last > 0:
        iterations = iterations[-args.last:]
    order = []
    for it in iterations:
        for _, k, _, _ in it:
            if k not in order:
                order.append(k)
    width = max(len(k) for k in order + ["sum"])
    print(f"{'kernel (ms)':<{width}} " + " ".join(f"{'iter ' + str(j + 1):>9}" for j in range(len(iterations))))
    for k in order:
        cells = [sum(ns for _, name, ns, _ in it if name == k) / 1e6 for it in iterations]
        print(f"{k:<{width}} " + " ".join(f"{c:9.3f}" for c in cells))
    totals = [sum(ns for _, _, ns, _ in it) / 1e6 for it in iterations]
    print(f"{'sum':<{width}} " + " ".join(f"{t:9.3f}" for t in totals))
    if any(m for it in iterations for _, _, _, m in it):
        print()
        print_limiters(iterations[-1], order, width, len(iterations))
    return 0


def time_weighted(launches, metric):
    """The time-weighted mean of a metric over launches that carry it; None where none does."""
    pairs = [(ns, m[metric]) for _, _, ns, m in launches if metric in m]
    total = sum(ns for ns, _ in pairs)
    return sum(ns * v for ns, v in pairs) / total if total > 0 else None


def print_limiters(iteration, order, width, number):
    total = sum(ns for _, _, ns, _ in iteration)
    print(f"limiters, iter {number} (% of each unit's peak; stall: warps stalled per issue)")
    print(f"{'kernel':<{width}} {'ms':>8} {'share':>6} " + " ".join(f"{t:>6}" for t, _ in LIMITERS) +
          f" {'busiest':>12}  top stall")
    for k in order:
        launches = [l for l in iteration if l[1] == k]
        if not launches:
            continue
        ns = sum(l[2] for l in launches)
        values = {t: time_weighted(launches, metric) for t, metric in LIMITERS}
        cells = " ".join(f"{v:6.1f}" if v is not None else f"{'-':>6}" for v in values.values())
        measured = {t: v for t, v in values.items() if v is not None}
        busiest = max(measured, key=measured.get) if measured else None
        busiest_text = f"{busiest} {measured[busiest]:.0f} %" if busiest else "-"
        stalls = {}
        for metric in {m for l in launches for m in l[3]}:
            match = STALL.match(metric)
            # 'selected' (1 a issue) and 'not_selected' (an eligible warp not picked) are no stall.
            if match and match.group(1) not in ("selected", "not_selected"):
                stalls[match.group(1)] = time_weighted(launches, metric)
        top = max(stalls, key=stalls.get) if stalls else None
        top_text = f"{top} {stalls[top]:.2f}" if top else "-"
        share = 100.0 * ns / total if total > 0 else 0.0
        print(f"{k:<{width}} {ns / 1e6:8.3f} {share:5.1f}% {cells} {busiest_text:>12}  {top_text}")


if __name__ == "__main__":
    sys.exit(main())
