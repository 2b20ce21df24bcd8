# Sourced by the scripts: put nvcc on PATH when the toolkit lives in /usr/local/cuda.
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
