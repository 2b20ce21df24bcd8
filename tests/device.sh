#!/usr/bin/env bash
# Everything the GPU machine should do in one lease call: native sm_90 build, full ctest,
# peak measurement, sanitizers, the verify matrix and the performance cases. Stages can
# be picked, e.g. tests/device.sh build test ci; docs/gpu-machine.md lists every stage.
# Each stage is a file, tests/device/<stage>.sh: a bash fragment this script sources with $BUILD,
# $MK, $OUT, $stage, note and tests/device/lib.sh's helpers (cap, need, csv_row, csv_row_json)
# at hand. A new stage is a new file there; nothing here needs to change.
# Results land directly in $OUT (or build-device/out) under the names of the committed
# standing in reports/results/<gpu>/ (perf-N8-K3..7-M32M.json, table2.json, gpu-tests.txt,
# sanitize.txt, ...), so scripts/promote-results.py can copy a call's files over the old ones;
# logs go to raw/ (one tarball at the end); a short table is printed last. The lease's copy of the tree may carry a stale .git: name the commit in the
# command, e.g. MKBENCH_GIT_SHA=ab12cd34ef56 (add -dirty for uncommitted changes), so the
# result files say which code ran.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/build-device/out}
mkdir -p "$OUT/raw"
BUILD=build-device
MK=$BUILD/mkbench
stages=("$@")
((${#stages[@]})) || stages=(build test peak sanitize matrix perf)
# `fit` is issue 31's goal shapes for `mkbench fit`: the iteration cost at N=8 K=3..7 M=32M, then
# Fashion-MNIST end to end.
expanded=()
for stage in "${stages[@]}"; do
  if [[ $stage == fit ]]; then expanded+=(fit-iteration fit-fmnist); else expanded+=("$stage"); fi
done
stages=("${expanded[@]}")
summary=()
note() { summary+=("$1"); echo "== $1"; }
# The lease kills a call at 600 s, and then only files directly under $OUT come back (raw/
# is tarred at the end): stages stop at DEADLINE seconds so the tarball is always written.
DEADLINE=${DEADLINE:-575}
source tests/device/lib.sh
# Always leave the logs and the summary, also when a stage fails or a variable is missing.
finish() {
  tar czf $OUT/raw.tgz -C $OUT raw 2>/dev/null && rm -rf $OUT/raw
  echo; echo "==== device summary ===="; printf '%s\n' "${summary[@]}"
}
trap finish EXIT

stage_status=0
for stage in "${stages[@]}"; do
  if ((SECONDS >= DEADLINE - 5)); then note "skipped $stage: deadline ${DEADLINE}s reached"; stage_status=0; continue; fi
  stop_stages=0
  # Any tests/device/<stage>.sh is a stage: a `<stage>) source tests/device/<stage>.sh ;;` line
  # added here does the same as the default and may be dropped.
  case "$stage" in
    lib) note "unknown stage lib: tests/device/lib.sh holds the stages' helpers"; exit 2 ;;
    *)
      if [[ $stage =~ ^[A-Za-z0-9_.-]+$ && -f tests/device/$stage.sh ]]; then
        source "tests/device/$stage.sh"
      else
        note "unknown stage $stage: no tests/device/$stage.sh (docs/gpu-machine.md lists the stages)"; exit 2
      fi ;;
  esac
  stage_status=$?
  ((stop_stages == 0)) || break
done
exit $stage_status
