#!/usr/bin/env python3
"""scripts/fit-auto-table.py on hand-made results files: each shape's dense GPU variants fastest
first in the configuration's "auto" table, the rows that must not count left out (a batch's among them), a shape with one
variant skipped, an existing configuration's entries kept and its same-shape measurement replaced,
and bad input refused with exit 2."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "fit-auto-table.py")


def row(variant, n, k, median, status="ok", passed=None, zeros=None, m=1000):
    r = {"variant": variant, "status": status, "summary": {"median_ms": median},
         "timing": {"clock": "steady-clock" if variant == "cpu-x" else "cuda-event"},
         "problem": {"n": n, "k_min": k, "k_max": k, "m": m}, "dataset": {"generator": "uniform", "params": {}}}
    if zeros is not None:
        r["dataset"]["params"]["zeros"] = zeros
    if passed is not None:
        r["verify"] = {"passed": passed}
    return r


def batch_row(variant, n, k, median, batch):
    r = row(variant, n, k, median)
    r["problem"]["batch"] = batch  # a batch of problems: auto chooses for one, so it fits nothing
    return r


def results(rows, slug="gpu-a", sha="abc1234"):
    return {"rows": rows, "device": {"slug": slug, "name": "GPU A"}, "build": {"git_sha": sha}}


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def main():
    failures = []

    def check(condition, what):
        if not condition:
            failures.append(what)

    with tempfile.TemporaryDirectory() as out:
        a, b, config = (os.path.join(out, name) for name in ("a.json", "b.json", "gpu-a.json"))
        with open(a, "w") as f:
            json.dump(results([row("gemm-window", 128, 1024, 5.0), row("warp-centric", 128, 1024, 80.0),
                               row("auto", 128, 1024, 1.0), row("csr-sparse", 128, 1024, 0.5),
                               row("cpu-openmp", 128, 1024, 0.4), row("gemm-cublas", 128, 1024, 0.3, passed=False),
                               row("naive-atomics", 128, 1024, 0.2, status="failed"),
                               row("shared-atomics", 128, 1024, 0.1, zeros=0.5), row("cpu-x", 128, 1024, 0.05),
                               row("tensor-multik", 8, 16, 1.0), batch_row("tf32-window", 128, 1024, 0.01, 4)]), f)
        with open(b, "w") as f:
            json.dump(results([row("gemm-window", 128, 1024, 4.0), row("tf32-window", 32, 1024, 2.0),
                               row("gemm-window", 32, 1024, 3.0)], sha="def5678"), f)
        r = run("--config", config, a, b)
        check(r.returncode == 0, "fit exit %d: %s" % (r.returncode, r.stderr))
        table = json.load(open(config)).get("auto", [])
        check(len(table) == 2, "two shapes with two variants or more, got %d" % len(table))
        by_n = {t["problem"]["n"]: t for t in table}
        wide = by_n.get(128, {})
        check(list(wide.get("times_ms", {}).items()) == [("gemm-window", 4.0), ("warp-centric", 80.0)],
              "N=128 times fastest first, the smaller median kept, left-out rows absent: %s" % wide.get("times_ms"))
        check(wide.get("source") == "a.json@abc1234, b.json@def5678", "sources: %s" % wide.get("source"))
        check(by_n.get(32, {}).get("problem", {}).get("sum_k") == 1024, "sum_k written")
        check(8 not in by_n, "a shape with one variant is skipped")
        doc = json.load(open(config))
        check(doc.get("schema") == "mkbench.tuned-config/1" and doc.get("entries") == [] and
              doc.get("device", {}).get("slug") == "gpu-a", "a new configuration: %s" % {k: doc.get(k) for k in ("schema", "device")})

        # An existing configuration: its entries stay, the same shape's measurement is replaced.
        doc["entries"] = [{"bucket": "x", "problem": {}, "best": {}}]
        doc["auto"].append({"problem": {"n": 4, "k_min": 3, "k_max": 3, "m": 10}, "times_ms": {"x": 1, "y": 2}})
        json.dump(doc, open(config, "w"))
        with open(b, "w") as f:
            json.dump(results([row("gemm-window", 32, 1024, 9.0), row("tf32-window", 32, 1024, 8.0)], sha="0000000"), f)
        r = run("--config", config, b)
        check(r.returncode == 0, "refit exit %d: %s" % (r.returncode, r.stderr))
        doc = json.load(open(config))
        check(doc["entries"] == [{"bucket": "x", "problem": {}, "best": {}}], "entries kept")
        by_n = {t["problem"]["n"]: t for t in doc["auto"]}
        check(sorted(by_n) == [4, 32, 128], "other shapes kept: %s" % sorted(by_n))
        check(list(by_n[32]["times_ms"]) == ["tf32-window", "gemm-window"] and by_n[32]["times_ms"]["tf32-window"] == 8.0,
              "the same shape replaced: %s" % by_n[32]["times_ms"])

        os.chmod(config, 0o640)
        r = run("--config", config, b)
        check(r.returncode == 0 and os.stat(config).st_mode & 0o777 == 0o640, "the file's permissions kept")

        # Bad input: exit 2 and the configuration untouched.
        before = open(config).read()
        other = os.path.join(out, "other.json")
        json.dump(results([row("gemm-window", 64, 256, 1.0), row("warp-centric", 64, 256, 2.0)], slug="gpu-b"), open(other, "w"))
        one = os.path.join(out, "one.json")
        json.dump(results([row("gemm-window", 64, 256, 1.0)]), open(one, "w"))
        broken = os.path.join(out, "broken.json")
        open(broken, "w").write("{not json")
        bad_config = os.path.join(out, "bad-config.json")
        for bad_table in ("oops", [{"problem": {"n": 1}}], [7]):
            json.dump({"schema": "mkbench.tuned-config/1", "device": {"slug": "gpu-a"}, "entries": [],
                       "auto": bad_table}, open(bad_config, "w"))
            r = run("--config", bad_config, b)
            check(r.returncode == 2 and "fit-auto-table:" in r.stderr, "malformed auto %r: exit %d %s"
                  % (bad_table, r.returncode, r.stderr[-200:]))
        for args, what in (((other,), "results of another device"), ((one,), "no shape with two variants"),
                           ((broken,), "unreadable JSON"), ((os.path.join(out, "missing.json"),), "a missing file"),
                           ((a, other), "two devices")):
            r = run("--config", config, *args)
            check(r.returncode == 2 and "fit-auto-table:" in r.stderr, "%s: exit %d %s" % (what, r.returncode, r.stderr))
        check(open(config).read() == before, "the configuration untouched by refused input")
        check(not [f for f in os.listdir(out) if f.startswith(".fit-auto-table-")], "no temporary file left")

    for failure in failures:
        print("FAIL:", failure)
    print("check_fit_auto_table: %s" % ("ok" if not failures else "%d failure(s)" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
