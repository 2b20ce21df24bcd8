#!/usr/bin/env python3
"""scikit-learn's KMeans as colour quantization, the reference of tests/test_quantize.cpp.

    sklearn_quantize.py --pixels X.npy --init C.npy --max-iter N
        X: the image's RGB values (M x 3 float32, 0..255); C: the initial palette (K x 3).
        Runs KMeans(init=C, n_init=1, max_iter=N, tol=0, algorithm="lloyd") in float64,
        rounds the centres to bytes as mkbench quantize does (nearest, halves away from zero,
        clamped to 0..255), re-colours the pixels and prints JSON: the PSNR over the RGB
        channels (null when lossless), the inertia, the iterations and the smallest cluster.

Needs python3-sklearn (scripts/setup.sh installs it).
"""
import argparse
import json
import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402
from sklearn.cluster import KMeans  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pixels", required=True)
    parser.add_argument("--init", required=True)
    parser.add_argument("--max-iter", type=int, required=True)
    args = parser.parse_args()
    x = np.load(args.pixels).astype(np.float64)
    init = np.load(args.init).astype(np.float64)
    fit = KMeans(n_clusters=len(init), init=init, n_init=1, max_iter=args.max_iter, tol=0.0,
                 algorithm="lloyd").fit(x)
    palette = np.clip(np.floor(fit.cluster_centers_ + 0.5), 0, 255)
    recoloured = palette[fit.labels_]
    mse = float(np.mean((recoloured - x) ** 2))
    counts = np.bincount(fit.labels_, minlength=len(init))
    print(json.dumps({
        "psnr_db": None if mse == 0 else float(10 * np.log10(255.0 ** 2 / mse)),
        "inertia": float(fit.inertia_),
        "n_iter": int(fit.n_iter_),
        "smallest_cluster": int(counts.min()),
    }))


if __name__ == "__main__":
    main()
