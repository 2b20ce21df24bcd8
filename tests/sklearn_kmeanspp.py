#!/usr/bin/env python3
"""scikit-learn's greedy k-means++ and Lloyd, the reference of tests/test_seeding.cpp.

    sklearn_kmeanspp.py --export-digits OUT.npy
        writes sklearn's bundled digits (1797 x 64) as float32 .npy (a small real data set).
    sklearn_kmeanspp.py --data X.npy --k K --seeds S [--tol 1e-4] [--max-iter 300]
        prints JSON: per seed s in 0..S-1, the potential of sklearn.cluster.kmeans_plusplus
        (random_state=s) and the inertia after KMeans(init=those centres, n_init=1,
        algorithm="lloyd") to convergence, both in float64.

Needs python3-sklearn (scripts/setup.sh installs it).
"""
import argparse
import json
import os
import sys

# One thread: the fits are small, and OpenMP threads spinning on a shared CI machine cost 5x
# the CPU time of one thread (digits, 60 fits: 17 s against 3 s).
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402


def potential(x, centres):
    x = x.astype(np.float64)
    c = centres.astype(np.float64)
    nearest = np.full(len(x), np.inf)
    for centre in c:
        nearest = np.minimum(nearest, ((x - centre) ** 2).sum(1))
    return float(nearest.sum())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--export-digits")
    parser.add_argument("--data")
    parser.add_argument("--k", type=int)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--max-iter", type=int, default=300)
    args = parser.parse_args()

    if args.export_digits:
        from sklearn.datasets import load_digits
        np.save(args.export_digits, load_digits().data.astype(np.float32))
        return 0

    from sklearn.cluster import KMeans, kmeans_plusplus
    x = np.load(args.data)
    seeding, final = [], []
    for seed in range(args.seeds):
        centres, _ = kmeans_plusplus(x, args.k, random_state=seed)
        seeding.append(potential(x, centres))
        model = KMeans(n_clusters=args.k, init=centres, n_init=1, algorithm="lloyd", tol=args.tol,
                       max_iter=args.max_iter).fit(x)
        final.append(potential(x, model.cluster_centers_))
    json.dump({"seeding_potential": seeding, "final_inertia": final}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
