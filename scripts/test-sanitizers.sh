#!/usr/bin/env bash
# CI's sanitizer stage: the host code built with AddressSanitizer + UndefinedBehaviorSanitizer
# (the `asan` preset: sm_90 only, device code unchanged), then the whole ctest. GPU tests skip
# without a GPU; on a GPU machine the preset's ASAN_OPTIONS carry protect_shadow_gap=0, which
# the CUDA driver's mappings need.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
cmake --preset asan >/dev/null
cmake --build --preset asan -j"$(nproc)"
ctest --preset asan -j"$(nproc)"
