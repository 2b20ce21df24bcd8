#!/usr/bin/env bash
# One fuzz target for a fixed budget, as ctest runs it:
#   run.sh BINARY FUZZ_DIR WORK_DIR READER
# Seeds come from FUZZ_DIR/corpus/READER (read only); what the run adds goes to a fresh
# WORK_DIR, so the committed corpus never changes behind git's back. A crash, a sanitizer
# report, an escaped exception or a hang fails the test and leaves the input in WORK_DIR
# (crash-*, timeout-*): commit it under tests/data/fuzz_regressions/ with a GoogleTest.
# MKBENCH_FUZZ_SECONDS overrides the 20-second budget (CI: 2 cores, 6 targets, ctest -j2).
set -euo pipefail
binary=$1 fuzz_dir=$2 work=$3 reader=$4
rm -rf "$work"
mkdir -p "$work/corpus"
dictionary=()
if [[ -f "$fuzz_dir/dict/$reader.dict" ]]; then dictionary=(-dict="$fuzz_dir/dict/$reader.dict"); fi
exec "$binary" -max_total_time="${MKBENCH_FUZZ_SECONDS:-20}" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
  -print_final_stats=1 "${dictionary[@]}" -artifact_prefix="$work/" "$work/corpus" "$fuzz_dir/corpus/$reader"
