# tests/device.sh stage planted (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
[[ -f $OUT/table1-a.json ]] || cp build-carry/table1-a.json $OUT/table1-a.json
# Issue 7: a build whose registers-multik does its FMA loop twice must compare SLOWER.
cmake -S . -B build-slow -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DMKBENCH_BUILD_TESTS=OFF \
  -DMKBENCH_PLANT_SLOWDOWN=ON >$OUT/raw/slow-cmake.log 2>&1 && cmake --build build-slow -j16 >$OUT/raw/slow-build.log 2>&1
build-slow/mkbench --suite table1 --out $OUT/table1-slowed.json >/dev/null 2>$OUT/raw/t1slow.log
$MK compare $OUT/table1-a.json $OUT/table1-slowed.json --format md | tee $OUT/compare-planted.md | tail -20
note "compare planted slowdown rc=${PIPESTATUS[0]} (expect 1)"
