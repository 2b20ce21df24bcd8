# tests/device.sh stage mainstream (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# --- gemm-window and auto on issue 32's mainstream shapes ------------------------------
# Issue 32 in one stage (about 6 minutes on an H200, after `build`): (a) gemm-window's GPU
# tests, (b) compute-sanitizer memcheck and racecheck on gemm-window and tf32-window at small
# shapes, (c) the goal table:
# gemm-window and auto (MAINSTREAM_VARIANTS) with --verify, median of 10, one results file a
# row, and Flash-KMeans on the same rows (scripts/peer-flash-kmeans.py, from a checkout in
# third_party/flash-kmeans; skipped cleanly without one). The table is printed last.
# MAINSTREAM_PARTS picks parts (default "tests sanitize rows"), so that a build and the whole stage,
# which do not fit in one 600 s lease call, can be split over two calls on a warm machine.
start=$SECONDS
parts=" ${MAINSTREAM_PARTS:-tests sanitize rows} "
if [[ $parts == *" tests "* ]]; then
timeout $(cap ${MAINSTREAM_TEST_BUDGET:-150}) $BUILD/mkbench_tests \
  --gtest_filter="${MAINSTREAM_TEST_FILTER:-*GemmWindow*:*gemm_window*:StepPhasesContract.*}" \
  >$OUT/raw/mainstream-gpu-tests.log 2>&1; rc=$?
cp $OUT/raw/mainstream-gpu-tests.log $OUT/mainstream-gpu-tests.txt
grep -E "^\[  FAILED  \]" $OUT/raw/mainstream-gpu-tests.log | head -10
note "mainstream gpu tests rc=$rc: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)  \] [0-9]+ test' $OUT/raw/mainstream-gpu-tests.log | tr '\n' ' ')"
fi
if [[ $parts == *" sanitize "* ]]; then
# tf32-window at 128 and 96 dims and the smallest K, where its sweeps' look-ahead past the
# image would reach the per-warp scratch unclamped (ab/tf32-window-norm-pairs.txt), and at 32 dims.
for san in "gemm-window 96 300 3000" "tf32-window 128 64 3001" "tf32-window 96 64 3001" "tf32-window 32 256 5000"; do
  set -- $san
  for tool in memcheck racecheck; do
    timeout $(cap 90) compute-sanitizer --tool $tool --error-exitcode 9 $MK run --variant $1 --dims $2 \
      --points $4 --k $3 --iters 1 --warmup 1 --verify --no-tuned >$OUT/raw/mainstream-san-$tool-$1-$2.log 2>&1
    rc=$?
    errs=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/raw/mainstream-san-$tool-$1-$2.log | tail -1)
    echo "$tool $1 N=$2 K=$3 M=$4 rc=$rc: $errs" | tee -a $OUT/mainstream-sanitize.txt
    note "mainstream sanitize $tool $1 N=$2 rc=$rc $errs"
  done
done
fi
[[ $parts == *" rows "* ]] || return 0
variants=${MAINSTREAM_VARIANTS:-gemm-window,auto}
# A fourth field is a batch: B problems of M points each (run --batch B; docs/batched.md).
IFS=';' read -ra cases <<<"${MAINSTREAM_CASES:-128 1024 2M;64 256 4M;32 64 16M;128 100 1M;8 3..12 32M;256 4096 1M;768 1000 1M;128 1024 65536 32}"
for case in "${cases[@]}"; do
  set -- $case
  tag=N$1-K$2-M$3
  batch=()
  if [[ -n ${4:-} ]]; then tag+=-B$4; batch=(--batch "$4"); fi
  timeout $(cap ${MAINSTREAM_TIMEOUT:-60}) $MK run --variant $variants --dims $1 --k $2 --points $3 "${batch[@]}" \
    --iters 10 --verify ${MAINSTREAM_ARGS:-} --out $OUT/mainstream-$tag.json >$OUT/raw/mainstream-$tag.txt \
    2>$OUT/raw/mainstream-$tag.log
  note "mainstream $case rc=$?"
done
peer_cases=$(printf '%s;' "${cases[@]}")
timeout $(cap ${PEER_TIMEOUT:-120}) python3 scripts/peer-flash-kmeans.py --cases "$peer_cases" \
  --out $OUT/peer-flash-kmeans.json >$OUT/raw/peer-flash-kmeans.log 2>&1
note "mainstream peer rc=$?: $(head -1 $OUT/raw/peer-flash-kmeans.log)"
note "mainstream done in $((SECONDS - start)) s (table: mainstream.txt, also at the end of the summary)"
python3 scripts/mainstream-table.py --results "$OUT" --cases "$peer_cases" >$OUT/mainstream.txt 2>&1
while IFS= read -r line; do summary+=("$line"); done <$OUT/mainstream.txt
