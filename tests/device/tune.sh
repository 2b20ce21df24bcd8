# tests/device.sh stage tune (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 6 (reduced to fit the lease): random then anneal on the Table-1 shape, a shared
# cache, then a replay comparison of the strategies over what was recorded.
for strategy in random anneal; do
  timeout $(cap 150) $MK tune --dims 8 --k 3..7 --points 32M --variants registers-multik --strategy $strategy \
    --max-evals ${TUNE_EVALS:-40} --samples 10 --warmup 2 --cache $OUT/raw/tune-cache.jsonl \
    --config-out $OUT/raw/tuned-config.json >$OUT/raw/tune-$strategy.txt 2>$OUT/raw/tune-$strategy.log
  echo "tune $strategy rc=$?"; tail -6 $OUT/raw/tune-$strategy.txt
done
$MK tune --replay $OUT/raw/tune-cache.jsonl --compare --repeats 10 --max-evals 20 >$OUT/tune.txt 2>&1
tail -12 $OUT/tune.txt
note "tune done"
