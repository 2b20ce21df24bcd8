# tests/device.sh stage fit-fmnist (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 31: Fashion-MNIST (60000 x 784) end to end on the GPU, `fit --k 5..15` (the check) and
# `fit --k 2..20` (the whole-fit benchmark: seeding, iterations to convergence, labels and
# metrics). Images: FMNIST_IDX, else the dataset-fashion-mnist package's, else a carried
# build-carry/fmnist/train-images-idx3-ubyte.gz.
images=${FMNIST_IDX:-$(dpkg -L dataset-fashion-mnist 2>/dev/null | grep 'train-images-idx3-ubyte' | head -1)}
[[ -n $images && -f $images ]] || images=build-carry/fmnist/train-images-idx3-ubyte.gz
if [[ ! -f $images ]]; then
  note "skipped fit-fmnist: no Fashion-MNIST images (dataset-fashion-mnist, FMNIST_IDX or build-carry/fmnist/)"; return
fi
for range in ${FMNIST_RANGES:-5..15 2..20}; do
  tag=fit-fmnist-k${range/../-}
  rm -rf $BUILD/$tag; start=$(date +%s.%N)
  timeout $(cap 300) $MK fit --dataset idx:$images --k $range --quiet --out $BUILD/$tag >$OUT/$tag.txt 2>$OUT/raw/$tag.log
  rc=$?; wall=$(python3 -c "import sys; print(round($(date +%s.%N) - $start, 3))")
  cp $BUILD/$tag/fit.json $OUT/$tag.json 2>/dev/null
  fit_summary=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d["time_s"]
print("best_k", d["best_k"], "(%s)," % d["best_k_rule"], "steps", d["steps"], "| seeding %.3f iterations %.3f labels %.3f metrics %.3f total %.3f s" % (t["seeding"], t["iterations"], t["labels"], t["metrics"], t["total"]), "|", d["variant"]["name"])' \
    $OUT/$tag.json 2>/dev/null)
  note "fit-fmnist --k $range rc=$rc wall ${wall}s (load included): $fit_summary"
done
