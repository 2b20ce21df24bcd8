# tests/device.sh stage ab-builds (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Today's code against an older version of one source file (ABB_FILE, the old copy carried
# as build-carry/ab-old/<basename>): a second build with that file swapped in, then both
# binaries alternately on ABB_CASES ("N K M;..."), ABB_ROUNDS times, tuned config (or
# ABB_ARGS, e.g. --no-tuned --param ...), median of 20 each; the new rows are verified
# (ABB_VERIFY: new, both, none).
need ABB_FILE || return
rm -rf /tmp/abb && mkdir -p /tmp/abb
tar cf - --exclude=./build-device --exclude=./build --exclude=./build-carry --exclude=./build-slow . | tar xf - -C /tmp/abb
cp build-carry/ab-old/$(basename $ABB_FILE) /tmp/abb/$ABB_FILE
start=$SECONDS
cmake -S /tmp/abb -B /tmp/abb/b -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DMKBENCH_BUILD_TESTS=OFF \
  >$OUT/raw/abb-cmake.log 2>&1 && cmake --build /tmp/abb/b -j16 --target mkbench >$OUT/raw/abb-build.log 2>&1
rc=$?; note "ab-builds: old build rc=$rc ($((SECONDS-start)) s)"; ((rc == 0)) || return
IFS=';' read -ra cases <<<"${ABB_CASES:-8 3..7 32M;8 16 8M}"
for round in $(seq ${ABB_ROUNDS:-2}); do for case in "${cases[@]}"; do
  set -- $case
  for side in old new; do
    bin=$MK; verify=--verify; [[ $side == old ]] && bin=/tmp/abb/b/mkbench && verify=
    # ABB_VERIFY=both verifies the old rows too, none neither side (to see whether the
    # check before the timed loop moves the timing).
    [[ ${ABB_VERIFY:-new} == both ]] && verify=--verify
    [[ ${ABB_VERIFY:-new} == none ]] && verify=
    tag=abb-$side-N$1-K$2-M$3-r$round
    timeout $(cap 120) $bin run --variant ${ABB_VARIANT:-tensor-multik} --dims $1 --k $2 --points $3 --iters 20 $verify \
      ${ABB_ARGS:-} --out $OUT/raw/$tag.json >/dev/null 2>>$OUT/raw/abb.log
    printf '%s N=%s K=%s M=%s round %s rc=%s %s\n' $side $1 $2 $3 $round $? "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rows"][0]; print(round(r["summary"]["median_ms"],4), (r.get("verify") or {}).get("passed"))' $OUT/raw/$tag.json 2>/dev/null)" | tee -a $OUT/ab-builds.txt
  done
done; done
note "ab-builds done"
