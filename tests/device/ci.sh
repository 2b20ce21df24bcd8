# tests/device.sh stage ci (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# The GPU CI recipe (<= 10 minutes on an H100/H200 with 16 cores; docs/perf-gate.md): the whole
# ctest, a slice of the verify matrix, compute-sanitizer on the default fast paths, and the perf
# gate against the stored baseline. Run after `build`. Exit status: the first failure's.
ci_start=$SECONDS
ci_rc=0
# The whole ctest as the test stage runs it (two OpenMP threads a test, longest tests first).
source tests/device/test.sh
((rc == 0)) || ci_rc=1
timeout $(cap 90) $MK verify-matrix --points 100000 --dims 4,8,32 --k 3..7,64..64 --out $OUT/verify-matrix-ci.json \
  >$OUT/raw/ci-matrix.txt 2>&1
rc=$?; ((rc == 0)) || ci_rc=1
note "ci verify-matrix slice rc=$rc: $(grep -c '✗' $OUT/raw/ci-matrix.txt) failing cells"
for spec in "tensor-multik 8 3..7" "tensor-multik 4 3..5" "tf32-window 32 256" "registers-multik 8 3..7"; do
  set -- $spec
  for tool in memcheck racecheck; do
    timeout $(cap 120) compute-sanitizer --tool $tool --error-exitcode 9 $MK run --variant $1 --dims $2 --k $3 \
      --points 40000 --iters 2 --warmup 1 --verify >$OUT/raw/ci-san-$tool-$1-$2.log 2>&1 || ci_rc=1
    echo "$tool $1 N=$2 K=$3 M=40000: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/raw/ci-san-$tool-$1-$2.log | tail -1)" \
      | tee -a $OUT/sanitize-ci.txt
  done
done
MKBENCH=$MK timeout $(cap 150) scripts/perf-gate.sh ${CI_GATE_SUITE:-table1} ${CI_GATE_THRESHOLD:-5%} \
  >$OUT/raw/ci-gate.md 2>&1 || ci_rc=1
note "ci perf gate: $(grep -m1 -E 'REGRESSION|NOT JUDGED|no regression' $OUT/raw/ci-gate.md)"
note "ci rc=$ci_rc ($((SECONDS - ci_start)) s after the build)"
