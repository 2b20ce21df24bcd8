#!/usr/bin/env python3
"""scripts/kernel-times.py without a GPU: it reads ncu's CSV with mkbench's own lines among it,
names kernels without their namespaces, templates and arguments, splits the launches into
iterations at the first kernel that repeats (the set-up kernels before it left out), or with
--iterations I into the last I equal runs of launches (set-up kernels that repeat, and iterations
that launch a kernel several times, as a batch's or a pass's do), scales
values by their unit, sums each iteration, and exits 2 on a file without kernel rows or with a
unit it does not know; where the file holds the limiter metrics too, it tables the last
iteration's: time-weighted over a kernel's launches, the busiest unit and the top stall."""
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def row(i, kernel, ns, unit="nsecond", metric="gpu__time_duration.sum"):
    if metric == "gpu__time_duration.sum":
        value = {"nsecond": ns, "usecond": ns / 1e3, "msecond": ns / 1e6}[unit]
        text = f"{value:,}" if unit == "nsecond" else f"{value:.6f}"
    else:
        text = f"{ns}"
    return (f'"{i}","1","mkbench","127.0.0.1","{kernel}","1","13","(256, 1, 1)","(8, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{text}"')


STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"


def limiter_rows(i, kernel, dram, tensor, issue, stalls):
    rows = [row(i, kernel, dram, "%", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
            row(i, kernel, tensor, "%", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"),
            row(i, kernel, issue, "%", "sm__issue_active.avg.pct_of_peak_sustained_active")]
    rows += [row(i, kernel, value, "", STALL.format(reason)) for reason, value in stalls.items()]
    return rows


def check_limiters(out, kernels, failures):
    """Two iterations of two kernels, the sort launched twice in each with other percentages; the
    main kernel's 'selected' and 'not_selected' ratios are above its stalls and no stall."""
    lines = [HEADER]
    i = 0
    for _ in range(2):
        lines += [row(i, kernels[2], 6_000_000)]
        lines += limiter_rows(i, kernels[2], 12.0, 61.5, 40.0,
                              {"long_scoreboard": 0.4, "barrier": 1.25, "selected": 1.0, "not_selected": 1.9})
        lines += [row(i + 1, kernels[3], 1_000_000)]
        lines += limiter_rows(i + 1, kernels[3], 90.0, "n/a", 20.0, {"long_scoreboard": 2.0, "wait": 0.5})
        lines += [row(i + 2, kernels[4], 3_000_000)]
        lines += limiter_rows(i + 2, kernels[4], 30.0, "n/a", 50.0, {"long_scoreboard": 4.0, "wait": 0.5})
        i += 3
    result = run(write(out, "limiters.csv", lines))
    text = result.stdout.splitlines()
    if result.returncode != 0:
        failures.append(f"limiters: exit {result.returncode}: {result.stderr}")
        return
    start = next((j for j, l in enumerate(text) if l.startswith("limiters, iter 2")), None)
    if start is None:
        failures.append(f"limiters: no table for the last iteration in {text}")
        return
    main = next((l for l in text[start:] if l.startswith("gemm_window_kernel")), "")
    cells = main.split()
    # 6 of 10 ms; DRAM 12, no L2/L1 metric, tensor 61.5, issue 40; busiest tensor; top stall barrier
    if cells[1:3] != ["6.000", "60.0%"] or cells[3:8] != ["12.0", "-", "-", "61.5", "40.0"] or \
            "tensor 62 %" not in main or not main.rstrip().endswith("barrier 1.25"):
        failures.append(f"limiters: main kernel row {main!r}")
    sort_row = next((l for l in text[start:] if l.startswith("DeviceRadixSortOnesweepKernel")), "")
    cells = sort_row.split()
    # launches of 1 and 3 ms: DRAM (90·1 + 30·3)/4 = 45, issue (20·1 + 50·3)/4 = 42.5, stall 3.5
    if cells[1:3] != ["4.000", "40.0%"] or cells[3] != "45.0" or cells[7] != "42.5" or \
            not sort_row.rstrip().endswith("long_scoreboard 3.50"):
        failures.append(f"limiters: sort row {sort_row!r}")
    plain = run(os.path.join(out, "ncu.csv")).stdout
    if "limiters" in plain:
        failures.append("a file of times alone printed a limiter table")


def check_periodic(out, failures):
    """A batch of two problems: the set-up launches fill_iota twice and builds once, then each of
    three iterations launches the main kernel and the sum once a problem (--iterations 3). The
    first-repeat rule would start an iteration at each fill_iota; --iterations 0 still does."""
    lines = [HEADER, row(0, "fill_iota(int *, long)", 1000), row(1, "fill_iota(int *, long)", 1000),
             row(2, "build_operands(const float *)", 50_000)]
    i = 3
    for it in range(3):
        for problem in range(2):
            lines.append(row(i, "main_kernel(float *)", 2_000_000 + 1000 * it))
            lines.append(row(i + 1, "sum_label_runs(int *)", 500_000))
            i += 2
    path = write(out, "batch.csv", lines)
    table = run(path, "--iterations", "3").stdout.splitlines()
    main = next((l for l in table if l.startswith("main_kernel")), "")
    if not table or table[0].split()[-2:] != ["iter", "3"] or main.split()[1:] != ["4.000", "4.002", "4.004"]:
        failures.append(f"--iterations 3 on a batch gave {table}")
    if any(l.startswith(("fill_iota", "build_operands")) for l in table):
        failures.append(f"--iterations 3 kept set-up launches: {table}")
    plain = run(path).stdout.splitlines()
    if not plain or plain[0].split()[-2:] != ["iter", "2"]:  # each fill_iota starts one
        failures.append(f"without --iterations: {plain[:1]}")
    # --iterations must be the run's: 4 takes the last four problems' runs (and says so).
    four = run(path, "--iterations", "4")
    if four.returncode != 0 or "last 4 equal runs of 2 launches" not in four.stderr:
        failures.append(f"--iterations 4: exit {four.returncode}, stderr {four.stderr!r}")
    # No 7 equal runs at the end (the set-up launches end them): the first-repeat rule, said so.
    seven = run(path, "--iterations", "7")
    if seven.returncode != 0 or "do not end in 7 equal runs" not in seven.stderr:
        failures.append(f"--iterations 7: exit {seven.returncode}, stderr {seven.stderr!r}")
    if run(path, "--iterations", "-1").returncode != 2:
        failures.append("--iterations -1 did not exit 2")


def run(path, *extra):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "kernel-times.py"), path, *extra],
                          capture_output=True, text=True)


