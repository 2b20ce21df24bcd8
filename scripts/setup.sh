#!/usr/bin/env bash
# Installs what mkbench needs on a fresh Debian machine of the project's kind (nvcc 13 is
# part of the image; everything else comes from Debian packages). Idempotent: packages
# already present are skipped, so CI and repeated runs pay only for a dpkg query.
# Usage: scripts/setup.sh [--with-browser]   (chromium renders the HTML report test)
set -euo pipefail

packages=(cmake g++ make pkg-config git python3 python3-matplotlib python3-sklearn
          libgtest-dev libbenchmark-dev nlohmann-json3-dev libeigen3-dev libcli11-dev libfmt-dev libstb-dev
          libxxhash-dev  # XXH3-128, header-only: the data sets' identity (datasets/digest.hpp)
          zlib1g-dev clang libclang-rt-dev libomp-dev  # zlib: gzipped IDX; clang, its runtimes and OpenMP: libFuzzer targets, Sanitized.Readers
          libopenmpi-dev openmpi-bin        # MPI for several processes and hosts (docs/multi-gpu.md)
          pybind11-dev python3-dev python3-numpy)  # the Python module (python/, docs/python.md)
# g++ brings libasan and libubsan (through libgcc-12-dev): scripts/test-sanitizers.sh needs no more.
if [[ "${1:-}" == "--with-browser" ]]; then packages+=(chromium); fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null 2>&1 && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: nvcc (CUDA Toolkit >= 12) is required and is not on this machine;" >&2
  echo "       install the CUDA Toolkit and put its bin/ on PATH." >&2
  exit 1
fi
echo "setup: dependencies present"
