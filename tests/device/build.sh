# tests/device.sh stage build (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
start=$SECONDS
# The GPU machine's pybind11 is pip's (no Debian pybind11-dev): point CMake at its config so the
# Python module is built there too.
pybind11_dir=$(python3 -m pybind11 --cmakedir 2>/dev/null)
cmake -S . -B $BUILD -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 ${pybind11_dir:+-Dpybind11_DIR=$pybind11_dir} \
  >$OUT/raw/cmake.log 2>&1 &&
  cmake --build $BUILD -j16 >$OUT/raw/build.log 2>&1
rc=$?; tail -5 $OUT/raw/build.log; grep -i "spill" $OUT/raw/build.log | grep -v " 0 bytes spill" | head -5
note "build rc=$rc ($((SECONDS-start)) s)"; ((rc == 0)) || stop_stages=1  # nothing after a failed build can run
