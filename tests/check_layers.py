#!/usr/bin/env python3
"""Fails when a source file includes a header from a layer above its own.

The layers, bottom to top: core (problem, errors, device types) -> datasets -> variants ->
harness (measuring) -> tuner, reports, apps -> cli. A file may include its own layer and any
layer below it, never one above: that is what keeps the architecture visible in the folders.
"""
import pathlib
import re
import sys

RANK = {"core": 0, "datasets": 1, "variants": 2, "harness": 3, "tuner": 4, "reports": 4, "apps": 4,
        "python": 5, "cli": 5}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)
SUFFIXES = {".cpp", ".cu", ".hpp", ".cuh", ".h"}


def main(root: pathlib.Path) -> int:
    bad = []
    for layer, rank in RANK.items():
        folder = root / layer
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if path.suffix not in SUFFIXES:
                continue
            for target in INCLUDE.findall(path.read_text(errors="replace")):
                if target in RANK and RANK[target] > rank:
                    bad.append(f"{path.relative_to(root)} includes {target}/ (layer {target} is above {layer})")
    for line in bad:
        print(line)
    print(f"check_layers: {len(bad)} upward include(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
