# tests/device.sh stage seeding (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 31's k-means++ goals on an H200: K=64 on 8M x 8 <= 10 ms, K=1024 on 2M x 32 <= 100 ms
# (docs/seeding.md). The CPU path on the first shape must choose the same centres (equal
# chosen_xxh3_128). SEED_RUNS repetitions, the median reported. Then k-means|| (issue 31: "if it
# wins at large K: measure it") at the same shapes, its CPU path on the first shape (equal
# centres_xxh3_128).
for shape in "64 8 8M" "1024 32 2M"; do
  read -r k n m <<<"$shape"
  json=$OUT/seed-k$k-n$n-gpu.json
  timeout $(cap 240) $MK seed --init k-means++ --k $k --dims $n --points $m --runs ${SEED_RUNS:-5} \
    --out $json 2>&1 | tail -2
  note "seed K=$k N=$n M=$m gpu rc=${PIPESTATUS[0]} $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("median %.2f ms min %.2f ms xxh3 %s" % (d["median_seconds"]*1e3, min(d["seconds"])*1e3, d["chosen_xxh3_128"][:12]))' $json 2>/dev/null)"
done
timeout $(cap 240) $MK seed --cpu --init k-means++ --k 64 --dims 8 --points 8M --runs 1 --out $OUT/seed-k64-n8-cpu.json 2>&1 | tail -1
note "seed K=64 N=8 M=8M cpu rc=${PIPESTATUS[0]} $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.0f ms xxh3 %s" % (d["median_seconds"]*1e3, d["chosen_xxh3_128"][:12]))' $OUT/seed-k64-n8-cpu.json 2>/dev/null)"
for shape in "64 8 8M" "1024 32 2M"; do
  read -r k n m <<<"$shape"
  json=$OUT/seed-parallel-k$k-n$n-gpu.json
  timeout $(cap 240) $MK seed --init 'k-means||' --k $k --dims $n --points $m --runs ${SEED_RUNS:-5} \
    --out $json 2>&1 | tail -2
  note "seed k-means|| K=$k N=$n M=$m gpu rc=${PIPESTATUS[0]} $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("median %.2f ms min %.2f ms xxh3 %s" % (d["median_seconds"]*1e3, min(d["seconds"])*1e3, d["centres_xxh3_128"][:12]))' $json 2>/dev/null)"
done
timeout $(cap 240) $MK seed --cpu --init 'k-means||' --k 64 --dims 8 --points 8M --runs 1 \
  --out $OUT/seed-parallel-k64-n8-cpu.json 2>&1 | tail -1
note "seed k-means|| K=64 N=8 M=8M cpu rc=${PIPESTATUS[0]} $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.0f ms xxh3 %s" % (d["median_seconds"]*1e3, d["centres_xxh3_128"][:12]))' $OUT/seed-parallel-k64-n8-cpu.json 2>/dev/null)"
