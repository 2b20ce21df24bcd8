#!/usr/bin/env python3
"""Writes the FABRICATED result files used by tests/test_compare.cpp and tests/test_report.cpp.

Every number in tests/data/results_*_fixture.json is invented for tests (deterministic
pseudo-random samples around hand-picked medians). None of it is a measurement; the files
say so in "command" and "fixture_note". Rerun after changing this script:

    python3 tests/data/make_report_fixtures.py
"""
import copy
import json
import os
import random
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
NOTE = "FABRICATED TEST FIXTURE: invented numbers for mkbench's report/compare tests, not a measurement"

H100 = {
    "is_gpu": True, "name": "NVIDIA H100 80GB HBM3", "slug": "nvidia-h100-80gb-hbm3",
    "compute_capability": "9.0", "sm_count": 132, "fp32_lanes_per_sm": 128,
    "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "mem_bus_bits": 5120,
    "global_mem_bytes": 85000000000, "l2_bytes": 52428800, "driver": "580.00", "cuda_runtime": "13.0",
    "cpu_threads": 16,
    "peaks": {"fp32_gflops_theoretical": 66900, "dram_gbps_theoretical": 3352,
              "fp32_gflops_measured": 51000, "dram_read_gbps_measured": 3000,
              "dram_copy_gbps_measured": 2900, "measured_at": "2026-11-22"},
}
A100 = dict(H100, name="NVIDIA A100-SXM4-40GB", slug="nvidia-a100-sxm4-40gb", compute_capability="8.0",
            sm_count=108, fp32_lanes_per_sm=64,
            peaks={"fp32_gflops_theoretical": 19500, "dram_gbps_theoretical": 1555,
                   "fp32_gflops_measured": 0, "dram_read_gbps_measured": 0,
                   "dram_copy_gbps_measured": 0, "measured_at": ""})
T4 = dict(H100, name="Tesla T4", slug="tesla-t4", compute_capability="7.5", sm_count=40,
          fp32_lanes_per_sm=64,
          peaks={"fp32_gflops_theoretical": 8141, "dram_gbps_theoretical": 320,
                 "fp32_gflops_measured": 0, "dram_read_gbps_measured": 0,
                 "dram_copy_gbps_measured": 0, "measured_at": ""})
BUILD = {"git_sha": "fixture00000", "cxx_compiler": "GNU 12.2", "cuda_compiler": "NVIDIA 13.0",
         "cuda_architectures": "90", "build_type": "Release"}
M = 33554432


def dataset(n, m=M):
    return {"kind": "generator", "generator": "uniform", "params": {"m": m, "n": n}, "seed": 42}


def samples_around(rng, median_ms, count=20, jitter=0.02):
    # Right-skewed like real timings: a floor plus positive noise.
    return [round(median_ms * (1 + abs(rng.gauss(0, jitter))) - median_ms * jitter * 0.67, 6)
            for _ in range(count)]


def summary(samples):
    ordered = sorted(samples)
    q = statistics.quantiles(ordered, n=4, method="inclusive")
    return {"count": len(samples), "median_ms": statistics.median(samples), "min_ms": ordered[0],
            "max_ms": ordered[-1], "mean_ms": statistics.fmean(samples), "q1_ms": q[0],
            "q3_ms": q[2], "iqr_ms": q[2] - q[0]}


