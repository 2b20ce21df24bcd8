#!/usr/bin/env python3
"""Plots for `mkbench report --format html` (also usable on its own).

    python3 reports/plots.py --in results.json [more.json ...] --outdir DIR [--published T1.json]

Writes PNGs into DIR and DIR/manifest.json ({"plots": [{"file", "caption"}]}), which the
C++ report reads to embed the images. Input is the result schema of reports/SCHEMA.md.

  * table1_*.png   Gops/s against grid size (log x), one line per device (+ the published
                   seed numbers when --published is given, dashed: another GPU).
  * roofline.png   paper ops per byte against Gops/s, one point per row, with the memory and
                   FP32 roofs of each device (measured peaks when present, else theoretical)
                   and an estimated TF32 tensor-core roof when a tf32/tensor variant is shown.
  * variants_*.png median time per variant for every case of table2/blobs suites (log y).

Needs matplotlib only (Agg backend, no display). Debian's python3-matplotlib lives in
/usr/bin/python3; a pyenv python3 may not see it, which is why the C++ side probes both.
"""
import argparse
import json
import math
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (backend must be chosen first)

# Dense TF32 tensor-core rate as a multiple of the FP32 CUDA-core rate, from NVIDIA's
# datasheets (A100: 156 vs 19.5 TFLOPS; H100 SXM: 495 vs 67). Used only when the result
# file carries no peaks.tf32_gflops_theoretical; the legend says "estimated".
TF32_OVER_FP32 = {"8.0": 8.0, "9.0": 7.4}

CASES_PER_FIGURE = 12


def load(path):
    with open(path, encoding="utf-8") as handle:
        doc = json.load(handle)
    if doc.get("schema") not in ("mkbench.results/2", "mkbench.results/1") or not isinstance(doc.get("rows"), list):
        raise ValueError(f"{path}: not an mkbench.results/2 (or /1) file")
    doc["_path"] = path
    return doc


def median_ms(row):
    summary = row.get("summary") or {}
    if isinstance(summary.get("median_ms"), (int, float)):
        return float(summary["median_ms"])
    samples = (row.get("timing") or {}).get("samples_ms") or []
    return statistics.median(samples) if samples else None


def ok_rows(doc):
    return [r for r in doc["rows"] if r.get("status", "ok") == "ok" and median_ms(r)]


def device_name(doc):
    device = doc.get("device") or {}
    name = device.get("name") or device.get("slug") or "unknown device"
    for prefix in ("NVIDIA ", "Tesla "):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name


def problem_key(row):
    p = row.get("problem") or {}
    kmin = p.get("k_min", p.get("k", 0))
    return (p.get("n", 0), kmin, p.get("k_max", kmin), p.get("m", 0))


def problem_text(key):
    n, kmin, kmax, m = key
    k = f"{kmin}" if kmin == kmax else f"{kmin}..{kmax}"
    return f"N={n} K={k} M={m}"


def gops(row):
    value = (row.get("metrics") or {}).get("gops")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def save(fig, outdir, name, caption, made):
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, name), dpi=110)
    plt.close(fig)
    made.append({"file": name, "caption": caption})


def effective_grid(row):
    """The table1 suite writes grid=0 for "derive it from ppt": grid = ceil(M / (block·ppt))."""
    params = row.get("params") or {}
    grid, ppt, block = params.get("grid"), params.get("ppt"), params.get("block")
    if isinstance(grid, (int, float)) and grid > 0:
        return float(grid)
    m = (row.get("problem") or {}).get("m")
    if all(isinstance(v, (int, float)) and v > 0 for v in (ppt, block, m)):
        return float(math.ceil(m / (block * ppt)))
    return None


