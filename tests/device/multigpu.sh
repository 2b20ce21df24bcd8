# tests/device.sh stage multigpu (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Scaling: MGPU_CASES ("N K M;...", default the issue's N=8 K=3..7 M=256M) on 1, 2 and (where
# present) 4 GPUs of this process, MGPU_VARIANT (tensor-multik, the fastest one-GPU kernel at N=8 K=3..7 in perf-N8-K3..7-M32M.json), tuned configs as `run`
# uses them. Goals: 2 GPUs >= 1.85x one, 4 GPUs >= 3.5x. Peaks: run the peak stage first
# for measured roofs; rows otherwise carry the theoretical ones.
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
lists="0 0,1"; ((gpus >= 4)) && lists="$lists 0,1,2,3"
IFS=';' read -ra cases <<<"${MGPU_CASES:-8 3..7 256M}"
for case in "${cases[@]}"; do
  set -- $case
  files=()
  for list in $lists; do
    shards=$(( $(tr -cd , <<<"$list" | wc -c) + 1 ))
    file=$OUT/multigpu-N$1-K$2-M$3-g$shards.json
    timeout $(cap 200) $MK run --variant ${MGPU_VARIANT:-tensor-multik} --dims $1 --k $2 --points $3 \
      --iters ${MGPU_ITERS:-20} --device $list --no-peak-measure --out $file >$OUT/raw/multigpu-g$shards.txt 2>&1
    rc=$?; ((rc == 0)) && files+=("$file") || { tail -3 $OUT/raw/multigpu-g$shards.txt; note "multigpu N=$1 K=$2 M=$3 on $list rc=$rc"; }
  done
  echo "-- N=$1 K=$2 M=$3 (${MGPU_VARIANT:-tensor-multik})"
  python3 tests/multigpu_table.py "${files[@]}" --goal 2=1.85 --goal 4=3.5 | tee $OUT/multigpu-N$1-K$2-M$3.txt
  note "multigpu N=$1 K=$2 M=$3 rc=${PIPESTATUS[0]}: $(tail -n +3 $OUT/multigpu-N$1-K$2-M$3.txt | awk '{print $1" GPUs "$4}' | tr '\n' ' ')"
done
