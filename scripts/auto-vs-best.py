#!/usr/bin/env python3
"""How far `auto` is from the fastest variant measured on each shape (issue 32's `auto` check:
no shape more than 10 % slower than the best variant measured for it).

Reads mkbench results files (`mkbench run`/`--suite` JSON), groups the rows by shape (N, K range,
M, dataset), and for every shape with an `auto` row and at least one other variant's row
compares auto's median with the smallest median of the others. Other variants' rows that did
not run (status other than ok) or failed --verify are left out; so is a shape without both
sides. A shape is over when auto / best > --limit, and when auto did not run or failed --verify
where another variant ran (auto must run every shape some variant runs).

  scripts/auto-vs-best.py [--limit 1.10] [--json OUT] RESULTS.json...

Exit 0 when no shape is over the limit, 1 when one is, 2 on bad input.
"""
import argparse
import json
import os
import sys
import tempfile


def shape_key(row):
    p = row.get("problem") or {}
    ds = row.get("dataset") or {}
    name = ds.get("name") or ds.get("generator") or ds.get("path") or ""
    return (p.get("n"), p.get("k_min"), p.get("k_max"), p.get("m"), p.get("batch", 1), name)


def usable(row):
    if row.get("status") != "ok":
        return False
    verify = row.get("verify")
    if isinstance(verify, dict) and verify.get("passed") is False:
        return False
    median = (row.get("summary") or {}).get("median_ms")
    return isinstance(median, (int, float)) and median > 0


def label(key):
    n, kmin, kmax, m, batch, name = key
    k = str(kmin) if kmin == kmax else f"{kmin}..{kmax}"
    return f"N={n} K={k} M={m}" + (f" B={batch}" if batch != 1 else "") + (f" {name}" if name else "")


def bad_input(message):
    print(f"auto-vs-best: {message}", file=sys.stderr)
    sys.exit(2)


def compare(paths, limit):
    shapes = {}
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            bad_input(f"cannot read {path}: {e}")
        rows = doc.get("rows") if isinstance(doc, dict) else None
        if not isinstance(rows, list):
            bad_input(f"{path} has no 'rows' list (not an mkbench results file)")
        for row in rows:
            if not usable(row):
                if row.get("variant") == "auto":
                    entry = shapes.setdefault(shape_key(row), {"auto": None, "others": {}})
                    verify = row.get("verify")
                    failed = isinstance(verify, dict) and verify.get("passed") is False
                    entry["auto_missing"] = ("failed --verify" if failed else str(row.get("status"))) + (
                        ": " + str(row.get("reason")) if row.get("reason") else "")
                continue
            entry = shapes.setdefault(shape_key(row), {"auto": None, "others": {}})
            median = row["summary"]["median_ms"]
            if row.get("variant") == "auto":
                entry["auto"] = median if entry["auto"] is None else min(entry["auto"], median)
            else:
                v = row.get("variant", "?")
                entry["others"][v] = min(entry["others"].get(v, median), median)
    result = []
    for key, entry in shapes.items():
        if not entry["others"]:
            continue
        best_variant, best = min(entry["others"].items(), key=lambda kv: kv[1])
        if entry["auto"] is None:
            if "auto_missing" in entry:
                result.append({"shape": label(key), "auto_ms": None, "best_variant": best_variant, "best_ms": best,
                               "ratio": None, "over": True, "variants": len(entry["others"]),
                               "auto_did_not_run": entry["auto_missing"]})
            continue
        result.append({"shape": label(key), "auto_ms": entry["auto"], "best_variant": best_variant,
                       "best_ms": best, "ratio": entry["auto"] / best,
                       "over": entry["auto"] / best > limit, "variants": len(entry["others"])})
    # A shape auto did not run sorts first (its ratio is null in --json: strict JSON has no infinity).
    result.sort(key=lambda r: -(float("inf") if r["ratio"] is None else r["ratio"]))
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+")
    parser.add_argument("--limit", type=float, default=1.10)
    parser.add_argument("--json", help="also write the comparison here (atomically)")
    args = parser.parse_args()
    if args.limit < 1.0:
        print("auto-vs-best: --limit must be at least 1.0", file=sys.stderr)
        return 2
    rows = compare(args.results, args.limit)
    if not rows:
        print("auto-vs-best: no shape has both an auto row and another variant's row", file=sys.stderr)
        return 2
    over = [r for r in rows if r["over"]]
    print(f"{'shape':<34} {'auto ms':>9} {'best ms':>9}  {'best variant':<18} {'auto/best':>9}")
    for r in rows:
        if r["auto_ms"] is None:
            print(f"{r['shape']:<34} {'-':>9} {r['best_ms']:>9.3f}  {r['best_variant']:<18} {'-':>9}  over: auto "
                  f"{r['auto_did_not_run']}")
            continue
        print(f"{r['shape']:<34} {r['auto_ms']:>9.3f} {r['best_ms']:>9.3f}  {r['best_variant']:<18} "
              f"{r['ratio']:>9.3f}{'  over' if r['over'] else ''}")
    print(f"{len(rows)} shapes, {len(over)} with auto more than {100 * (args.limit - 1):.0f} % slower than the best "
          f"variant measured or did not run; worst "
          f"{'auto did not run' if rows[0]['ratio'] is None else format(rows[0]['ratio'], '.3f')} ({rows[0]['shape']})")
    if args.json:
        directory = os.path.dirname(os.path.abspath(args.json))
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".auto-vs-best.")
        with os.fdopen(fd, "w") as f:
            json.dump({"limit": args.limit, "inputs": args.results, "shapes": rows}, f, indent=1)
        os.replace(tmp, args.json)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
