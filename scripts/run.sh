#!/usr/bin/env bash
# The main job on a fresh machine: install, build, run the seed's Table 1 sweep.
# Extra arguments go to mkbench (default: --suite table1).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default -j"$(nproc)"
if (($#)); then exec build/mkbench "$@"; else exec build/mkbench --suite table1 --out build/table1.json; fi
