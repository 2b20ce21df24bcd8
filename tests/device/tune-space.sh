# tests/device.sh stage tune-space (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 6: exhaustive, then random and anneal with the same small budget, on table1's
# grid x ppt space (the other axes pinned to the Table-1 defaults, block 256 as the seed).
mkdir -p $OUT/raw/tune-space
pins="--fix block=256 --fix layout=aos --fix accumulate=mma --fix centroids=constant --fix lane_points=1"
common="--dims 8 --k 3..7 --points 32M --variants registers-multik $pins --samples 10 --warmup 2"
if [[ -n ${TUNE_SPACE_EXHAUSTIVE_CACHE:-} ]]; then  # an earlier call's exhaustive sweep
  cp "${TUNE_SPACE_EXHAUSTIVE_CACHE}" $OUT/raw/tune-space/exhaustive.jsonl
  echo "exhaustive: from ${TUNE_SPACE_EXHAUSTIVE_CACHE}" | tee $OUT/tune-space.txt
else
  timeout $(cap ${TUNE_SPACE_TIMEOUT:-240}) $MK tune $common --strategy exhaustive --cache $OUT/raw/tune-space/exhaustive.jsonl \
    --config-out $OUT/raw/tune-space/exhaustive-config.json >$OUT/raw/tune-space/exhaustive.txt 2>$OUT/raw/tune-space/exhaustive.log
  echo "exhaustive rc=$? $(tail -1 $OUT/raw/tune-space/exhaustive.txt | cut -f3-7)" | tee $OUT/tune-space.txt
fi
for strategy in random anneal; do for seed in ${TUNE_SPACE_SEEDS:-1 2}; do
  timeout $(cap 120) $MK tune $common --strategy $strategy --seed $seed --max-evals ${TUNE_SPACE_EVALS:-10} \
    --cache $OUT/raw/tune-space/$strategy-$seed.jsonl --config-out $OUT/raw/tune-space/$strategy-$seed-config.json \
    >$OUT/raw/tune-space/$strategy-$seed.txt 2>$OUT/raw/tune-space/$strategy-$seed.log
  echo "$strategy seed=$seed rc=$? $(tail -1 $OUT/raw/tune-space/$strategy-$seed.txt | cut -f3-7)" | tee -a $OUT/tune-space.txt
done; done
$MK tune --replay $OUT/raw/tune-space/exhaustive.jsonl $pins --compare --repeats 20 --max-evals ${TUNE_SPACE_EVALS:-10} \
  2>&1 | tee -a $OUT/tune-space.txt | tail -6
cp $OUT/raw/tune-space/exhaustive.jsonl $OUT/tune-space-exhaustive.jsonl
note "tune-space done"
