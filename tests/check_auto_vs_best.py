#!/usr/bin/env python3
"""scripts/auto-vs-best.py on hand-made results files: auto against the fastest other variant of
each shape, other variants' rows that failed --verify or did not run left out, auto refusing a
shape another variant ran counted as over, shapes without both sides skipped, the exit status
saying whether a shape is over the limit, and bad input refused."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "auto-vs-best.py")


def row(variant, n, k, median, status="ok", passed=None):
    r = {"variant": variant, "status": status, "summary": {"median_ms": median},
         "problem": {"n": n, "k_min": k, "k_max": k, "m": 1000}, "dataset": {"generator": "uniform"}}
    if passed is not None:
        r["verify"] = {"passed": passed}
    return r


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as out:
        path = os.path.join(out, "rows.json")
        rows = [
            # N=8: auto 1.05 against the best 1.0 (within 10 %); a faster row that failed
            # --verify and one that did not run are not the best.
            row("auto", 8, 4, 1.05), row("a", 8, 4, 1.0), row("b", 8, 4, 0.5, passed=False),
            row("c", 8, 4, 0.1, status="refused"),
            # N=16: auto 2.0 against 1.6: over.
            row("auto", 16, 4, 2.0), row("a", 16, 4, 1.6), row("b", 16, 4, 1.7),
            # N=32: no auto row; N=64: auto alone. Neither is compared.
            row("a", 32, 4, 1.0), row("auto", 64, 4, 1.0),
        ]
        # N=128 (a second file): auto refused where another variant ran: over, whatever the limit.
        refused = os.path.join(out, "refused.json")
        refused_rows = [row("auto", 128, 4, 0.0, status="refused"), row("a", 128, 4, 1.0)]
        refused_rows[0]["reason"] = "tf32-window cannot run with block=512"
        with open(refused, "w") as f:
            json.dump({"rows": refused_rows}, f)
        result = run("--limit", "5", refused)
        if result.returncode != 1 or "over: auto refused: tf32-window cannot run" not in result.stdout:
            failures.append(f"auto refusing a shape another variant ran: exit {result.returncode}, {result.stdout!r}")
        with open(path, "w") as f:
            json.dump({"rows": rows}, f)
        report = os.path.join(out, "report.json")
        result = run("--json", report, path)
        if result.returncode != 1:
            failures.append(f"one shape over the limit should exit 1, got {result.returncode}: {result.stderr}")
        try:
            shapes = {s["shape"].split()[0]: s for s in json.load(open(report))["shapes"]}
        except (OSError, ValueError, KeyError) as e:
            shapes = {}
            failures.append(f"--json report unreadable: {e}")
        if sorted(shapes) != ["N=16", "N=8"]:
            failures.append(f"compared shapes {sorted(shapes)}, expected N=16 and N=8")
        if "N=8" in shapes and (shapes["N=8"]["best_variant"] != "a" or abs(shapes["N=8"]["ratio"] - 1.05) > 1e-9 or
                                shapes["N=8"]["over"]):
            failures.append(f"N=8 compared as {shapes['N=8']}")
        if "N=16" in shapes and (abs(shapes["N=16"]["ratio"] - 1.25) > 1e-9 or not shapes["N=16"]["over"]):
            failures.append(f"N=16 compared as {shapes['N=16']}")
        if "1 with auto more than 10 % slower than the best variant measured or did not run" not in result.stdout:
            failures.append(f"summary line missing: {result.stdout!r}")
        # A looser limit passes the same file.
        if run("--limit", "1.3", path).returncode != 0:
            failures.append("--limit 1.3 should exit 0")
        # Bad input: a file that is not a results document, a limit below 1.
        bad = os.path.join(out, "bad.json")
        with open(bad, "w") as f:
            f.write("[1, 2]")
        result = run(bad)
        if result.returncode != 2 or "no 'rows' list" not in result.stderr:
            failures.append(f"a non-results file: exit {result.returncode}, {result.stderr!r}")
        if run("--limit", "0.9", path).returncode != 2:
            failures.append("--limit 0.9 should exit 2")
        # A batch (problem.batch) is a shape of its own: auto on 2 problems is not judged against
        # a single problem's faster row.
        batched = os.path.join(out, "batched.json")
        batch_rows = [row("auto", 8, 4, 3.0), row("a", 8, 4, 1.0), row("a", 8, 4, 2.9)]
        batch_rows[0]["problem"]["batch"] = batch_rows[2]["problem"]["batch"] = 2
        with open(batched, "w") as f:
            json.dump({"rows": batch_rows}, f)
        result = run(batched)
        if result.returncode != 0 or "N=8 K=4 M=1000 B=2" not in result.stdout:
            failures.append(f"a batch judged as its own shape: exit {result.returncode}, {result.stdout!r}")
    for failure in failures:
        print("FAIL:", failure)
    print("auto-vs-best:", "ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
