"""mkbench.run: `mkbench run` for one variant from Python, its result row as a dict.

The C++ side runs the CLI's own command (harness/cli_run.cpp), so a row from a notebook is the
row the CLI writes for the same arguments: timing, parameters, memory plan, --verify.
"""
import json
import numbers
import os
import tempfile

import numpy as np

from mkbench import _core
from mkbench.kmeans import _on_device


def _count_text(value, name):
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or a count such as '32M', got {type(value).__name__}")
    return str(value)


def _k_text(k):
    if isinstance(k, range):
        if k.step != 1 or len(k) == 0:
            raise ValueError(f"k must be a non-empty range with step 1, got {k!r}")
        return f"{k.start}..{k.stop - 1}"
    return _count_text(k, "k")


def run(variant="auto", dims=None, k="3..7", points=None, *, data=None, iters=20, warmup=3, verify=False,
        dataset="uniform", seed=42, init="first", params=None, device=0, tuned=True, batch=1):
    """Measure one variant on one problem, as `mkbench run --variant VARIANT ...`.

    k: an int, "A..B" or range(A, B + 1); points: an int or a count ("32M"); dims and points
    default to 8 and 1M. data: an M x N host array to measure on instead of a generated data set
    (it sets dims and points; it is written to a temporary .npy that run reads, as `mkbench run
    --dataset npy:PATH`); params: a dict of the variant's tunables (--param key=value); device:
    an ordinal or run's --device text ("0,1", "all", "cpu"); batch: B independent problems of
    `points` points each in one row (--batch B, docs/batched.md), or given by data of shape
    B x M x N. Returns the result row (the "rows"
    entry of the mkbench.results document) as a dict; its "verify" says whether --verify
    passed. A refused row or bad input raises ValueError, a CUDA failure RuntimeError.
    """
    if not isinstance(variant, str) or "," in variant:
        raise ValueError(f"variant must be one name (or auto), got {variant!r}")
    assignments = [f"{key}={value}" for key, value in (params or {}).items()]
    if isinstance(batch, bool) or not isinstance(batch, numbers.Integral):
        raise TypeError(f"batch must be an int, got {type(batch).__name__}")
    batch = int(batch)
    if data is None:
        dims = 8 if dims is None else dims
        points = "1M" if points is None else points
        return _run_row(variant, int(dims), k, _count_text(points, "points"), iters, warmup, verify, dataset, seed,
                        init, assignments, device, tuned, batch)
    if _on_device(data):
        raise TypeError("data must be a host array (run reads it from a .npy file): copy a device array with "
                        "cupy.asnumpy(X) or X.cpu().numpy()")
    array = np.asarray(data)
    if array.ndim == 3:  # B problems of M x N points, one after another
        if batch not in (1, array.shape[0]):
            raise ValueError(f"batch={batch} disagrees with data, which holds {array.shape[0]} problems")
        batch = array.shape[0]
        array = array.reshape(array.shape[0] * array.shape[1], array.shape[2])
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
        raise ValueError(f"data must be a 2-D array of points (M x N), or 3-D (B x M x N), got shape {array.shape}")
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise ValueError(f"data must hold numbers, got dtype {array.dtype}")
    m, n = array.shape
    if batch > 1 and m % batch != 0:
        raise ValueError(f"batch={batch} does not divide data, which has {m} rows (each problem takes an equal share)")
    if dims is not None and int(dims) != n:
        raise ValueError(f"dims={dims} disagrees with data, which has {n} columns")
    if points is not None and _count_text(points, "points") != str(m // max(batch, 1)):
        raise ValueError(f"points={points!r} disagrees with data, which has {m // max(batch, 1)} rows a problem")
    if dataset != "uniform":
        raise ValueError("pass data or dataset, not both")
    with tempfile.TemporaryDirectory(prefix="mkbench-run-") as folder:
        path = os.path.join(folder, "data.npy")
        np.save(path, np.ascontiguousarray(array, dtype=np.float32))
        # the CLI checks that the batch divides the rows
        return _run_row(variant, n, k, str(m // max(batch, 1)), iters, warmup, verify, f"npy:{path}", seed, init,
                        assignments, device, tuned, batch)


def _run_row(variant, dims, k, points, iters, warmup, verify, dataset, seed, init, assignments, device, tuned, batch):
    text = _core.run(variant, int(dims), _k_text(k), points, int(iters), int(warmup), bool(verify), dataset,
                     int(seed), init, assignments, str(device), bool(tuned), int(batch))
    return json.loads(text)["rows"][0]


def suite(name, *, variants=None, quick=False, device=0, verify=False, tuned=True):
    """Run a benchmark suite, as `mkbench suite NAME ...`, and return its results document.

    name: an embedded suite (`mkbench list`) or a suite file's path; variants: only these
    (a list, or one comma-separated string); quick: --quick's reduced sizes; device: an ordinal
    or --device's text ("0,1", "all", "cpu"); verify: check every row against the FP64
    reference (--verify); tuned=False: --no-tuned. Without a GPU the GPU cases run the suite's
    CPU fallback, as the CLI does. Returns the mkbench.results document (its "rows" are
    run's rows). A failed verification is in the rows' "verify" (the CLI's exit 5); bad input
    raises ValueError; a row that failed on the device raises RuntimeError, whose `document`
    attribute holds the rows measured (the CLI's exit 4).
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a suite name or a suite file's path, got {name!r}")
    if variants is None:
        names = []
    elif isinstance(variants, str):
        names = [part for part in variants.split(",") if part]
    else:
        names = [str(part) for part in variants]
    code, text = _core.suite(name, names, bool(quick), str(device), bool(verify), bool(tuned))
    document = json.loads(text) if text else None
    if code in (0, 5):
        return document
    if code == 2:
        raise ValueError(f"suite {name}: bad input (exit 2); see the message above")
    failed = [f"{row['name']}: {row.get('reason', '')}" for row in (document or {}).get("rows", [])
              if row.get("status") == "failed"]
    error = RuntimeError(f"suite {name}: exit {code}" + (": " + "; ".join(failed) if failed else ""))
    error.document = document
    raise error
