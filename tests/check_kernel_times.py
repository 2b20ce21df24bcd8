#!/usr/bin/env python3
"""scripts/kernel-times.py without a GPU: it reads ncu's CSV with mkbench's own lines among it,
names kernels without their namespaces, templates and arguments, splits the launches into
iterations at the first kernel that repeats (the set-up kernels before it left out), scales
values by their unit, sums each iteration, and exits 2 on a file without kernel rows or with a
unit it does not know."""
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def row(i, kernel, ns, unit="nsecond"):
    value = {"nsecond": ns, "usecond": ns / 1e3, "msecond": ns / 1e6}[unit]
    text = f"{value:,}" if unit == "nsecond" else f"{value:.6f}"
    return (f'"{i}","1","mkbench","127.0.0.1","{kernel}","1","13","(256, 1, 1)","(8, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","gpu__time_duration.sum","{unit}","{text}"')


def run(path, *extra):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "kernel-times.py"), path, *extra],
                          capture_output=True, text=True)


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
        path = os.path.join(out, "ncu.csv")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
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
        odd = os.path.join(out, "odd-unit.csv")
        with open(odd, "w") as f:
            f.write("\n".join([HEADER, row(0, kernels[1], 4000).replace('"nsecond"', '"cycle"')]) + "\n")
        if run(odd).returncode != 2:
            failures.append("an unknown unit did not exit 2")
        empty = os.path.join(out, "empty.csv")
        with open(empty, "w") as f:
            f.write("==ERROR== the profiler failed\n")
        if run(empty).returncode != 2:
            failures.append("a file without kernel rows did not exit 2")
    for failure in failures:
        print("FAIL:", failure)
    print("kernel-times:", "ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