def row(rng, device, variant, params, n, kmin, kmax, median_ms, m=M, clock=None, status="ok",
        role=None, count=20):
    sum_k = (kmin + kmax) * (kmax - kmin + 1) // 2
    samples = samples_around(rng, median_ms, count) if status == "ok" else []
    ops = 3.0 * sum_k * n * m
    stats = summary(samples) if samples else {}
    med = stats.get("median_ms", median_ms)
    gops = ops / (med * 1e-3) / 1e9
    fp32 = device["peaks"]["fp32_gflops_theoretical"]
    fp32_measured = device["peaks"]["fp32_gflops_measured"]
    bytes_read = m * n * 4.0
    label = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    k_text = f"{kmin}" if kmin == kmax else f"{kmin}..{kmax}"
    out = {
        "name": f"{variant}/{n}/{k_text}/{m}/{label}",
        "variant": variant,
        "params": params,
        "problem": {"n": n, "k_min": kmin, "k_max": kmax, "sum_k": sum_k, "m": m},
        "dataset": dataset(n, m),
        "status": status,
        "reason": "" if status == "ok" else "fixture: variant refused this shape",
        "timing": {"clock": "cuda-event", "warmup": 3, "l2_flushed": False, "samples_ms": samples,
                   "sm_clock_mhz": [clock] * len(samples) if clock else []},
        "summary": stats,
        "metrics": {
            "gops": gops, "effective_gbps": bytes_read / (med * 1e-3) / 1e9,
            "pct_fp32_theoretical": 100 * gops / fp32,
            "pct_fp32_measured": 100 * gops / fp32_measured if fp32_measured else 0,
            "pct_dram_theoretical": 100 * bytes_read / (med * 1e-3) / 1e9 / device["peaks"]["dram_gbps_theoretical"],
            "pct_dram_measured": 0,
            "arithmetic_intensity": ops / bytes_read,
            "roofline_bound_ms": 0, "roofline_limit": "memory"},
        "verify": None,
    }
    if role:
        out["suite_role"] = role
    return out


def document(device, suite, rows, created="2026-11-22T03:04:05Z"):
    return {"schema": "mkbench.results/1", "created": created,
            "command": "TEST FIXTURE (fabricated, see tests/data/make_report_fixtures.py)",
            "fixture_note": NOTE, "suite": suite, "device": device, "build": BUILD, "rows": rows}


def write(name, doc):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as handle:
        json.dump(doc, handle, indent=1, ensure_ascii=False)
        handle.write("\n")


