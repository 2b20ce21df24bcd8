#!/usr/bin/env python3
"""Plots for the report of `mkbench explore` (reports/explore_report.cpp; usable on its own).

    python3 reports/explore_plots.py --in explore.json --outdir DIR

Writes PNGs into DIR and DIR/manifest.json ({"plots": [{"file", "caption"}]}), the interface
of reports/plots.py, which the C++ report reads to embed the images. Input: the explore.json
of `mkbench explore` (schemas mkbench.explore/1 and /2, docs/explore.md).

  * accuracy_by_copy.png   every copy's majority-vote accuracy, copies sorted by it (seed 000's
                           Figure 5), with the all-attributes baseline and the largest class's
                           share as horizontal lines;
  * accuracy_histogram.png the distribution of the copies' accuracy;
  * attributes.png         each attribute's mean accuracy over the copies that hold it.

Needs matplotlib only (Agg backend, no display).
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (backend must be chosen first)


def load(path):
    with open(path, encoding="utf-8") as handle:
        doc = json.load(handle)
    if doc.get("schema") not in ("mkbench.explore/1", "mkbench.explore/2"):
        raise ValueError(f"{path}: not an mkbench.explore/1 or /2 file")
    return doc


def reference_lines(axis, doc, horizontal=True):
    lines = [("majority class", doc.get("majority_class_share"), "#718096", ":")]
    baseline = doc.get("baseline")
    if baseline:
        lines.append((f"all {baseline['attributes']} attributes", baseline["accuracy"], "#c53030", "--"))
    for label, value, colour, style in lines:
        if value is None:
            continue
        if horizontal:
            axis.axhline(100 * value, color=colour, linestyle=style, label=f"{label}: {100 * value:.2f} %")
        else:
            axis.axvline(100 * value, color=colour, linestyle=style, label=f"{label}: {100 * value:.2f} %")


def title(doc):
    options = doc["options"]
    return (f"{doc['summary']['copies']} copies of {options['subset_size']} attributes, k={options['k']}, "
            f"{doc['dataset']['m']} rows ({options['dataset']})")


def plot_by_copy(doc, outdir):
    accuracy = sorted(100 * a for a in doc["accuracy_by_copy"])
    figure, axis = plt.subplots(figsize=(9, 4.5))
    axis.plot(range(len(accuracy)), accuracy, ".", markersize=2, color="#2b6cb0", label="copies (sorted)")
    reference_lines(axis, doc)
    axis.set_xlabel("copies, sorted by accuracy")
    axis.set_ylabel("majority-vote accuracy (%)")
    axis.set_title(title(doc), fontsize=9)
    axis.legend(fontsize=8, loc="lower right")
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(os.path.join(outdir, "accuracy_by_copy.png"), dpi=110)
    plt.close(figure)
    return {"file": "accuracy_by_copy.png",
            "caption": "Every copy's majority-vote accuracy, sorted (seed 000, Figure 5), with the "
                       "all-attributes baseline and the largest class's share"}


def plot_histogram(doc, outdir):
    accuracy = [100 * a for a in doc["accuracy_by_copy"]]
    figure, axis = plt.subplots(figsize=(9, 4))
    axis.hist(accuracy, bins=min(60, max(10, len(accuracy) // 20)), color="#2b6cb0", alpha=0.85)
    reference_lines(axis, doc, horizontal=False)
    axis.set_xlabel("majority-vote accuracy (%)")
    axis.set_ylabel("copies")
    axis.set_title(title(doc), fontsize=9)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(os.path.join(outdir, "accuracy_histogram.png"), dpi=110)
    plt.close(figure)
    return {"file": "accuracy_histogram.png", "caption": "Distribution of the copies' accuracy"}


def plot_attributes(doc, outdir):
    rows = [r for r in doc["attributes"] if r["copies"] > 0]
    if not rows:
        return None
    figure, axis = plt.subplots(figsize=(max(6, 0.35 * len(rows) + 2), 4))
    roles = [r.get("role", "") for r in rows]
    colours = ["#c05621" if role == "informative" else "#d69e2e" if role.startswith("correlated") else "#2b6cb0"
               for role in roles]
    axis.bar([str(r["attribute"]) for r in rows], [100 * r["mean"] for r in rows], color=colours)
    low = min(100 * r["mean"] for r in rows)
    high = max(100 * r["mean"] for r in rows)
    axis.set_ylim(low - 0.1 * (high - low + 1), high + 0.1 * (high - low + 1))
    axis.set_xlabel("attribute" + (" (orange: informative, yellow: correlated, by the generator)" if any(roles) else ""))
    axis.set_ylabel("mean accuracy of its copies (%)")
    axis.tick_params(axis="x", labelsize=7)
    figure.tight_layout()
    figure.savefig(os.path.join(outdir, "attributes.png"), dpi=110)
    plt.close(figure)
    return {"file": "attributes.png", "caption": "Each attribute's mean accuracy over the copies that hold it"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--in", dest="inputs", nargs="+", required=True)
    parser.add_argument("--outdir", required=True)
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    doc = load(args.inputs[0])
    plots = [plot_by_copy(doc, args.outdir), plot_histogram(doc, args.outdir), plot_attributes(doc, args.outdir)]
    with open(os.path.join(args.outdir, "manifest.json"), "w", encoding="utf-8") as handle:
        json.dump({"plots": [p for p in plots if p]}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
