# Stage `stream` (sourced by tests/device.sh; $BUILD, $MK, $OUT, note, cap, need): issue 34 §4,
# seed 001's streaming k-means (`mkbench fit --stream`, docs/streaming.md).
#  1. The GPU tests of the slice: StreamFit*, the weighted fit's gtests, and
#     FitWeightedVsSklearn.* (a GPU variant's weighted fit against scikit-learn and cpu-openmp).
#  2. Seed 001's case, n = 64M, k = 64, d = 8 (uniform [0,1) data, as the seed's), from data in
#     host memory (the generator materialises it before the clock starts; fit.json's time_s
#     counts the pinned host->device copies): the GPU streaming fit, the same streaming
#     algorithm on cpu-openmp with every core, and full Lloyd with k-means++ on the GPU for the
#     inertia. Then the one-core ratio at n = 4M (GPU and OMP_NUM_THREADS=1 on the same 4M
#     points; the 64M one-core time is also estimated per point, x16, as stated in the table).
# Writes $OUT/stream.txt (the table) and $OUT/stream.json (every fit.json), raw logs in raw/.
stream_dir=$OUT/raw/stream
mkdir -p $stream_dir
timeout $(cap 120) $BUILD/mkbench_tests --gtest_filter='StreamFit*:SampleWeights*:WeightedKmeansPlusPlus*' \
  >$stream_dir/gtests.log 2>&1
stream_gtests=$(grep -E '^\[  (PASSED|FAILED) ' $stream_dir/gtests.log | tr '\n' ' ')
grep -E "^K=|^blobs|FAILED|Failure" $stream_dir/gtests.log | head -20
(cd $BUILD && timeout $(cap 120) ctest -R 'FitWeightedVsSklearn' --output-on-failure >$stream_dir/sklearn.log 2>&1)
stream_sklearn=$(grep -E 'tests passed|tests failed' $stream_dir/sklearn.log | tail -1)
stream_fit() {  # name, timeout, then mkbench fit arguments
  local name=$1 limit=$2; shift 2
  timeout $(cap $limit) "$@" --quiet --out $stream_dir/$name >$stream_dir/$name.log 2>&1 ||
    echo "stream: $name failed or timed out: $(tail -2 $stream_dir/$name.log)"
}
big=(--dataset uniform --points 64M --dims 8 --k 64 --seed 1 --hold-points)
small=(--dataset uniform --points 4M --dims 8 --k 64 --seed 1 --hold-points)
stream_fit gpu-64M 120 $MK fit --stream "${big[@]}"
stream_fit full-64M 150 $MK fit "${big[@]}" --silhouette-sample 0
stream_fit cpu16-64M 200 $MK fit --stream "${big[@]}" --variant cpu-openmp
stream_fit gpu-4M 60 $MK fit --stream "${small[@]}"
stream_fit cpu1-4M 200 env OMP_NUM_THREADS=1 $MK fit --stream "${small[@]}" --variant cpu-openmp
python3 - "$stream_dir" "$OUT" <<'PY' | tee $OUT/stream.txt
import json, os, sys
folder, out = sys.argv[1], sys.argv[2]
docs = {}
for name in ["gpu-64M", "full-64M", "cpu16-64M", "gpu-4M", "cpu1-4M"]:
    path = os.path.join(folder, name, "fit.json")
    if os.path.exists(path):
        docs[name] = json.load(open(path))
json.dump(docs, open(os.path.join(out, "stream.json"), "w"), indent=1)
full = docs.get("full-64M")
full_inertia = full["per_k"][0]["inertia"] if full else None
def total(name):
    return docs[name]["time_s"]["total"] if name in docs else None
print(f"{'run':<11} {'n':>4} {'chunks s':>9} {'reduce s':>9} {'final s':>8} {'total s':>8} {'inertia':>12} {'vs Lloyd':>8}")
for name in ["gpu-64M", "cpu16-64M", "gpu-4M", "cpu1-4M"]:
    if name not in docs:
        print(f"{name:<11} missing"); continue
    d = docs[name]; t = d["time_s"]
    ratio = f"{d['inertia'] / full_inertia:.4f}" if full_inertia and name.endswith("64M") else "-"
    print(f"{name:<11} {name.split('-')[1]:>4} {t['chunks']:9.3f} {t['reduce']:9.3f} {t['final']:8.3f} {t['total']:8.3f} "
          f"{d['inertia']:12.6e} {ratio:>8}")
if full:
    print(f"full Lloyd k-means++ (GPU, {full['variant']['name']}): inertia {full_inertia:.6e}, "
          f"{full['per_k'][0]['iterations']} steps, {full['time_s']['total']:.3f} s")
if total("gpu-64M") and total("cpu16-64M"):
    print(f"GPU over cpu-openmp on every core, n=64M end to end: {total('cpu16-64M') / total('gpu-64M'):.1f}x (goal >= 20x)")
if total("gpu-4M") and total("cpu1-4M"):
    print(f"GPU over one core, n=4M: {total('cpu1-4M') / total('gpu-4M'):.1f}x (seed 001: 52.7x at n=64M)")
if total("gpu-64M") and total("cpu1-4M"):
    print(f"GPU over one core, n=64M with the one-core time scaled per point (x16): "
          f"{16 * total('cpu1-4M') / total('gpu-64M'):.1f}x")
PY
note "stream: gtests ${stream_gtests}; FitWeightedVsSklearn ${stream_sklearn}; $(grep -E 'every core' $OUT/stream.txt)"
