"""mkbench.KMeans(K).fit(X) against scikit-learn's KMeans on the same problem (issue 36's goal).

X is an M x N float32 C-contiguous array of uniform [0, 1) values (numpy's default_rng(seed)),
and both estimators start from the same K initial centres (K distinct rows drawn with the same
seed), n_init=1, tol=0 and the same max_iter, so both run the same Lloyd steps: sklearn with
algorithm="lloyd" on every core of the machine (its OpenMP threads), mkbench on the GPU's
automatic variant (cpu-openmp without a GPU). Times are wall-clock seconds of the whole fit
call, the host->device copy of the points included for mkbench:

  - sklearn: one fit (it is the slow side; --sklearn-iters bounds it, and mkbench runs the same
    count, so the ratio compares equal work);
  - mkbench: a first fit (CUDA context, runtime compilation, tuned-config lookup) and then
    --repeats more; the ratio uses their median, the first is reported beside it;
  - on a GPU with CuPy, also mkbench from a CuPy copy of X (made outside the timing): the same
    fit without the host->device copy (reported beside, not in the ratio).

The Python overhead of a mkbench fit is its wall time minus the C++ module's own total
(KMeans.fit_seconds_["total"]: from entry to the answer's arrays, the staging copy, the
upload, seeding, the iterations and the final labels included).

Writes --out atomically (a temporary file beside it, then a rename) and prints a short table.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np


def count(text):
    """'10M' -> 10_000_000 (decimal, as the issue states its goal), '4096' -> 4096."""
    text = str(text).strip().upper()
    scale = {"K": 10**3, "M": 10**6, "G": 10**9}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def write_atomically(path, document):
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=folder, prefix=".bench-", suffix=".json", delete=False) as tmp:
        json.dump(document, tmp, indent=2)
        tmp.write("\n")
    os.chmod(tmp.name, 0o644)
    os.replace(tmp.name, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", default="10M", help="M (decimal suffixes K, M, G; default 10M)")
    parser.add_argument("--dims", type=int, default=32, help="N (default 32)")
    parser.add_argument("--k", type=int, default=8, help="K (default 8)")
    parser.add_argument("--sklearn-iters", type=int, default=20,
                        help="max_iter of both fits, at tol 0 (default 20: bounds sklearn's side)")
    parser.add_argument("--repeats", type=int, default=5, help="mkbench fits after the first (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variant", default="auto", help="mkbench's variant (default auto)")
    parser.add_argument("--skip-sklearn", action="store_true", help="time mkbench only (a quick check)")
    parser.add_argument("--out", required=True, help="results JSON, written atomically")
    args = parser.parse_args()

    import sklearn
    from sklearn.cluster import KMeans as SkKMeans
    from threadpoolctl import threadpool_info

    import mkbench

    m, n, k = count(args.points), args.dims, args.k
    if m < k or n < 1 or k < 1 or args.sklearn_iters < 1 or args.repeats < 1:
        sys.exit(f"bad problem: M={m} N={n} K={k} iters={args.sklearn_iters} repeats={args.repeats}")
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    X = rng.random((m, n), dtype=np.float32)  # C-contiguous float32
    generate_seconds = time.perf_counter() - start
    init = X[np.sort(rng.choice(m, size=k, replace=False))].copy()
    common = dict(init=init, n_init=1, max_iter=args.sklearn_iters, tol=0.0)

    def fit_mkbench():
        model = mkbench.KMeans(k, variant=args.variant, **common)
        begin = time.perf_counter()
        model.fit(X)
        wall = time.perf_counter() - begin
        return model, wall

    first, first_wall = fit_mkbench()
    fits = [fit_mkbench() for _ in range(args.repeats)]
    walls = [wall for _, wall in fits]
    overheads_ms = [(wall - model.fit_seconds_["total"]) * 1e3 for model, wall in fits]
    model = fits[-1][0]
    mkbench_seconds = statistics.median(walls)

    document = {
        "schema": "mkbench.python-bench/1",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "problem": {"m": m, "n": n, "k": k, "dtype": "float32", "order": "C", "data": "uniform [0,1)",
                    "seed": args.seed, "max_iter": args.sklearn_iters, "tol": 0.0, "n_init": 1,
                    "init": "the same K distinct rows (drawn with the seed) for both"},
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "sklearn": sklearn.__version__,
                    "gpus": mkbench.gpu_count()},
        "data_generation_seconds": generate_seconds,
        "mkbench": {
            "variant": model.variant_, "device": model.device_, "n_iter": model.n_iter_,
            "inertia": model.inertia_,
            "first_fit_seconds": first_wall,
            "fit_seconds": walls, "median_fit_seconds": mkbench_seconds,
            "cxx_seconds": model.fit_seconds_,
            # Each fit's split: the walls vary by tens of percent between fits of one process, and
            # the medians per part say which part varies.
            "cxx_seconds_each": [dict(fit.fit_seconds_) for fit, _ in fits],
            "median_cxx_seconds": {key: statistics.median(fit.fit_seconds_.get(key, 0.0) for fit, _ in fits)
                                   for key in model.fit_seconds_},
            "python_overhead_ms": overheads_ms, "median_python_overhead_ms": statistics.median(overheads_ms),
        },
    }
    if mkbench.gpu_count():
        # The same fit from a CuPy copy of X (made before the timing): no host->device copy in
        # the fit, the points consumed on the device (docs/python.md, "Device arrays").
        try:
            import cupy
            device_X = cupy.asarray(X)
            cupy.cuda.runtime.deviceSynchronize()
            device_walls = []
            for _ in range(args.repeats + 1):
                device_model = mkbench.KMeans(k, variant=args.variant, **common)
                begin = time.perf_counter()
                device_model.fit(device_X)
                device_walls.append(time.perf_counter() - begin)
            document["mkbench_device_array"] = {
                "variant": device_model.variant_, "n_iter": device_model.n_iter_,
                "inertia": device_model.inertia_, "first_fit_seconds": device_walls[0],
                "median_fit_seconds": statistics.median(device_walls[1:]),
                "cxx_seconds": device_model.fit_seconds_}
            del device_X
        except Exception as error:  # CuPy missing, or the device path refused: say so in the file
            document["mkbench_device_array"] = {"error": f"{error.__class__.__name__}: {error}"}
    if not args.skip_sklearn:
        theirs = SkKMeans(k, algorithm="lloyd", **common)
        begin = time.perf_counter()
        theirs.fit(X)
        sklearn_seconds = time.perf_counter() - begin
        threads = sorted({info.get("num_threads") for info in threadpool_info() if info.get("user_api") == "openmp"})
        differ = int((theirs.labels_ != model.labels_).sum())
        document["sklearn"] = {"seconds": sklearn_seconds, "n_iter": int(theirs.n_iter_),
                               "inertia": float(theirs.inertia_), "openmp_threads": threads}
        document["agreement"] = {
            "max_centre_difference": float(np.abs(theirs.cluster_centers_ - model.cluster_centers_).max()),
            "inertia_ratio": model.inertia_ / float(theirs.inertia_),
            "labels_differing": differ, "same_n_iter": int(theirs.n_iter_) == model.n_iter_,
        }
        document["speedup"] = sklearn_seconds / mkbench_seconds
        document["speedup_first_fit"] = sklearn_seconds / first_wall
    write_atomically(args.out, document)

    mk = document["mkbench"]
    print(f"M={m} N={n} K={k} float32, {args.sklearn_iters} Lloyd steps at tol 0 from the same centres")
    print(f"{'side':<10} {'seconds':>10} {'n_iter':>7}  detail")
    if "sklearn" in document:
        sk = document["sklearn"]
        print(f"{'sklearn':<10} {sk['seconds']:>10.3f} {sk['n_iter']:>7}  {os.cpu_count()} cores, "
              f"OpenMP threads {sk['openmp_threads']}")
    print(f"{'mkbench':<10} {mkbench_seconds:>10.4f} {mk['n_iter']:>7}  {mk['variant']} on {mk['device']}, "
          f"median of {args.repeats} (first fit {first_wall:.3f} s)")
    print("mkbench fits (s): " + ", ".join(f"{wall:.4f}" for wall in mk["fit_seconds"]))
    seconds = mk["median_cxx_seconds"]
    print("mkbench C++ seconds (median per part over the fits): " +
          ", ".join(f"{key} {value:.4f}" for key, value in sorted(seconds.items())))
    for key in ("upload", "iterations", "labels", "total"):
        if all(key in each for each in mk["cxx_seconds_each"]):
            print(f"  {key:<10} " + " ".join(f"{each[key] * 1e3:6.1f}" for each in mk["cxx_seconds_each"]) + "  ms")
    print(f"python overhead: {mk['median_python_overhead_ms']:.3f} ms (median; wall minus the C++ total)")
    if "speedup" in document:
        agreement = document["agreement"]
        print(f"speedup: {document['speedup']:.1f}x (first fit {document['speedup_first_fit']:.1f}x); "
              f"centres differ by {agreement['max_centre_difference']:.2e}, inertia ratio "
              f"{agreement['inertia_ratio']:.6f}, {agreement['labels_differing']} labels differ")
    device = document.get("mkbench_device_array")
    if device and "error" in device:
        print(f"mkbench from a CuPy array: {device['error']}")
    elif device:
        print(f"mkbench from a CuPy array: {device['median_fit_seconds']:.4f} s ({device['variant']}, "
              f"{device['n_iter']} steps, no host->device copy)")
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()