def write(out, name, lines):
    path = os.path.join(out, name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def main():
    failures = []
    kernels = ["gemm_window::<unnamed>::fill_iota(int *, long)",
               "gemm_window::<unnamed>::largest_centroid_norm(gemm_window::TableArgs)",
               "void gemm_window::gemm_window_kernel<64, 256, 2, 4, 1>(gemm_window::KernelArgs)",
               "void cub::DeviceRadixSortOnesweepKernel<Policy, false, int>(int *)",
               "void cub::DeviceRadixSortOnesweepKernel<Policy, false, int>(int *)",
               "void divide_sums(const double *, int)"]
    units = ["nsecond", "msecond", "usecond", "nsecond", "usecond"]
    lines = ["==PROF== Connected to process 1", "Variant  Params  N  K  M  median ms", HEADER, row(0, kernels[0], 3000)]
    i = 1
    for it in range(3):
        for k, ns, unit in zip(kernels[1:], [4000, 8_000_000 + it, 16000, 17000, 318000], units):
            lines.append(row(i, k, ns, unit))
            i += 1
    with tempfile.TemporaryDirectory() as out:
        path = write(out, "ncu.csv", lines)
        result = run(path)
        table = result.stdout.splitlines()
        if result.returncode != 0:
            failures.append(f"exit {result.returncode}: {result.stderr}")
        names = [l.split()[0] for l in table[1:]]
        if names != ["largest_centroid_norm", "gemm_window_kernel", "DeviceRadixSortOnesweepKernel", "divide_sums", "sum"]:
            failures.append(f"kernel rows {names}")
        if not table or table[0].split()[-2:] != ["iter", "3"]:
            failures.append(f"header {table[:1]}")
        sort_row = next((l for l in table if l.startswith("DeviceRadixSortOnesweepKernel")), "")
        if sort_row.split()[1:] != ["0.033"] * 3:  # the two launches of an iteration add up
            failures.append(f"sort row {sort_row!r}")
        sum_row = next((l for l in table if l.startswith("sum")), "")
        if sum_row.split()[1:] != ["8.355", "8.355", "8.355"]:
            failures.append(f"sum row {sum_row!r}")
        last = run(path, "--last", "1").stdout.splitlines()
        if not last or last[0].split()[-2:] != ["iter", "1"] or "8.000" not in last[2]:
            failures.append(f"--last 1 gave {last[:3]}")
        odd = write(out, "odd-unit.csv", [HEADER, row(0, kernels[1], 4000).replace('"nsecond"', '"cycle"')])
        if run(odd).returncode != 2:
            failures.append("an unknown unit did not exit 2")
        check_limiters(out, kernels, failures)
        check_periodic(out, failures)
        if run(write(out, "empty.csv", ["==ERROR== the profiler failed"])).returncode != 2:
            failures.append("a file without kernel rows did not exit 2")
    for failure in failures:
        print("FAIL:", failure)
    print("kernel-times:", "ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
