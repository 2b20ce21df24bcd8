#!/usr/bin/env bash
# Perf gate: run a suite, compare it with this device's stored baseline, print Markdown.
#
#   scripts/perf-gate.sh SUITE [THRESHOLD]        e.g. scripts/perf-gate.sh table1 5%
#
# Environment:
#   MKBENCH              the mkbench binary (default: build/mkbench)
#   MKBENCH_SUITE_ARGS   extra arguments for the suite run (e.g. "--quick")
#   MKBENCH_COMPARE_ARGS extra arguments for mkbench compare (e.g. "--allow-missing")
#   MKBENCH_BASELINE_DIR where baselines live (default: reports/baselines)
#   MKBENCH_GATE_OUT     also write the Markdown here (e.g. for a PR comment)
#   GITHUB_STEP_SUMMARY  when set (GitHub Actions), the Markdown is appended to it
#
# Rows pair by variant, shape and dataset, so a retuned row (new params) stays in the gate as
# PARAMS-CHANGED, its timing still judged. Exit status is mkbench compare's: 0 every baseline
# row judged and none slower, 1 a row SLOWER (or broken, or retuned and slower), 2 unusable
# input (no baseline, different device, unreadable files, or baseline rows the run cannot
# judge: missing, not ok, without samples; MKBENCH_COMPARE_ARGS=--allow-missing accepts those);
# a failed suite run exits with the suite's own status.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 SUITE [THRESHOLD]   (THRESHOLD like 5% or 0.05, default 5%)" >&2
  exit 2
fi
suite=$1
threshold=${2:-5%}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkbench=${MKBENCH:-$root/build/mkbench}
if [ ! -x "$mkbench" ]; then
  echo "perf-gate: mkbench binary not found at $mkbench (build it or set MKBENCH)" >&2
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/mkbench-gate-XXXXXX")
trap 'rm -rf "$work"' EXIT
candidate=$work/$suite.json

set +e
# shellcheck disable=SC2086  # MKBENCH_SUITE_ARGS is a list of words on purpose
"$mkbench" --suite "$suite" --out "$candidate" ${MKBENCH_SUITE_ARGS:-} >&2
status=$?
set -e
if [ "$status" -ne 0 ]; then
  echo "perf-gate: the suite run failed (exit $status)" >&2
  exit "$status"
fi

# The baseline of the device the suite actually ran on.
baseline=$("$mkbench" baseline path --suite "$suite" --results "$candidate")
if [ ! -f "$baseline" ]; then
  echo "perf-gate: no baseline at $baseline" >&2
  echo "perf-gate: record one on this device with: $mkbench baseline update --suite $suite" >&2
  exit 2
fi

set +e
# shellcheck disable=SC2086  # MKBENCH_COMPARE_ARGS is a list of words on purpose
"$mkbench" compare "$baseline" "$candidate" --threshold "$threshold" --format md --out "$work/compare.md" \
  ${MKBENCH_COMPARE_ARGS:-}
status=$?
set -e
if [ -f "$work/compare.md" ]; then
  [ -n "${MKBENCH_GATE_OUT:-}" ] && cp "$work/compare.md" "$MKBENCH_GATE_OUT"
  [ -n "${GITHUB_STEP_SUMMARY:-}" ] && cat "$work/compare.md" >> "$GITHUB_STEP_SUMMARY"
fi
exit "$status"
