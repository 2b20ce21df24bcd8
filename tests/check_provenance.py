#!/usr/bin/env python3
"""ctest: nothing in the tree cites a run number ("session 12", "call 4") as provenance.

A reader can follow a commit or a results file (reports/results/<gpu>/, each named with its command
and commit in that folder's README); a run number points at nothing they can open. Usage:
check_provenance.py SOURCE_DIR. Checks every git-tracked text file (or, outside a git checkout,
every file under SOURCE_DIR except build folders).
"""
import os
import re
import subprocess
import sys

SOURCE = sys.argv[1]
RUN_NUMBER = re.compile(r"\b(sessions?|calls?)[ -]?[0-9]+\b", re.IGNORECASE)
SELF = "tests/check_provenance.py"


def tracked_files():
    try:
        out = subprocess.run(["git", "-C", SOURCE, "ls-files", "-z"], capture_output=True, check=True).stdout
        return [p for p in out.decode("utf-8", "replace").split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for root, dirs, names in os.walk(SOURCE):
            dirs[:] = [d for d in dirs if not d.startswith(("build", ".git"))]
            files += [os.path.relpath(os.path.join(root, n), SOURCE) for n in names]
        return files


hits = []
for path in tracked_files():
    if path == SELF:
        continue
    full = os.path.join(SOURCE, path)
    try:
        with open(full, "rb") as f:
            data = f.read()
    except OSError:
        continue
    if b"\0" in data[:4096]:
        continue  # binary
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if RUN_NUMBER.search(line):
            hits.append(f"{path}:{number}: {line.strip()[:160]}")

for hit in hits:
    print(hit)
print(f"{len(hits)} run-number citations" + ("" if hits else ": none"))
sys.exit(1 if hits else 0)