def plot_table1(docs, published, outdir, made):
    lines = []
    for doc in docs:
        if doc.get("suite") != "table1":
            continue
        groups = {}
        for row in ok_rows(doc):
            grid = effective_grid(row)
            if grid and gops(row):
                groups.setdefault(problem_key(row), []).append((float(grid), gops(row)))
        for key, points in groups.items():
            lines.append((f"{device_name(doc)} {problem_text(key)}", sorted(points)))
    if not lines:
        return
    fig, ax = plt.subplots(figsize=(9, 5.2))
    for label, points in lines:
        xs, ys = zip(*points)
        ax.plot(xs, ys, marker="o", label=label)
        best = max(points, key=lambda p: p[1])
        ax.plot([best[0]], [best[1]], marker="*", markersize=16, color="gold",
                markeredgecolor="black", linestyle="none")
    if published:
        points = sorted((float(r["grid"]), float(r["gops"])) for r in published.get("rows", [])
                        if isinstance(r.get("grid"), (int, float)) and isinstance(r.get("gops"), (int, float)))
        if points:
            xs, ys = zip(*points)
            gpu = published.get("gpu", "Tesla T4")
            ax.plot(xs, ys, linestyle="--", marker="x", color="gray",
                    label=f"published ({gpu}, seed 000) — another GPU, not our measurement")
    ax.set_xscale("log")
    ax.set_xlabel("grid (thread blocks, log scale)")
    ax.set_ylabel("Gops/s (3·ΣK·N·M / median time)")
    ax.set_title("Table 1: throughput against grid size (star: best)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, outdir, "table1_gops_vs_grid.png",
         "Table 1 — Gops/s against grid size (log x); the star marks the best grid.", made)


def peak(peaks, measured, theoretical):
    value = peaks.get(measured) or 0
    if value > 0:
        return float(value), "measured"
    value = peaks.get(theoretical) or 0
    return (float(value), "theoretical") if value > 0 else (None, None)


def tensor_roof(doc, fp32):
    peaks = (doc.get("device") or {}).get("peaks") or {}
    if (peaks.get("tf32_gflops_theoretical") or 0) > 0:
        return float(peaks["tf32_gflops_theoretical"]), "TF32 tensor roof (theoretical)"
    factor = TF32_OVER_FP32.get(str((doc.get("device") or {}).get("compute_capability", "")))
    if factor and fp32:
        return fp32 * factor, f"TF32 tensor roof (estimated: {factor:g}× FP32 theoretical, datasheet ratio)"
    return None, None


