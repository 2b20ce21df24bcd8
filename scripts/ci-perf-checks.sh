#!/usr/bin/env bash
# Performance-gate self-checks for our GPU-less CI (issue 7):
#  1. the committed H200 baseline compared with itself must be all SAME (exit 0);
#  2. the CPU `smoke` suite is gated against the committed CPU baseline.
# The CPU threshold is deliberately wide: on the shared 2-core CI machine two back-to-back
# smoke runs of cpu-openmp differed by +97% in median (4.06 ms vs 7.98 ms, measured with a
# compile running on the other core; see reports/README.md). This gate therefore catches
# only gross regressions (>3x); real gating uses scripts/perf-gate.sh on a GPU runner at 5%.
set -euo pipefail
cd "$(dirname "$0")/.."
mkbench=${MKBENCH:-build/mkbench}

echo "== perf check 1: committed GPU baseline vs itself"
$mkbench compare reports/baselines/nvidia-h200/table1.json reports/baselines/nvidia-h200/table1.json --format md \
  | tee /tmp/mkbench-self-compare.md
if grep -Eq "SLOWER|FASTER|AMBIGUOUS|BROKEN" /tmp/mkbench-self-compare.md; then
  echo "perf check 1 failed: a file compared with itself must be all SAME" >&2
  exit 1
fi

echo "== perf check 2: CPU smoke suite vs committed CPU baseline (threshold 200%)"
baseline_dir=reports/baselines
slug=$($mkbench list --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["host"]["slug"])' 2>/dev/null || true)
baseline=$baseline_dir/$slug/smoke.json
force=()
if [[ -z "$slug" || ! -f "$baseline" ]]; then
  baseline=$baseline_dir/cpu-intel-r-xeon-r-processor/smoke.json
  force=(--force)
  echo "no CPU baseline for '$slug'; comparing with $baseline using --force (different CPU model)"
fi
$mkbench --suite smoke --out /tmp/mkbench-smoke.json >/dev/null
$mkbench compare "$baseline" /tmp/mkbench-smoke.json --threshold 200% "${force[@]}" --format md
echo "perf-checks: 2 passed, 0 failed"
