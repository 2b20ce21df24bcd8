# tests/device.sh stage acceptance2 (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 2: naive-atomics and cpu-openmp verify for N x K x M.
for variant in naive-atomics cpu-openmp; do
  for n in 2 4 8 32; do for k in 3..3 3..7; do for m in 1000 1M 32M; do
    timeout $(cap 300) $MK run --variant $variant --dims $n --k $k --points $m --iters 10 --warmup 1 --verify \
      --no-tuned --format csv --out $OUT/raw/acc2-$variant-$n-$k-$m.json >$OUT/raw/acc2-$variant-$n-$k-$m.csv 2>&1
    echo "$variant N=$n K=$k M=$m rc=$?" | tee -a $OUT/acceptance2.txt
  done; done; done
done
python3 scripts/merge-results.py $OUT/acceptance2.json $OUT/raw/acc2-*.json
note "acceptance2: $(grep -c 'rc=0' $OUT/acceptance2.txt) of $(wc -l < $OUT/acceptance2.txt) rc=0"
