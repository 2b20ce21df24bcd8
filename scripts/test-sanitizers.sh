#!/usr/bin/env bash
# The host code under AddressSanitizer + UndefinedBehaviorSanitizer: the `asan` preset
# (build-asan/, sm_90 only, -Og -g1) and its whole ctest, .ci/run's last stage. Every .cpp is
# instrumented, and the host side of core's and harness's .cu files; variants/*.cu are not (launch
# glue around kernels; see CMakeLists.txt). The fuzz targets are not built again here
# (MKBENCH_FUZZ=OFF): the normal build already runs them under both sanitizers. The gtest suite
# runs in 8 shards (ctest Sanitized.Shard*), a process each. GPU tests skip without a GPU; on a
# GPU machine the preset's ASAN_OPTIONS carry protect_shadow_gap=0, which the CUDA driver needs.
# Measured build and test times, cold, on the 2-core machine: docs/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
jobs=${MKBENCH_JOBS:-$(nproc)}
cmake --preset asan >/dev/null
cmake --build --preset asan -j"$jobs" --target mkbench mkbench_tests
ctest --preset asan -j"$jobs"