def main():
    rng = random.Random(20261122)

    # Table 1: grid sweep, best at grid=264.
    times = {1: 60.0, 132: 1.30, 264: 0.95, 396: 1.02, 528: 1.05, 1056: 1.20, 131072: 9.5}
    rows = [row(rng, H100, "registers-multik", {"block": 256, "grid": g, "layout": "soa"}, 8, 3, 7, t)
            for g, t in times.items()]
    write("results_table1_fixture.json", document(H100, "table1", rows))

    # Table 2: MultiK ranges against per-K and K=ΣK runs of another variant and the CPU.
    # Medians chosen so the speedups are easy to check by hand (samples jitter ±2%).
    rows = []
    for n, kmin, kmax, multik, per_k, sum_k, cpu in [
        (4, 3, 5, 1.0, {3: 0.5, 4: 0.6, 5: 0.7}, 1.5, 50.0),
        (4, 3, 7, 2.0, {3: 0.5, 4: 0.6, 5: 0.7, 6: 0.8, 7: 0.9}, 3.0, 90.0),
    ]:
        rows.append(row(rng, H100, "registers-multik", {"block": 256, "grid": 264}, n, kmin, kmax, multik,
                        role="range"))
        for k, t in per_k.items():
            rows.append(row(rng, H100, "naive-atomics", {"block": 256}, n, k, k, t, role="per-k"))
        s = (kmin + kmax) * (kmax - kmin + 1) // 2
        rows.append(row(rng, H100, "naive-atomics", {"block": 256}, n, s, s, sum_k, role="sum-k"))
        rows.append(row(rng, H100, "cpu-openmp", {}, n, kmin, kmax, cpu, role="cpu"))
    write("results_table2_fixture.json", document(H100, "table2", rows))
    # The same file without role tags: the report must infer the roles from the K values.
    untagged = copy.deepcopy(rows)
    for r in untagged:
        del r["suite_role"]
    write("results_table2_untagged_fixture.json", document(H100, "table2", untagged))

    # Table 3: the same problems on two GPUs.
    for name, device, scale in [("results_table3_h100_fixture.json", H100, 1.0),
                                ("results_table3_t4_fixture.json", T4, 5.0)]:
        r = random.Random(7)
        rows = [row(r, device, "registers-multik", {"block": 256, "grid": 2 * device["sm_count"]}, n, 3, kmax,
                    base * scale)
                for n, kmax, base in [(4, 5, 2.0), (8, 5, 4.0), (4, 7, 3.0)]]
        write(name, document(device, "table3", rows))

    # Seed 000 Table 1 as published (a copy of the seed's numbers, Tesla T4), so report tests
    # do not depend on reports/published/, which another part of the project maintains.
    seed_rows = [(1, 131072, 2080.60, 47.69), (40, 3277, 134.49, 737.74), (51, 2571, 165.46, 599.65),
                 (80, 1639, 142.47, 696.42), (101, 1298, 132.83, 746.96), (120, 1093, 140.83, 704.53),
                 (151, 869, 121.77, 814.80), (200, 656, 119.67, 829.10), (301, 436, 123.95, 800.47),
                 (400, 328, 120.70, 822.03), (3197, 141, 180.19, 550.63), (11916, 11, 251.46, 394.57),
                 (131072, 1, 1035.70, 95.80)]
    with open(os.path.join(HERE, "published_table1_t4_fixture.json"), "w", encoding="utf-8") as handle:
        json.dump({"source": "seed 000 (MultiK paper), Tabela 1; copied for tests",
                   "gpu": "Tesla T4",
                   "note": "Published numbers of another GPU (mean of 10 runs), not our measurement",
                   "rows": [{"grid": g, "points_per_thread": p, "time_ms": t, "gops": o}
                            for g, p, t, o in seed_rows]}, handle, indent=1)
        handle.write("\n")

    # Seed 000 Table 3 as published (T4 and A100, one Lloyd iteration each), copied for tests.
    seed_t3 = [(4, "3..5", 627.46, 7.62, 3541.67, 1.35), (8, "3..5", 610.77, 15.81, 2917.30, 3.31),
               (16, "3..5", 476.81, 40.7, 3245.19, 5.98), (32, "3..5", 269.42, 144.41, 1783.05, 21.82),
               (4, "3..7", 712.80, 13.81, 2845.01, 3.46), (8, "3..7", 690.46, 28.74, 3627.74, 5.47),
               (16, "3..7", 428.15, 93.06, 3279.32, 12.15), (32, "3..7", 267.49, 298.49, 1820.84, 43.85)]
    with open(os.path.join(HERE, "published_table3_fixture.json"), "w", encoding="utf-8") as handle:
        json.dump({"source": "seed 000 (MultiK paper), Tabela 3; copied for tests",
                   "gpu": ["NVIDIA T4", "NVIDIA A100"],
                   "note": "Published numbers of other GPUs, not our measurement",
                   "setup": {"m": M},
                   "rows": [{"n": n, "k": k, "t4_gops": a, "t4_time_ms": b, "a100_gops": c, "a100_time_ms": d}
                            for n, k, a, b, c, d in seed_t3]}, handle, indent=1)
        handle.write("\n")

    # Perf gate: a baseline, a candidate with a planted 20% slowdown on one row, the same
    # baseline on another device, and one with the SM clock throttled on the slow row.
    gate_rows = [("registers-multik", {"block": 256, "grid": 264}, 8, 3, 7, 1.00),
                 ("registers-multik", {"block": 256, "grid": 528}, 8, 3, 7, 1.05),
                 ("naive-atomics", {"block": 256}, 8, 5, 5, 0.80),
                 ("registers-multik", {"block": 128, "grid": 264}, 4, 3, 12, 2.40)]
    rng = random.Random(1)
    base = document(H100, "gate", [row(rng, H100, *spec, clock=1980) for spec in gate_rows])
    write("results_gate_baseline_fixture.json", base)
    rng = random.Random(2)
    cand_rows = [row(rng, H100, *spec, clock=1980) for spec in gate_rows]
    rng = random.Random(3)
    slow = row(rng, H100, *gate_rows[0][:5], gate_rows[0][5] * 1.20, clock=1980)
    write("results_gate_slower_fixture.json",
          document(H100, "gate", [slow] + cand_rows[1:], created="2026-11-23T03:04:05Z"))
    throttled = copy.deepcopy(slow)
    throttled["timing"]["sm_clock_mhz"] = [1600] * len(throttled["timing"]["samples_ms"])
    write("results_gate_throttled_fixture.json",
          document(H100, "gate", [throttled] + cand_rows[1:], created="2026-11-23T03:04:05Z"))
    other = copy.deepcopy(base)
    other["device"] = A100
    write("results_gate_other_device_fixture.json", other)


if __name__ == "__main__":
    main()
