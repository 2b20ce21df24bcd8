# tests/device.sh stage host-transfer (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# The measurements behind the host<->device copies (variants/common/pinned_staging.hpp):
# tests/device/host_transfer.cu, built here with nvcc, reads
# 10M int32 labels back and uploads 1.28 GB of host rows several ways. Writes
# $OUT/host-transfer.txt (the standing's ab/host-transfer.txt).
nvcc -std=c++17 -O2 -arch=sm_90 -Xcompiler -fopenmp -o $BUILD/host_transfer tests/device/host_transfer.cu \
  >$OUT/raw/host-transfer-build.log 2>&1 || { note "host-transfer: nvcc failed (raw/host-transfer-build.log)"; return; }
timeout $(cap 120) $BUILD/host_transfer | tee $OUT/host-transfer.txt
note "host-transfer rc=${PIPESTATUS[0]}: $(grep -c . $OUT/host-transfer.txt) lines in host-transfer.txt"
