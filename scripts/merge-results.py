#!/usr/bin/env python3
"""Merge mkbench.results files into one: OUT.json IN.json [IN.json ...].

For a suite measured in parts (a call's time limit stopped it, the rest ran in the next call) or a
stage that writes one file per run (tests/device.sh acceptance2). Rows are concatenated in input
order; a row measured in several inputs (same name and dataset) keeps the last input's measurement.
The merged file takes the last input's header (device, build, command) and lists every input in
"merged_from" (command, git_sha, created, rows). OUT may be one of the inputs. Written atomically.
Exit 2 on unusable input: unreadable, wrong schema, inputs of two schema versions, or inputs
from different devices.
"""
import json
import os
import sys
import tempfile

SCHEMAS = ("mkbench.results/2", "mkbench.results/1")


def fail(message):
    print("merge-results: " + message, file=sys.stderr)
    sys.exit(2)


def main(argv):
    if len(argv) < 3:
        fail("usage: merge-results.py OUT.json IN.json [IN.json ...]")
    out, inputs = argv[1], argv[2:]
    docs = []
    for path in inputs:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            fail(f"{path}: {e}")
        if not isinstance(doc, dict) or doc.get("schema") not in SCHEMAS:
            fail(f"{path}: not a mkbench.results/2 (or /1) file")
        docs.append((path, doc))
    schemas = {doc["schema"] for _, doc in docs}
    if len(schemas) != 1:
        # /1 names file data by SHA-256, /2 by XXH3-128: one file's rows would not merge.
        fail("inputs mix schemas (" + ", ".join(sorted(schemas)) + "): they name file data differently")
    slugs = {doc.get("device", {}).get("slug") for _, doc in docs}
    if len(slugs) != 1:
        fail("inputs come from different devices: " + ", ".join(sorted(str(s) for s in slugs)))

    def key(row):
        return row.get("name", "") + "\n" + json.dumps(row.get("dataset"), sort_keys=True)

    latest, order = {}, []
    sources = []
    for path, doc in docs:
        # An input that is itself a merge contributes its own sources, so provenance is never lost.
        sources.extend(doc.get("merged_from") or [{
            "command": doc.get("command"), "git_sha": doc.get("build", {}).get("git_sha"),
            "created": doc.get("created"), "rows": len(doc.get("rows", []))}])
        for row in doc.get("rows", []):
            if key(row) not in latest:
                order.append(key(row))
            latest[key(row)] = row
    merged = dict(docs[-1][1])
    merged["rows"] = [latest[k] for k in order]
    merged["merged_from"] = sources
    directory = os.path.dirname(os.path.abspath(out))
    fd, tmp = tempfile.mkstemp(prefix=".merge-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(merged, f, indent=2, ensure_ascii=False)
            f.write("\n")
        os.replace(tmp, out)
    except OSError as e:
        os.unlink(tmp)
        fail(f"{out}: {e}")
    print(f"merge-results: {out}: {len(merged['rows'])} rows from {len(inputs)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
