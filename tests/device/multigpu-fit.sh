# tests/device.sh stage multigpu-fit (sourced by tests/device.sh; docs/multi-gpu.md, "A fit beyond one GPU").
# `mkbench fit` on every GPU of the machine over data that one of them cannot hold (uniform,
# MFIT_DIMS=16 dimensions, at least 2^31 rows and 1.02x GPU 0's memory), against the same fit of
# MFIT_BASELINE_ROWS (2^28) rows on GPU 0 with the variant the sharded fit chose: the goal is
# the per-point rate of a step, >= 3.5x one GPU's on 4 GPUs (1.85x on 2). Each fit runs
# MFIT_STEPS steps at tol 0 from k-means++, which seeds from a sample when the data exceed GPU 0.
# Uniform data, because planted blobs converge in two steps (4xH200 at b171f53), too few to time;
# a baseline of 2^28 rows, because generating the points on the host is most of the stage's time
# and a step's per-point rate is flat from there up.
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
if ((gpus < 2)); then note "skipped multigpu-fit: $gpus GPU(s), it needs 2 or more"; return 0; fi
dims=${MFIT_DIMS:-16}
k=${MFIT_K:-16}
steps=${MFIT_STEPS:-10}
total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 | head -1)
# Rows: 1.02x GPU 0's memory in points, rounded up to 2^28, at least 2^31, a multiple of the GPUs.
rows=$(python3 -c "
import math,sys
mib,n,g=int(sys.argv[1]),int(sys.argv[2]),int(sys.argv[3])
m=max(1<<31, math.ceil(1.02*mib*2**20/(4*n)/2**28)*2**28)
print(m//g*g)" "$total_mib" "$dims" "$gpus")
per_gpu=$((rows / gpus)); baseline=${MFIT_BASELINE_ROWS:-268435456}; ((baseline > per_gpu)) && baseline=$per_gpu
scratch=${MFIT_SCRATCH:-/tmp/mkbench-multigpu-fit}
rm -rf "$scratch"; mkdir -p "$scratch"
common=(--dataset ${MFIT_DATASET:-uniform} --dims $dims --k $k --max-iter $steps --tol 0)
echo "-- fit of $rows x $dims (K=$k, $steps steps) on $gpus GPUs; one GPU: $baseline rows"
start=$SECONDS
timeout $(cap 400) $MK fit "${common[@]}" --points $rows --device all --out $scratch/all \
  2>&1 | while IFS= read -r line; do echo "$((SECONDS - start)) s: $line"; done >$OUT/raw/multigpu-fit-all.txt
rc=${PIPESTATUS[0]}; wall_all=$((SECONDS - start))
cat $OUT/raw/multigpu-fit-all.txt | tail -8
if ((rc != 0)); then note "multigpu-fit on $gpus GPUs rc=$rc"; rm -rf "$scratch"; return 0; fi
cp $scratch/all/fit.json $OUT/multigpu-fit-g$gpus.json
variant=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["variant"]["name"])' $scratch/all/fit.json)
rm -rf "$scratch/all"  # the labels (4 bytes a row) are not needed past fit.json
start=$SECONDS
timeout $(cap 300) $MK fit "${common[@]}" --points $baseline --variant $variant --device 0 --out $scratch/one \
  2>&1 | while IFS= read -r line; do echo "$((SECONDS - start)) s: $line"; done >$OUT/raw/multigpu-fit-one.txt
rc=${PIPESTATUS[0]}; wall_one=$((SECONDS - start))
tail -4 $OUT/raw/multigpu-fit-one.txt
if ((rc != 0)); then note "multigpu-fit on GPU 0 rc=$rc"; rm -rf "$scratch"; return 0; fi
cp $scratch/one/fit.json $OUT/multigpu-fit-g1.json
rm -rf "$scratch"
goal=$( ((gpus >= 4)) && echo 3.5 || echo 1.85)
python3 tests/multigpu_fit_table.py $OUT/multigpu-fit-g1.json $OUT/multigpu-fit-g$gpus.json --goal $goal \
  --wall $wall_one --wall $wall_all | tee $OUT/multigpu-fit.txt
note "multigpu-fit rc=${PIPESTATUS[0]}: $(tail -1 $OUT/multigpu-fit.txt)"
