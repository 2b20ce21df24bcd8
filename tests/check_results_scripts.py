#!/usr/bin/env python3
"""ctest: scripts/merge-results.py and scripts/promote-results.py on temporary folders.

Checks what the archive's habit relies on (reports/README.md): a merge keeps every row once, the later
part's measurement for a row measured twice, and every part's provenance; a promotion replaces the file
and its README row (commit, command) and keeps the row's description; a promotion that cannot record
its row copies nothing. Usage: check_results_scripts.py SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

SOURCE = sys.argv[1]
MERGE = os.path.join(SOURCE, "scripts", "merge-results.py")
PROMOTE = os.path.join(SOURCE, "scripts", "promote-results.py")
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def results(path, sha, rows, slug="gpu-x", schema="mkbench.results/2"):
    doc = {"schema": schema, "created": "2026-01-01T00:00:00Z", "command": f"mkbench {sha}",
           "suite": "kernels", "device": {"slug": slug, "name": "GPU X", "is_gpu": True},
           "build": {"git_sha": sha}, "rows": rows}
    with open(path, "w") as f:
        json.dump(doc, f)


def row(name, median):
    return {"name": name, "variant": name.split("/")[0], "dataset": {"kind": "generator", "seed": 42},
            "status": "ok", "summary": {"median_ms": median}}


def run(args, env=None):
    return subprocess.run([sys.executable] + args, capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))


with tempfile.TemporaryDirectory() as tmp:
    a, b, out = (os.path.join(tmp, n) for n in ("a.json", "b.json", "merged.json"))
    results(a, "aaaaaaa", [row("v/1", 1.0), row("v/2", 2.0)])
    results(b, "bbbbbbb", [row("v/2", 2.5), row("v/3", 3.0)])
    r = run([MERGE, out, a, b])
    check(r.returncode == 0, f"merge exit {r.returncode}: {r.stderr}")
    merged = json.load(open(out))
    check([x["name"] for x in merged["rows"]] == ["v/1", "v/2", "v/3"], "merge: each row once, in input order")
    check(merged["rows"][1]["summary"]["median_ms"] == 2.5, "merge: the later part's measurement wins")
    check([m["git_sha"] for m in merged["merged_from"]] == ["aaaaaaa", "bbbbbbb"], "merge: both parts' commits kept")
    r = run([MERGE, out, out, a])  # re-merging a merge keeps its sources
    check(len(json.load(open(out))["merged_from"]) == 3, "merge of a merge keeps every source")
    results(b, "bbbbbbb", [row("v/9", 9.0)], slug="gpu-y")
    r = run([MERGE, out, a, b])
    check(r.returncode == 2, "merge: two devices are exit 2")
    results(b, "bbbbbbb", [row("v/9", 9.0)], schema="mkbench.results/1")
    r = run([MERGE, out, a, b])
    check(r.returncode == 2 and "mix schemas" in r.stderr, f"merge: schemas 1 and 2 mixed are exit 2 ({r.stderr})")
    results(b, "bbbbbbb", [row("v/9", 9.0)], schema="mkbench.results/1")
    r = run([MERGE, out, b])
    check(r.returncode == 0 and json.load(open(out))["schema"] == "mkbench.results/1",
          f"merge: a schema-1 file alone still merges ({r.stderr})")

    root = os.path.join(tmp, "results")
    gpu = os.path.join(root, "gpu-x")
    os.makedirs(gpu)
    with open(os.path.join(gpu, "README.md"), "w") as f:
        f.write("# Results\n\n<!-- standing:begin -->\n| file | what | commit | command |\n|---|---|---|---|\n"
                "| `perf-N8.json` | the N=8 case | 1111111 | `old command` |\n<!-- standing:end -->\n\ntail text\n")
    results(os.path.join(gpu, "perf-N8.json"), "1111111", [row("v/1", 1.0)])
    call = os.path.join(tmp, "out")
    os.makedirs(call)
    results(os.path.join(call, "perf-N8.json"), "2222222", [row("v/1", 0.9)])
    for scratch in ("raw.tgz", "sweep.txt"):
        open(os.path.join(call, scratch), "w").write("x\n")
    env = {"MKBENCH_RESULTS_DIR": root}
    r = run([PROMOTE, "--command", "SWEEP_SETS='a|b' tests/device.sh perf", call], env)
    check(r.returncode == 0, f"promote exit {r.returncode}: {r.stderr}")
    check(json.load(open(os.path.join(gpu, "perf-N8.json")))["build"]["git_sha"] == "2222222", "promote: file replaced")
    check(not os.path.exists(os.path.join(gpu, "raw.tgz")) and not os.path.exists(os.path.join(gpu, "sweep.txt")),
          "promote: scratch files stay out by default")
    readme = open(os.path.join(gpu, "README.md")).read()
    check("| `perf-N8.json` | the N=8 case | 2222222 | `SWEEP_SETS='a\\|b' tests/device.sh perf` |" in readme,
          "promote: the row gets the new commit and command and keeps its description:\n" + readme)
    check(readme.endswith("\ntail text\n"), "promote: text after the table kept")
    r = run([PROMOTE, "--command", "c", "--gpu", "gpu-x", "--commit", "3333333", call, "sweep.txt=ab/x.txt"], env)
    check(r.returncode == 2 and not os.path.exists(os.path.join(gpu, "ab", "x.txt")),
          "promote: a new file without --what is exit 2 and copies nothing")
    r = run([PROMOTE, "--command", "c", "--gpu", "gpu-x", "--what", "a sweep", "--commit", "3333333", call,
             "sweep.txt=ab/x.txt"], env)
    check(r.returncode == 0 and os.path.exists(os.path.join(gpu, "ab", "x.txt")), "promote: NAME=DEST with --what")
    check("| `ab/x.txt` | a sweep | 3333333 | `c` |" in open(os.path.join(gpu, "README.md")).read(), "promote: new row")
    results(os.path.join(call, "perf-N8.json"), "unknown", [row("v/1", 0.8)])
    r = run([PROMOTE, "--command", "c", call, "perf-N8.json"], env)
    check(r.returncode == 2, "promote: a file naming no commit needs --commit")

for message in failures:
    print("FAIL: " + message)
print(f"{'FAILED' if failures else 'passed'}: results scripts")
sys.exit(1 if failures else 0)
