"""mkbench.run: `mkbench run` for one variant from Python, its result row as a dict.

The C++ side runs the CLI's own command (harness/cli_run.cpp), so a row from a notebook is the
row the CLI writes for the same arguments: timing, parameters, memory plan, --verify.
"""
import json

from mkbench import _core


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


def run(variant="auto", dims=8, k="3..7", points="1M", *, iters=20, warmup=3, verify=False,
        dataset="uniform", seed=42, init="first", params=None, device=0, tuned=True):
    """Measure one variant on one problem, as `mkbench run --variant VARIANT ...`.

    k: an int, "A..B" or range(A, B + 1); points: an int or a count ("32M"); params: a dict of
    the variant's tunables (--param key=value); device: an ordinal or run's --device text ("0,1",
    "all", "cpu"). Returns the result row (the "rows" entry of the
    mkbench.results document) as a dict; its "verify" says whether --verify passed. A refused
    row or bad input raises ValueError, a CUDA failure RuntimeError.
    """
    if not isinstance(variant, str) or "," in variant:
        raise ValueError(f"variant must be one name (or auto), got {variant!r}")
    assignments = [f"{key}={value}" for key, value in (params or {}).items()]
    text = _core.run(variant, int(dims), _k_text(k), _count_text(points, "points"), int(iters), int(warmup),
                     bool(verify), dataset, int(seed), init, assignments, str(device), bool(tuned))
    return json.loads(text)["rows"][0]
