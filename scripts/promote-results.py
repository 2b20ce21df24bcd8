#!/usr/bin/env python3
"""Make a device call's results the committed standing: copy them into reports/results/<gpu>/,
replacing the files of the same name, and record the command and commit in that folder's README.

  scripts/promote-results.py --command 'CMD' [--gpu SLUG] [--commit SHA] [--what TEXT] DIR [NAME[=DEST] ...]

DIR is the folder a tests/device.sh call left (its $OUT, as copied back). NAMEs are files directly in
DIR; NAME=DEST stores one under another name, e.g. sweep.txt=ab/tensor-multik-foo.txt for the
measurement behind a choice. Without NAMEs every standing file in DIR is promoted (not raw.tgz,
bin.tgz, logs, or the scratch files listed in SCRATCH). The GPU and the commit default to the
device.slug and build.git_sha of the first results JSON promoted; the command is required, because
no file records the whole device command. Each file is written atomically (temp file beside it,
then rename). README rows keep their description unless --what is given; a new file needs --what.
The results root is reports/results, or $MKBENCH_RESULTS_DIR. Exit 2 on bad input.
"""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile

SCRATCH = {"raw.tgz", "bin.tgz", "table1-a.json", "table1-b.json", "table1-slowed.json", "kernels-rest.json",
           "sweep.txt", "ab.txt", "ab-builds.txt", "mscan.txt", "table2-tuned.txt", "table2-defaults.txt"}
BEGIN, END = "<!-- standing:begin -->", "<!-- standing:end -->"
HEADER = "| file | what | commit | command |\n|---|---|---|---|\n"


def fail(message):
    print("promote-results: " + message, file=sys.stderr)
    sys.exit(2)


def results_header(path):
    if not path.endswith(".json"):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("schema") in ("mkbench.results/2", "mkbench.results/1") else None


def cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def write_atomically(path, data=None, source=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".promote-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as out:
            if source is not None:
                with open(source, "rb") as f:
                    shutil.copyfileobj(f, out)
            else:
                out.write(data.encode("utf-8"))
        os.replace(tmp, path)
    except OSError as e:
        os.unlink(tmp)
        fail(f"{path}: {e}")


def updated_readme(readme, gpu, rows):
    """The README's text with rows (dest, what or None, commit, command) replaced or appended."""
    text = open(readme, encoding="utf-8").read() if os.path.exists(readme) else (
        f"# Results: {gpu}\n\nThe standing: the newest measurement of each suite and case. Each row names the "
        f"commit and the command that produced the file; `scripts/promote-results.py` keeps it current "
        f"(reports/README.md).\n\n{BEGIN}\n{HEADER}{END}\n")
    if BEGIN not in text or END not in text:
        fail(f"{readme} has no {BEGIN} ... {END} table to update")
    head, rest = text.split(BEGIN, 1)
    table, tail = rest.split(END, 1)
    lines = [l for l in table.strip("\n").split("\n") if l]
    if not lines or not lines[0].startswith("| file"):
        lines = HEADER.strip("\n").split("\n") + lines
    for dest, what, commit, command in rows:
        name = f"| `{dest}` |"
        index = next((i for i, l in enumerate(lines) if l.startswith(name)), None)
        if what is None:
            if index is None:
                fail(f"{dest} is new in {readme}: say what it is with --what")
            # The description is the row's second cell (cells escape their own pipes as \|).
            what = re.split(r"(?<!\\)\|", lines[index])[2].strip()
        row = f"| `{dest}` | {cell(what)} | {commit} | `{cell(command)}` |"
        if index is None:
            lines.append(row)
        else:
            lines[index] = row
    return head + BEGIN + "\n" + "\n".join(lines) + "\n" + END + tail


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir")
    parser.add_argument("names", nargs="*")
    parser.add_argument("--command", required=True, help="the device command that produced the files")
    parser.add_argument("--gpu", help="device slug (default: from the first results JSON)")
    parser.add_argument("--commit", help="commit of the code that ran (default: its build.git_sha)")
    parser.add_argument("--what", help="description of the files (required for a file new to the README)")
    args = parser.parse_args()
    if not os.path.isdir(args.dir):
        fail(f"{args.dir} is not a folder")
    pairs = []
    for item in args.names or sorted(os.listdir(args.dir)):
        name, _, dest = item.partition("=")
        source = os.path.join(args.dir, name)
        if not args.names and (name in SCRATCH or name.endswith(".log") or not os.path.isfile(source)):
            continue
        if not os.path.isfile(source):
            fail(f"{source} is not a file")
        if os.path.isabs(dest) or ".." in dest.split("/"):
            fail(f"{dest}: the destination must be a path inside the GPU's folder")
        pairs.append((source, dest or name))
    if not pairs:
        fail(f"nothing to promote in {args.dir}")
    headers = [h for h in (results_header(s) for s, _ in pairs) if h]
    gpu = args.gpu or (headers[0].get("device", {}).get("slug") if headers else None)
    if not gpu or not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", gpu):
        fail(f"no usable GPU slug ({gpu!r}): give --gpu")
    if any(h.get("device", {}).get("slug") != gpu for h in headers):
        fail(f"the results files do not all come from {gpu}")
    commit = args.commit or (headers[0].get("build", {}).get("git_sha") if headers else None)
    if not commit or commit == "unknown" or commit.endswith("-dirty"):
        fail(f"the files do not name a committed state ({commit!r}): give --commit")
    root = os.environ.get("MKBENCH_RESULTS_DIR", os.path.join(os.path.dirname(__file__), "..", "reports", "results"))
    folder = os.path.join(root, gpu)
    readme = os.path.join(folder, "README.md")
    # The README's new text first: a row that cannot be written stops the promotion before any copy.
    text = updated_readme(readme, gpu, [(d, args.what, commit, args.command) for _, d in pairs])
    for source, dest in pairs:
        write_atomically(os.path.join(folder, dest), source=source)
        print(f"promote-results: {dest}")
    write_atomically(readme, text)
    print(f"promote-results: {len(pairs)} files into {os.path.normpath(folder)}; review with git diff, then commit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
