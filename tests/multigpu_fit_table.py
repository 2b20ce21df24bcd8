#!/usr/bin/env python3
"""Per-point rate of a sharded `mkbench fit` against one GPU's (tests/device.sh stage multigpu-fit).

usage: multigpu_fit_table.py ONE.json SHARDED.json [--goal RATIO] [--wall SECONDS --wall SECONDS]
Each file is a fit.json: ONE from one GPU, SHARDED from several (its "parallel" names them).
A fit's rate is rows / its median step (fit.json's step_ms; files without it: rows x steps /
the iteration seconds), so the first step's one-time costs (a sharded run's first collective)
do not count; the first step and the whole loop's rate are printed beside it. The ratio is
SHARDED's rate over ONE's. --wall gives each command's wall seconds (in the files' order).
Exits 1 when the ratio misses the goal, 2 when a file cannot be read.
"""
import json
import statistics
import sys


def fit_of(path):
    with open(path) as f:
        doc = json.load(f)
    seconds = doc["time_s"]
    if doc["steps"] < 1 or seconds["iterations"] <= 0:
        raise ValueError(f"{path}: no timed steps")
    return doc


def median_step_s(doc):
    steps = doc.get("step_ms") or []
    if steps:
        return statistics.median(steps) / 1e3
    return doc["time_s"]["iterations"] / doc["steps"]


def first_step_ms(doc):
    steps = doc.get("step_ms") or []
    return steps[0] if steps else float("nan")


def main(argv):
    files, goal, walls = [], None, []
    i = 0
    while i < len(argv):
        if argv[i] == "--goal":
            goal = float(argv[i + 1])
            i += 2
        elif argv[i] == "--wall":
            walls.append(argv[i + 1])
            i += 2
        else:
            files.append(argv[i])
            i += 1
    if len(files) != 2:
        print(__doc__)
        return 2
    try:
        one, sharded = (fit_of(path) for path in files)
    except (OSError, ValueError, KeyError) as error:
        print(f"multigpu fit table: {error}")
        return 2
    walls += ["-"] * (2 - len(walls))
    print(f"{'GPUs':>4} {'rows':>11} {'variant':<14} {'steps':>5} {'first ms':>8} {'median ms':>9} "
          f"{'ps/row-step':>11} {'rate':>6} {'loop rate':>9} {'load s':>7} {'upload s':>8} {'seeding s':>9} "
          f"{'labels s':>8} {'metrics s':>9} {'wall s':>6}  seeding rows")
    base_rate = one["m"] / median_step_s(one)
    base_loop = one["m"] * one["steps"] / one["time_s"]["iterations"]
    missed = False
    for doc, wall in zip((one, sharded), walls):
        t = doc["time_s"]
        gpus = (doc.get("parallel") or {}).get("ranks", 1)
        rate = doc["m"] / median_step_s(doc)
        loop = doc["m"] * doc["steps"] / t["iterations"]
        sample = (doc["seeding"].get("sample") or {}).get("rows", doc["m"])
        print(f"{gpus:>4} {doc['m']:>11} {doc['variant']['name']:<14} {doc['steps']:>5} {first_step_ms(doc):>8.2f} "
              f"{median_step_s(doc) * 1e3:>9.2f} {1e12 / rate:>11.2f} {rate / base_rate:>5.2f}x "
              f"{loop / base_loop:>8.2f}x {t.get('load', float('nan')):>7.1f} {t.get('upload', float('nan')):>8.1f} "
              f"{t['seeding']:>9.3f} {t['labels']:>8.3f} {t['metrics']:>9.3f} {wall:>6}  {sample}")
    ratio = (sharded["m"] / median_step_s(sharded)) / base_rate
    gpus = (sharded.get("parallel") or {}).get("ranks", 1)
    if goal is not None:
        ok = ratio >= goal
        missed = not ok
        print(f"{gpus} GPUs: {ratio:.2f}x one GPU's per-point rate (goal >= {goal:g}x): {'ok' if ok else 'MISSED'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
