#!/usr/bin/env python3
"""`mkbench fit` against scikit-learn, computed here from the same data and initial centroids.

    fit_vs_sklearn.py MKBENCH VARIANT

For each case, `mkbench fit --init npy:C0 --variant VARIANT --out DIR` runs on data this script
draws with numpy, and scikit-learn's KMeans(algorithm="lloyd", init=C0[:k], n_init=1,
max_iter=I, tol=T) runs per K on the same points (in float64: the reference). Checks:
  * centroids within --verify's centroid tolerance (harness/reference.hpp: every coordinate within
    1e-4 of the data's standard deviation in its dimension plus one FP32 ULP of the value), labels
    equal except near ties;
  * the steps each K ran equal sklearn's n_iter_ (tol 0 and tol 1e-4);
  * --empty farthest against sklearn's own relocation of an empty cluster;
  * inertia, Calinski-Harabasz, Davies-Bouldin and the silhouette (the whole data set is the
    sample: M is below the default sample size) against sklearn.metrics on the fit's labels;
  * the files: fit.json, centroids_k<K>.npy float32 K x N, labels_k<K>.npy int32 M.
Exit 0: every case passed; 1: a check failed; 77: skipped (a GPU variant without a CUDA GPU, or no
scikit-learn).
A case the variant refuses (a shape outside can_implement) is reported; none running fails.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

SKIP = 77
try:
    from sklearn.cluster import KMeans
    from sklearn.metrics import calinski_harabasz_score, davies_bouldin_score, silhouette_score
except ImportError as error:  # a skip, not a pass: ctest reports it with this message
    print(f"no scikit-learn in {sys.executable} ({error}): install python3-sklearn (scripts/setup.sh does)")
    sys.exit(SKIP)

CENTROID_SPREAD = 1e-4  # harness/reference.hpp Tolerances::centroid_spread (x the data's sd per dimension)
CENTROID_ULPS = 1.0     # Tolerances::centroid_ulps (x the FP32 spacing at the expected value)
TIE_RELATIVE = 1e-4       # a label may differ where its two squared distances are this close

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("  FAIL", message)
    return condition


def blobs(rng, m, n, centers, spread, box=10.0):
    middles = rng.uniform(-box, box, size=(centers, n))
    which = rng.integers(0, centers, size=m)
    return (middles[which] + rng.normal(0.0, spread, size=(m, n))).astype(np.float32)


def save(path, array):
    np.save(path, array)
    return path


def run_fit(mkbench, variant, data_path, init_path, k, max_iter, tol, empty, out):
    command = [mkbench, "fit", "--dataset", "npy:" + data_path, "--k", k, "--init", "npy:" + init_path,
               "--max-iter", str(max_iter), "--tol", repr(tol), "--empty", empty, "--variant", variant,
               "--out", out, "--quiet", "--no-tuned"]
    return subprocess.run(command, capture_output=True, text=True)


def near_tie(x, centers, a, b):
    da = float(np.sum((x - centers[a]) ** 2))
    db = float(np.sum((x - centers[b]) ** 2))
    return abs(da - db) <= TIE_RELATIVE * max(da, db, 1e-30)


def compare_k(name, X64, init, k, max_iter, tol, out, entry):
    ref = KMeans(n_clusters=k, init=init[:k].astype(np.float64), n_init=1, max_iter=max_iter, tol=tol,
                 algorithm="lloyd").fit(X64)
    centroids = np.load(os.path.join(out, entry["centroids_file"]))
    labels = np.load(os.path.join(out, entry["labels_file"]))
    check(centroids.dtype == np.float32 and centroids.shape == (k, X64.shape[1]),
          f"{name} k={k}: centroids file is {centroids.dtype} {centroids.shape}")
    check(labels.dtype == np.int32 and labels.shape == (X64.shape[0],),
          f"{name} k={k}: labels file is {labels.dtype} {labels.shape}")
    allowed = CENTROID_SPREAD * X64.std(axis=0) + CENTROID_ULPS * np.spacing(
        np.abs(ref.cluster_centers_).astype(np.float32)).astype(np.float64)
    # The error in units of the allowance: at most 1 passes.
    error = float(np.max(np.abs(centroids.astype(np.float64) - ref.cluster_centers_) / allowed))
    check(error <= 1.0, f"{name} k={k}: centroid error {error:.3g} x the allowed (1e-4 sd + 1 ULP)")
    mismatched = np.nonzero(labels != ref.labels_)[0]
    ties = sum(near_tie(X64[i], ref.cluster_centers_, labels[i], ref.labels_[i]) for i in mismatched)
    check(len(mismatched) == ties,
          f"{name} k={k}: {len(mismatched) - ties} labels differ from sklearn's (not near ties; {ties} ties)")
    check(entry["iterations"] == ref.n_iter_,
          f"{name} k={k}: {entry['iterations']} steps, sklearn's n_iter_ is {ref.n_iter_}")
    print(f"  {name} k={k}: steps {entry['iterations']} (sklearn {ref.n_iter_}), centroid error {error:.2e} x allowed, "
          f"labels differing {len(mismatched)} (near ties {ties})")
    return labels, centroids


def compare_metrics(name, X64, k, labels, centroids, entry):
    inertia = float(np.sum((X64 - centroids.astype(np.float64)[labels]) ** 2))
    check(abs(entry["inertia"] - inertia) <= 1e-5 * inertia,
          f"{name} k={k}: inertia {entry['inertia']} against {inertia} from its own files")
    if len(np.unique(labels)) < 2:
        return
    expected = {"calinski_harabasz": calinski_harabasz_score(X64, labels),
                "davies_bouldin": davies_bouldin_score(X64, labels),
                "silhouette": silhouette_score(X64, labels)}
    for key, value in expected.items():
        got = entry[key]
        ok = got is not None and abs(got - value) <= 1e-5 * max(1.0, abs(value))
        check(ok, f"{name} k={k}: {key} {got} against sklearn's {value}")
    print(f"  {name} k={k}: inertia, Calinski-Harabasz {expected['calinski_harabasz']:.2f}, Davies-Bouldin "
          f"{expected['davies_bouldin']:.4f}, silhouette {expected['silhouette']:.4f} agree with sklearn")


def shapes(rng):
    """The data sets and their cases: (name, float32 points, [(case, K range, max_iter, tol, init,
    empty policy, check the metrics)]). Two shapes, so that every variant runs some case: N=5 with a
    K range (the multi-K variants; warp-centric needs N >= 16, tf32-window one K >= 64), and
    N=16 with K=64 (every variant)."""
    m, n = 3000, 5
    X = blobs(rng, m, n, centers=5, spread=1.5)
    kmax = 6
    # Distinct data points: each starting centroid has at least its own point, so no cluster
    # starts empty.
    init = X[rng.choice(m, size=kmax, replace=False)]
    # One starting centroid far from every point: it empties in the first step, and the
    # farthest point moves to it (sklearn's relocation) for every K of the range.
    far_init = init.copy()
    far_init[1] = 1000.0
    narrow = [
        ("five-steps", "3..6", 5, 0.0, init, "keep", False),
        ("to-convergence", "3..6", 300, 0.0, init, "keep", True),
        ("tol-1e-4", "3..6", 300, 1e-4, init, "keep", False),
        ("one-k", "4", 300, 0.0, init, "keep", True),
        ("empty-farthest", "2..5", 20, 0.0, far_init, "farthest", False),
    ]
    m, n, k = 6000, 16, 64
    W = blobs(rng, m, n, centers=24, spread=3.0)
    wide_init = W[rng.choice(m, size=k, replace=False)]
    wide = [
        ("five-steps", str(k), 5, 0.0, wide_init, "keep", False),
        ("to-convergence", str(k), 300, 0.0, wide_init, "keep", True),
        ("tol-1e-4", str(k), 300, 1e-4, wide_init, "keep", False),
    ]
    return [("n5", X, narrow), ("n16-k64", W, wide)]


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    mkbench, variant = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(20261126)
    ran = 0
    total = 0
    with tempfile.TemporaryDirectory(prefix="fit-vs-sklearn-") as folder:
        for shape, X, cases in shapes(rng):
            X64 = X.astype(np.float64)
            data_path = save(os.path.join(folder, shape + ".npy"), X)
            for name, k_range, max_iter, tol, start, empty, metrics in cases:
                total += 1
                name = f"{shape} {name}"
                init_path = save(os.path.join(folder, name.replace(" ", "-") + "-init.npy"),
                                 start[:int(k_range.split("..")[-1])])
                out = os.path.join(folder, name.replace(" ", "-"))
                result = run_fit(mkbench, variant, data_path, init_path, k_range, max_iter, tol, empty, out)
                if result.returncode == 3 and "needs a CUDA GPU" in result.stderr:
                    print(f"no CUDA GPU: {variant} skipped ({result.stderr.strip()})")
                    return SKIP
                if result.returncode == 3:
                    print(f"  {name}: {variant} refused the shape: {result.stderr.strip()}")
                    continue
                if not check(result.returncode == 0, f"{name}: mkbench fit exit {result.returncode}: {result.stderr}"):
                    continue
                ran += 1
                with open(os.path.join(out, "fit.json"), encoding="utf-8") as handle:
                    doc = json.load(handle)
                check(doc["schema"] == "mkbench.fit/1", f"{name}: schema {doc.get('schema')}")
                check(doc["variant"]["name"] == variant, f"{name}: ran {doc['variant']['name']}, not {variant}")
                ks = [entry["k"] for entry in doc["per_k"]]
                check(doc["best_k"] is None or doc["best_k"] in ks, f"{name}: best_k {doc['best_k']} not in {ks}")
                check(bool(doc["best_k_rule"]), f"{name}: fit.json names no best_k rule")
                for entry in doc["per_k"]:
                    k = entry["k"]
                    labels, centroids = compare_k(name, X64, start, k, max_iter, tol, out, entry)
                    if empty == "farthest":
                        check(len(np.unique(labels)) == k, f"{name} k={k}: a cluster stayed empty")
                    if metrics:
                        compare_metrics(name, X64, k, labels, centroids, entry)
    if not check(ran > 0, f"{variant} ran none of the cases"):
        pass
    print(f"fit_vs_sklearn {variant}: {ran} of {total} cases ran, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
