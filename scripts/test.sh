#!/usr/bin/env bash
# The test command: install, build, run the whole ctest suite. GPU tests skip with a
# reason when no CUDA GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/setup.sh ${MKBENCH_SETUP_ARGS:-}
cmake --preset default >/dev/null
cmake --build --preset default -j"$(nproc)"
ctest --preset default -j"$(nproc)"
