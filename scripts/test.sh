#!/usr/bin/env bash
# The test command: install, build, run the whole ctest suite. GPU tests skip with a
# reason when no CUDA GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/setup.sh ${MKBENCH_SETUP_ARGS:-}
# MKBENCH_CUDA_ARCHS overrides the default 75;80;86;89;90 (CI builds the two ends, 75;90).
cmake --preset default ${MKBENCH_CUDA_ARCHS:+"-DCMAKE_CUDA_ARCHITECTURES=$MKBENCH_CUDA_ARCHS"} >/dev/null
cmake --build --preset default -j"$(nproc)"
ctest --preset default -j"$(nproc)"
