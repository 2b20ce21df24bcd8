#!/usr/bin/env python3
"""Write `auto`'s measured order into a device's tuned configuration (issue 32: auto's choice
from measurements, not a rule of thumb).

Reads mkbench results files (`mkbench run`/`--suite` JSON, e.g. the auto-check stage's
mainstream suite, the kernels suite) of one GPU and, for every shape (N, K range, M) with at least
two dense GPU variants measured, records each variant's smallest median in the configuration's
"auto" table (tuner/config.hpp, AutoMeasurement). `auto` then tries, for a problem, the variants
of the closest measured shape of its bucket fastest first (variants/auto_select.cpp), and the built-in order
after them; the table applies only within a measured shape's bucket (tuner/buckets.hpp). Rows
that did not run, failed --verify, are `auto`'s own, csr-sparse's (chosen by sparsity, not by
speed), a CPU variant's (not timed by CUDA events) or on a generator's data with exact zeros
(`zeros=`) are left out. A shape already in the table is replaced; the others stay. The file is
written atomically and keeps its permissions.

  scripts/fit-auto-table.py --config configs/<device-slug>.json RESULTS.json...

A missing configuration is created with the results' device. Exit 0 on success, 2 on bad input
(an unreadable file, results of another device than the configuration's, a configuration whose
"auto" key is malformed, no usable shape).
"""
import argparse
import json
import os
import sys
import tempfile

SCHEMA = "mkbench.tuned-config/1"
LEFT_OUT = {"auto", "csr-sparse", "cpu-openmp"}


def fail(message):
    print("fit-auto-table: " + message, file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail("cannot read %s: %s" % (path, e))


def dense(row):
    params = (row.get("dataset") or {}).get("params") or {}
    try:
        return float(params.get("zeros", 0) or 0) == 0
    except (TypeError, ValueError):
        return False


def usable(row):
    if row.get("status") != "ok" or row.get("variant") in LEFT_OUT or not dense(row):
        return False
    if (row.get("timing") or {}).get("clock") != "cuda-event":
        return False
    verify = row.get("verify")
    if isinstance(verify, dict) and verify.get("passed") is False:
        return False
    median = (row.get("summary") or {}).get("median_ms")
    p = row.get("problem") or {}
    shape_ok = all(isinstance(p.get(key), int) and p.get(key) > 0 for key in ("n", "k_min", "k_max", "m"))
    # A batch's row times B problems' runs together (docs/batched.md); auto chooses for one
    # problem, so only single problems fit its table.
    single = p.get("batch", 1) == 1
    return shape_ok and single and isinstance(median, (int, float)) and median > 0


def shape_of(row):
    p = row["problem"]
    return (p["n"], p["k_min"], p["k_max"], p["m"])


def write_atomically(path, text):
    folder = os.path.dirname(os.path.abspath(path))
    mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o644
    fd, temp = tempfile.mkstemp(dir=folder, prefix=".fit-auto-table-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="configs/<device-slug>.json (created when missing)")
    parser.add_argument("results", nargs="+", help="mkbench results JSON files of one GPU")
    args = parser.parse_args()

    times, sources, device, slug = {}, {}, None, None
    for path in args.results:
        document = load(path)
        if not isinstance(document, dict) or not isinstance(document.get("rows"), list):
            fail("%s is not a results file (no 'rows' list)" % path)
        this_device = document.get("device") or {}
        this_slug = this_device.get("slug")
        if not this_slug:
            fail("%s names no device slug" % path)
        if slug is not None and this_slug != slug:
            fail("%s is from %s, the other results from %s: one device a table" % (path, this_slug, slug))
        slug, device = this_slug, this_device
        sha = (document.get("build") or {}).get("git_sha") or "unknown commit"
        for row in document["rows"]:
            if not isinstance(row, dict) or not usable(row):
                continue
            shape = shape_of(row)
            median = float(row["summary"]["median_ms"])
            per_variant = times.setdefault(shape, {})
            if row["variant"] not in per_variant or median < per_variant[row["variant"]]:
                per_variant[row["variant"]] = median
            sources.setdefault(shape, set()).add("%s@%s" % (os.path.basename(path), sha))

    fitted = {shape: t for shape, t in times.items() if len(t) >= 2}
    if not fitted:
        fail("no shape has two or more dense GPU variants measured (status ok, not failing --verify)")

    if os.path.exists(args.config):
        config = load(args.config)
        if not isinstance(config, dict) or config.get("schema") != SCHEMA:
            fail("%s is not a tuned configuration (schema %s)" % (args.config, SCHEMA))
        config_slug = (config.get("device") or {}).get("slug")
        if config_slug and config_slug != slug:
            fail("%s is %s's configuration, the results are from %s" % (args.config, config_slug, slug))
    else:
        keep = {key: device[key] for key in ("name", "cc", "driver", "sm_count", "slug") if key in device}
        config = {"schema": SCHEMA, "device": keep, "updated": "", "entries": []}

    existing = config.get("auto")
    if existing is None:
        existing = []
    keys = ("n", "k_min", "k_max", "m")
    if not isinstance(existing, list) or not all(
            isinstance(a, dict) and isinstance(a.get("problem"), dict) and
            all(isinstance(a["problem"].get(key), int) for key in keys) for a in existing):
        fail("%s: 'auto' must be a list of entries with a problem of n, k_min, k_max and m" % args.config)
    table = [a for a in existing if tuple(a["problem"][key] for key in keys) not in fitted]
    for shape, per_variant in fitted.items():
        n, kmin, kmax, m = shape
        ordered = dict(sorted(per_variant.items(), key=lambda item: item[1]))
        table.append({"problem": {"n": n, "k_min": kmin, "k_max": kmax, "sum_k": (kmin + kmax) * (kmax - kmin + 1) // 2,
                                  "m": m},
                      "times_ms": ordered, "source": ", ".join(sorted(sources[shape]))})
    table.sort(key=lambda a: tuple(a["problem"][key] for key in ("n", "k_min", "k_max", "m")))
    config["auto"] = table
    write_atomically(args.config, json.dumps(config, indent=2) + "\n")

    print("%-24s %-18s %10s  %-18s %10s" % ("shape (N/K/M)", "fastest", "ms", "runner-up", "x"))
    for shape in sorted(fitted):
        ordered = sorted(fitted[shape].items(), key=lambda item: item[1])
        n, kmin, kmax, m = shape
        k = str(kmin) if kmin == kmax else "%d..%d" % (kmin, kmax)
        second = ordered[1]
        print("%-24s %-18s %10.4f  %-18s %10.3f" % ("%d/%s/%d" % (n, k, m), ordered[0][0], ordered[0][1], second[0],
                                                    second[1] / ordered[0][1]))
    print("fit-auto-table: %d shapes into %s (%d in its table)" % (len(fitted), args.config, len(table)))


if __name__ == "__main__":
    main()
