# tests/device.sh stage ab-trees (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Today's tree against an older commit's whole tree (carried as build-carry/old-src.tgz, made
# here by `git archive --format=tar.gz -o build-carry/old-src.tgz <commit>`): both built, then
# run alternately, AB_ROUNDS rounds of AB_CASES ("N K M[ variant];..."), median of 20 each, the
# new rows verified. For a refactor that must keep the speed (docs/gpu-machine.md).
[[ -f build-carry/old-src.tgz ]] || { note "skipped ab-trees: no build-carry/old-src.tgz"; return; }
rm -rf /tmp/abt && mkdir -p /tmp/abt/src && tar xzf build-carry/old-src.tgz -C /tmp/abt/src
start=$SECONDS
cmake -S /tmp/abt/src -B /tmp/abt/b -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DMKBENCH_BUILD_TESTS=OFF \
  >$OUT/raw/abt-cmake.log 2>&1 && cmake --build /tmp/abt/b -j16 --target mkbench >$OUT/raw/abt-build.log 2>&1
rc=$?; note "ab-trees: old build rc=$rc ($((SECONDS-start)) s)"; ((rc == 0)) || return
IFS=';' read -ra cases <<<"${AB_CASES:-8 3..7 32M;4 3..5 32M;16 3..7 32M;32 1024 2M tf32-window;8 16 8M}"
for round in $(seq ${AB_ROUNDS:-2}); do for case in "${cases[@]}"; do
  set -- $case
  for side in old new; do
    bin=$MK; verify=--verify; [[ $side == old ]] && bin=/tmp/abt/b/mkbench && verify=
    tag=abt-$side-N$1-K$2-M$3-r$round
    timeout $(cap 120) $bin run --variant ${4:-tensor-multik} --dims $1 --k $2 --points $3 --iters 20 $verify \
      --out $OUT/raw/$tag.json >/dev/null 2>>$OUT/raw/abt.log
    printf '%s %s N=%s K=%s M=%s round %s rc=%s %s\n' $side ${4:-tensor-multik} $1 $2 $3 $round $? "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rows"][0]; print(round(r["summary"]["median_ms"],4), (r.get("verify") or {}).get("passed"))' $OUT/raw/$tag.json 2>/dev/null)" | tee -a $OUT/ab-trees.txt
  done
done; done
note "ab-trees done"