def plot_roofline(docs, outdir, made):
    # One colour and one set of roofs per device (several files may come from one GPU),
    # one marker per variant.
    devices = {}
    for doc in docs:
        slug = (doc.get("device") or {}).get("slug") or device_name(doc)
        entry = devices.setdefault(slug, {"doc": doc, "points": []})
        for row in ok_rows(doc):
            ai = (row.get("metrics") or {}).get("arithmetic_intensity")
            if isinstance(ai, (int, float)) and ai > 0 and gops(row):
                entry["points"].append((float(ai), gops(row), row.get("variant", "")))
    devices = {slug: entry for slug, entry in devices.items() if entry["points"]}
    if not devices:
        return
    fig, ax = plt.subplots(figsize=(9, 6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    all_ai = [p[0] for e in devices.values() for p in e["points"]]
    all_gops = [p[1] for e in devices.values() for p in e["points"]]
    lo, hi = min(all_ai) / 4, max(all_ai) * 4
    markers = {}
    for index, entry in enumerate(devices.values()):
        doc, points = entry["doc"], entry["points"]
        color = colors[index % len(colors)]
        name = device_name(doc)
        peaks = (doc.get("device") or {}).get("peaks") or {}
        bandwidth, bw_kind = peak(peaks, "dram_read_gbps_measured", "dram_gbps_theoretical")
        fp32, fp_kind = peak(peaks, "fp32_gflops_measured", "fp32_gflops_theoretical")
        if bandwidth and fp32:
            ridge = fp32 / bandwidth
            x0, x1 = min(lo, ridge / 4), max(hi, ridge * 4)
            xs = [x0, ridge, x1]
            ax.plot(xs, [min(x * bandwidth, fp32) for x in xs], color=color, linewidth=1.5,
                    label=f"{name}: DRAM {bandwidth:.0f} GB/s ({bw_kind}), FP32 {fp32:.0f} G/s ({fp_kind})")
            if any("tf32" in v.lower() or "tensor" in v.lower() for _, _, v in points):
                theoretical_fp32 = peaks.get("fp32_gflops_theoretical") or fp32
                tensor, label = tensor_roof(doc, float(theoretical_fp32))
                if tensor:
                    ridge_t = tensor / bandwidth
                    xt = [x0, ridge_t, max(x1, ridge_t * 4)]
                    ax.plot(xt, [min(x * bandwidth, tensor) for x in xt], color=color,
                            linestyle=":", label=f"{name}: {label} {tensor:.0f} G/s")
        for ai, value, variant in points:
            marker = markers.setdefault(variant, "osD^v<>ph*"[len(markers) % 10])
            ax.plot([ai], [value], marker=marker, color=color, linestyle="none", alpha=0.85)
    for variant, marker in markers.items():
        ax.plot([], [], marker=marker, color="black", linestyle="none", label=variant)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(bottom=min(all_gops) / 2)
    ax.set_xlabel("arithmetic intensity (paper ops per byte of points read)")
    ax.set_ylabel("Gops/s")
    ax.set_title("Roofline: one point per result row (colour: device, marker: variant)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    save(fig, outdir, "roofline.png",
         "Roofline — memory and FP32 roofs from the device peaks (measured when present, else "
         "theoretical); dotted: TF32 tensor-core roof when a tensor variant is present. CPU "
         "baseline rows are drawn against the GPU's roofs only for scale.", made)


def case_label(row):
    key = problem_text(problem_key(row))
    dataset = row.get("dataset") or {}
    kind = dataset.get("generator") or dataset.get("kind") or ""
    return f"{key} {kind}".strip()


def plot_variant_bars(docs, outdir, made):
    for doc in docs:
        suite = doc.get("suite") or ""
        if suite != "table2" and "blobs" not in suite:
            continue
        cases, variants, best = [], [], {}
        for row in ok_rows(doc):
            case, variant = case_label(row), row.get("variant", "?")
            if case not in cases:
                cases.append(case)
            if variant not in variants:
                variants.append(variant)
            ms = median_ms(row)
            best[(case, variant)] = min(ms, best.get((case, variant), math.inf))
        if not cases:
            continue
        for part, start in enumerate(range(0, len(cases), CASES_PER_FIGURE)):
            chunk = cases[start:start + CASES_PER_FIGURE]
            fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(chunk) * max(1, len(variants)) / 2), 5.5))
            width = 0.8 / max(1, len(variants))
            for v_index, variant in enumerate(variants):
                xs, ys = [], []
                for c_index, case in enumerate(chunk):
                    if (case, variant) in best:
                        xs.append(c_index + (v_index - (len(variants) - 1) / 2) * width)
                        ys.append(best[(case, variant)])
                if xs:
                    ax.bar(xs, ys, width=width, label=variant)
            ax.set_xticks(range(len(chunk)))
            ax.set_xticklabels(chunk, rotation=30, ha="right", fontsize=8)
            ax.set_yscale("log")
            ax.set_ylabel("median time per iteration (ms, log scale)")
            ax.set_title(f"{suite} on {device_name(doc)}: time per variant and case")
            ax.grid(True, axis="y", which="both", alpha=0.3)
            ax.legend(fontsize=8)
            name = f"variants_{suite}_{part + 1}.png".replace("/", "_")
            save(fig, outdir, name,
                 f"{suite} ({device_name(doc)}) — median time per variant for each case "
                 f"(fastest parameters per variant), part {part + 1}.", made)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--in", dest="inputs", nargs="+", required=True, help="result files")
    parser.add_argument("--outdir", required=True, help="folder for the PNGs and manifest.json")
    parser.add_argument("--published", help="published seed Table 1 JSON (dashed line)")
    args = parser.parse_args()
    try:
        docs = [load(path) for path in args.inputs]
    except (OSError, ValueError) as error:
        print(f"plots.py: {error}", file=sys.stderr)
        return 2
    published = None
    if args.published:
        try:
            with open(args.published, encoding="utf-8") as handle:
                published = json.load(handle)
        except (OSError, ValueError) as error:
            print(f"plots.py: ignoring --published: {error}", file=sys.stderr)
    os.makedirs(args.outdir, exist_ok=True)
    made = []
    for plot in (lambda: plot_table1(docs, published, args.outdir, made),
                 lambda: plot_roofline(docs, args.outdir, made),
                 lambda: plot_variant_bars(docs, args.outdir, made)):
        try:
            plot()
        except Exception as error:  # one broken plot must not cost the others
            print(f"plots.py: a plot failed: {type(error).__name__}: {error}", file=sys.stderr)
    with open(os.path.join(args.outdir, "manifest.json"), "w", encoding="utf-8") as handle:
        json.dump({"plots": made}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
