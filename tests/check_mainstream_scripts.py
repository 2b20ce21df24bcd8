#!/usr/bin/env python3
"""scripts/mainstream-table.py and scripts/peer-flash-kmeans.py without a GPU: the table reads a
device run's files (mkbench rows with their --verify verdicts, the peer's rows, the issue's goals)
and says which rows are missing; the peer script skips with exit 0 and writes nothing when no
Flash-KMeans checkout is there."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as out:
        rows = [{"variant": "gemm-window", "status": "ok", "summary": {"median_ms": 1.234}, "verify": {"passed": True}},
                {"variant": "auto", "status": "ok", "summary": {"median_ms": 9.5}, "verify": {"passed": False}}]
        with open(os.path.join(out, "mainstream-N128-K1024-M2M.json"), "w") as f:
            json.dump({"rows": rows}, f)
        with open(os.path.join(out, "peer-flash-kmeans.json"), "w") as f:
            json.dump({"rows": [{"n": 128, "k": 1024, "m": 2 << 20, "batch": 1, "median_ms": 3.2}]}, f)
        batch_rows = [{"variant": "gemm-window", "status": "ok", "summary": {"median_ms": 4.5}, "verify": {"passed": True}}]
        with open(os.path.join(out, "mainstream-N128-K1024-M65536-B32.json"), "w") as f:
            json.dump({"rows": batch_rows}, f)
        result = run(os.path.join(ROOT, "scripts", "mainstream-table.py"), "--results", out,
                     "--cases", "128 1024 2M;64 256 4M;128 1024 65536 32")
        lines = result.stdout.splitlines()
        first = next((l for l in lines if l.split()[:3] == ["128", "1024", "2M"]), "")
        second = next((l for l in lines if l.split()[:3] == ["64", "256", "4M"]), "")
        if result.returncode != 0:
            failures.append(f"table exit {result.returncode}: {result.stderr}")
        if first.split()[4:] != ["1.5", "1.234", "ok", "9.500", "FAIL", "3.200"]:
            failures.append(f"row 128/1024/2M reads {first!r}")
        if "missing" not in second or "0.6" not in second.split():
            failures.append(f"row 64/256/4M without a file reads {second!r}")
        batched = next((l for l in lines if l.split()[:4] == ["128", "1024", "65536", "32"]), "")
        if batched.split()[4:7] != ["2.0", "4.500", "ok"]:
            failures.append(f"batch row 128/1024/65536 x32 reads {batched!r}")
        peer_out = os.path.join(out, "peer.json")
        peer = run(os.path.join(ROOT, "scripts", "peer-flash-kmeans.py"), "--source", os.path.join(out, "none"),
                   "--out", peer_out)
        if peer.returncode != 0 or "skipped" not in peer.stdout or os.path.exists(peer_out):
            failures.append(f"peer without a checkout: exit {peer.returncode}, {peer.stdout!r}, wrote {os.path.exists(peer_out)}")
    for failure in failures:
        print("FAIL:", failure)
    print("mainstream scripts:", "ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
