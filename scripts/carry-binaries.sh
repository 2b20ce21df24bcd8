#!/usr/bin/env bash
# Builds mkbench and mkbench_tests for sm_90 on this machine (no GPU needed) and packs them for the GPU lease, so
# a call spends its device time measuring rather than building (docs/gpu-machine.md, "Binaries built here"):
#   build-carry/bin.tgz  the two binaries, as the `pack` stage writes it (the `unpack` stage reads it)
#   build-carry/lib/     the shared libraries they need that are not CUDA's or the C/C++ runtime's
#                        (libbenchmark, Open MPI, ...: the device image lacked libbenchmark; `unpack` puts
#                        this folder on LD_LIBRARY_PATH when the binaries do not load without it)
# Then: run with carry ["build-carry"] and `tests/device.sh unpack gpu-tests ...`.
# The commit recorded in the binaries is HEAD's (-dirty with uncommitted changes), or MKBENCH_GIT_SHA's.
# Exit 1 when the build fails.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
cmake --preset hopper -DMKBENCH_PYTHON=OFF -DMKBENCH_FUZZ=OFF >/dev/null
cmake --build --preset hopper -j"$(nproc)" --target mkbench mkbench_tests
mkdir -p build-carry/lib
tar czf build-carry/bin.tgz.tmp -C build-sm90 mkbench mkbench_tests
mv build-carry/bin.tgz.tmp build-carry/bin.tgz
ldd build-sm90/mkbench build-sm90/mkbench_tests | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/usr/local/cuda|/lib(c|m|dl|pthread|rt|stdc\+\+|gcc_s)\.so|/ld-linux' |
  while read -r lib; do cp -L "$lib" build-carry/lib/; done
echo "carry-binaries: build-carry/bin.tgz ($(du -h build-carry/bin.tgz | cut -f1)) and $(ls build-carry/lib | wc -l) libraries in build-carry/lib"
