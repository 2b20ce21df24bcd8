#!/usr/bin/env python3
"""Per-K curves of `mkbench fit` for `mkbench report fit.json --format html` (docs/fit.md).

    python3 reports/fit_plots.py --in fit.json [more.json ...] --outdir DIR

Writes one PNG per fit.json into DIR and DIR/manifest.json ({"plots": [{"file", "caption"}]}),
as reports/plots.py does for result files: inertia (with the kneedle elbow), silhouette,
Calinski-Harabasz and Davies-Bouldin against K, best_k marked on each. Needs matplotlib only.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (backend must be chosen first)

PANELS = [  # key in per_k, axis label, how to read it
    ("inertia", "inertia (Σ squared distance)", "falls with K; the elbow marks diminishing returns"),
    ("silhouette", "silhouette of the sample", "higher is better"),
    ("calinski_harabasz", "Calinski-Harabasz", "higher is better"),
    ("davies_bouldin", "Davies-Bouldin", "lower is better"),
]


def load(path):
    with open(path, encoding="utf-8") as handle:
        doc = json.load(handle)
    if doc.get("schema") != "mkbench.fit/1" or not isinstance(doc.get("per_k"), list):
        raise ValueError(f"{path}: not an mkbench.fit/1 file")
    return doc


def draw(doc, path, outdir, index, made):
    per_k = doc["per_k"]
    best, elbow = doc.get("best_k"), doc.get("elbow_k")
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for ax, (key, label, reading) in zip(axes.flat, PANELS):
        points = [(e["k"], e[key]) for e in per_k if isinstance(e.get(key), (int, float))]
        if points:
            ax.plot([k for k, _ in points], [v for _, v in points], marker="o", color="#2b6cb0")
        if isinstance(best, int):
            ax.axvline(best, color="#c53030", linestyle="--", label=f"best_k {best} ({doc.get('best_k_rule')})")
        if key == "inertia" and isinstance(elbow, int):
            ax.axvline(elbow, color="#2f855a", linestyle=":", label=f"elbow (kneedle) {elbow}")
        ax.set_xlabel("K")
        ax.set_ylabel(label)
        ax.set_title(f"{label}: {reading}", fontsize=10)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    device = (doc.get("device") or {}).get("name", "?")
    variant = (doc.get("variant") or {}).get("name", "?")
    fig.suptitle(f"mkbench fit: M={doc.get('m')} N={doc.get('n')}, {variant} on {device}")
    name = f"fit_{index + 1}.png"
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, name), dpi=110)
    plt.close(fig)
    made.append({"file": name, "caption": f"{os.path.basename(path)} — per-K curves: inertia with its elbow, "
                                          f"silhouette, Calinski-Harabasz and Davies-Bouldin; best_k dashed."})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--in", dest="inputs", nargs="+", required=True, help="fit.json files")
    parser.add_argument("--outdir", required=True, help="folder for the PNGs and manifest.json")
    args = parser.parse_args()
    try:
        docs = [(path, load(path)) for path in args.inputs]
    except (OSError, ValueError) as error:
        print(f"fit_plots.py: {error}", file=sys.stderr)
        return 2
    os.makedirs(args.outdir, exist_ok=True)
    made = []
    for index, (path, doc) in enumerate(docs):
        draw(doc, path, args.outdir, index, made)
    with open(os.path.join(args.outdir, "manifest.json"), "w", encoding="utf-8") as handle:
        json.dump({"plots": made}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
