#!/usr/bin/env bash
# Everything the GPU machine should do in one lease call: native sm_90 build, full ctest,
# peak measurement, sanitizers, the verify matrix and the performance cases. Stages can
# be picked: tests/device.sh build test peak sanitize matrix perf table1 table2 kernels.
# Results land in $OUT (or build-device/out) as JSON plus one tarball; a short table is
# printed last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/build-device/out}
mkdir -p "$OUT/raw"
BUILD=build-device
MK=$BUILD/mkbench
stages=("$@")
((${#stages[@]})) || stages=(build test peak sanitize matrix perf)
summary=()
note() { summary+=("$1"); echo "== $1"; }

for stage in "${stages[@]}"; do
  case "$stage" in
    build)
      start=$SECONDS
      cmake -S . -B $BUILD -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >$OUT/raw/cmake.log 2>&1 &&
        cmake --build $BUILD -j16 >$OUT/raw/build.log 2>&1
      rc=$?; tail -5 $OUT/raw/build.log; grep -i "spill" $OUT/raw/build.log | grep -v " 0 bytes spill" | head -5
      note "build rc=$rc ($((SECONDS-start)) s)"; ((rc == 0)) || break ;;
    test)
      (cd $BUILD && timeout ${CTEST_BUDGET:-400} ctest -j8 --output-on-failure --timeout 300 >$OUT/raw/ctest.log 2>&1); rc=$?
      tail -4 $OUT/raw/ctest.log; grep -E "Failed|\*\*\*" $OUT/raw/ctest.log | head -20
      note "ctest rc=$rc: $(grep -E 'tests passed|tests failed' $OUT/raw/ctest.log | tail -1)" ;;
    quick)
      for variant in registers-multik naive-atomics shared-atomics; do
        timeout 120 $MK run --variant $variant --dims 8 --k 3..7 --points 32M --iters 20 --verify \
          --out $OUT/raw/quick-$variant.json 2>&1 | tail -6
        note "quick $variant rc=${PIPESTATUS[0]}"
      done ;;
    acceptance2)
      # Issue 2: naive-atomics and cpu-openmp verify for N x K x M.
      for variant in naive-atomics cpu-openmp; do
        for n in 2 4 8 32; do for k in 3..3 3..7; do for m in 1000 1M 32M; do
          timeout 300 $MK run --variant $variant --dims $n --k $k --points $m --iters 10 --warmup 1 --verify \
            --no-tuned --format csv --out $OUT/raw/acc2-$variant-$n-$k-$m.json >$OUT/raw/acc2-$variant-$n-$k-$m.csv 2>&1
          echo "$variant N=$n K=$k M=$m rc=$?" | tee -a $OUT/acceptance2.txt
        done; done; done
      done
      note "acceptance2: $(grep -c 'rc=0' $OUT/acceptance2.txt) of $(wc -l < $OUT/acceptance2.txt) rc=0" ;;
    peak)
      $MK peak 2>&1 | tee $OUT/raw/peak.txt | tail -8; note "peak rc=$?" ;;
    sanitize)
      for variant in $($MK list --names-only --gpu-only 2>/dev/null); do
        for tool in memcheck racecheck; do
          compute-sanitizer --tool $tool --error-exitcode 9 $MK run --variant $variant --dims 8 --points 4096 \
            --k 3..5 --iters 2 --warmup 1 --verify >$OUT/raw/san-$tool-$variant.log 2>&1
          rc=$?
          errs=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/raw/san-$tool-$variant.log | tail -1)
          note "sanitize $tool $variant rc=$rc ${errs}"
        done
      done ;;
    matrix)
      $MK verify-matrix --points ${MATRIX_POINTS:-1000,1M,8M} --out $OUT/verify-matrix.json \
        >$OUT/verify-matrix.md 2>$OUT/raw/verify-matrix.log
      rc=$?; tail -3 $OUT/verify-matrix.md; note "verify-matrix rc=$rc $(tail -1 $OUT/verify-matrix.md)" ;;
    perf)
      for case in "8 3..7 32M" "4 3..5 32M" "16 3..7 32M" "32 1024 2M" "8 16 8M"; do
        set -- $case
        for variant in $($MK list --names-only --gpu-only 2>/dev/null); do
          $MK run --variant $variant --dims $1 --k $2 --points $3 --iters 20 --verify \
            --out $OUT/raw/perf-$variant-$1-$2-$3.json --format csv >>$OUT/raw/perf.csv 2>>$OUT/raw/perf.log
          echo "$variant N=$1 K=$2 M=$3 rc=$?" >>$OUT/raw/perf-status.txt
        done
      done
      note "perf done" ;;
    table1|table2|table3|kernels|blobs|smoke)
      $MK --suite $stage --out $OUT/$stage.json 2>$OUT/raw/$stage.log | tee $OUT/$stage.txt | tail -25
      note "suite $stage rc=${PIPESTATUS[0]}" ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done
tar czf $OUT/raw.tgz -C $OUT raw 2>/dev/null && rm -rf $OUT/raw
echo; echo "==== device summary ===="; printf '%s\n' "${summary[@]}"
