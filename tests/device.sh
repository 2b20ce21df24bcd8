#!/usr/bin/env bash
# Everything the GPU machine should do in one lease call: native sm_90 build, full ctest,
# peak measurement, sanitizers, the verify matrix and the performance cases. Stages can
# be picked, e.g. tests/device.sh build test ci; docs/gpu-machine.md lists every stage.
# Results land directly in $OUT (or build-device/out) under the names of the committed
# standing in reports/results/<gpu>/ (perf-N8-K3..7-M32M.json, table2.json, gpu-tests.txt,
# sanitize.txt, ...), so scripts/promote-results.sh can copy a call's files over the old ones;
# logs go to raw/ (one tarball at the end); a short table is printed last. The lease's copy of the tree may carry a stale .git: name the commit in the
# command, e.g. MKBENCH_GIT_SHA=ab12cd34ef56 (add -dirty for uncommitted changes), so the
# result files say which code ran.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/build-device/out}
mkdir -p "$OUT/raw"
BUILD=build-device
MK=$BUILD/mkbench
stages=("$@")
((${#stages[@]})) || stages=(build test peak sanitize matrix perf)
# `fit` is issue 31's goal shapes for `mkbench fit`: the iteration cost at N=8 K=3..7 M=32M, then
# Fashion-MNIST end to end.
expanded=()
for stage in "${stages[@]}"; do
  if [[ $stage == fit ]]; then expanded+=(fit-iteration fit-fmnist); else expanded+=("$stage"); fi
done
stages=("${expanded[@]}")
summary=()
note() { summary+=("$1"); echo "== $1"; }
# The lease kills a call at 600 s, and then only files directly under $OUT come back (raw/
# is tarred at the end): stages stop at DEADLINE seconds so the tarball is always written.
DEADLINE=${DEADLINE:-575}
# Seconds for a stage's timeout: the wanted value, or what is left before DEADLINE. Values
# with a unit (10m) pass through uncapped, with a warning, rather than breaking the stage.
cap() {
  if [[ ! $1 =~ ^[0-9]+$ ]]; then echo "cap: '$1' is not whole seconds; not capped" >&2; echo "$1"; return; fi
  local left=$((DEADLINE - SECONDS)); ((left < 1)) && left=1; echo $(($1 < left ? $1 : left))
}
# Always leave the logs and the summary, also when a stage fails or a variable is missing.
finish() {
  tar czf $OUT/raw.tgz -C $OUT raw 2>/dev/null && rm -rf $OUT/raw
  echo; echo "==== device summary ===="; printf '%s\n' "${summary[@]}"
}
trap finish EXIT
# The last row of a results CSV as "median min IQR verify" (Params is a quoted field with commas).
csv_row() {
  python3 -c 'import csv,sys; r=list(csv.reader(open(sys.argv[1])))[-1]; print("median", r[5], "min", r[6], "IQR", r[7], "verify", r[-1])' "$1" 2>/dev/null
}
# The row of a one-row results JSON as "median ms, verify passed" (multigpu stages).
csv_row_json() {
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rows"][0]; print("median", r["summary"]["median_ms"], "verify", (r.get("verify") or {}).get("passed"))' "$1" 2>/dev/null
}
need() { local name; for name; do [[ -n ${!name:-} ]] || { note "skipped $stage: set $name"; return 1; }; done; }

for stage in "${stages[@]}"; do
  if ((SECONDS >= DEADLINE - 5)); then note "skipped $stage: deadline ${DEADLINE}s reached"; continue; fi
  case "$stage" in
    build)
      start=$SECONDS
      cmake -S . -B $BUILD -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >$OUT/raw/cmake.log 2>&1 &&
        cmake --build $BUILD -j16 >$OUT/raw/build.log 2>&1
      rc=$?; tail -5 $OUT/raw/build.log; grep -i "spill" $OUT/raw/build.log | grep -v " 0 bytes spill" | head -5
      note "build rc=$rc ($((SECONDS-start)) s)"; ((rc == 0)) || break ;;
    unpack)
      # Binaries built by an earlier lease call (stage pack), carried back in
      # build-carry/: skips the ~65 s build on a fresh machine.
      mkdir -p $BUILD && tar xzf build-carry/bin.tgz -C $BUILD && note "unpacked carried binaries ($(ls $BUILD | tr '\n' ' '))" ;;
    pack)
      tar czf $OUT/bin.tgz -C $BUILD mkbench mkbench_tests && note "packed binaries ($(du -h $OUT/bin.tgz | cut -f1))" ;;
    test)
      (cd $BUILD && timeout $(cap ${CTEST_BUDGET:-400}) ctest -j8 --output-on-failure --timeout 300 >$OUT/raw/ctest.log 2>&1); rc=$?
      tail -4 $OUT/raw/ctest.log; grep -E "Failed|\*\*\*" $OUT/raw/ctest.log | head -20
      cp $OUT/raw/ctest.log $OUT/ctest.txt
      note "ctest rc=$rc: $(grep -E 'tests passed|tests failed' $OUT/raw/ctest.log | tail -1)" ;;
    gpu-tests)
      # Only the tests that need the GPU (fast; ctest runs everything).
      timeout $(cap ${CTEST_BUDGET:-300}) $BUILD/mkbench_tests --gtest_filter="${GPU_TEST_FILTER:-Registered/*:GemmVariantsOnDevice*:OutOfMemory*}" \
        --gtest_repeat=${GPU_TEST_REPEAT:-1} >$OUT/raw/gpu-tests.log 2>&1; rc=$?
      grep -E "^\[  (PASSED|FAILED|SKIPPED) " $OUT/raw/gpu-tests.log | head -20
      cp $OUT/raw/gpu-tests.log $OUT/gpu-tests.txt
      note "gpu tests rc=$rc: $(grep -E '^\[  PASSED|tests ran' $OUT/raw/gpu-tests.log | tr '\n' ' ')" ;;
    ab)
      # One variant, one axis, several values, on AB_CASES ("N K M;..."), every row verified:
      # AB_VARIANT=gemm-tf32x3 AB_AXIS=update AB_VALUES="global sorted".
      need AB_VARIANT AB_AXIS AB_VALUES || continue
      IFS=';' read -ra cases <<<"${AB_CASES:-32 1024 2M}"
      for case in "${cases[@]}"; do
        set -- $case
        for value in ${AB_VALUES}; do
          tag=${AB_VARIANT}-N$1-K$2-M$3-${AB_AXIS}-$value
          timeout $(cap 120) $MK run --variant ${AB_VARIANT} --dims $1 --k $2 --points $3 --iters 20 --verify --no-tuned \
            --param ${AB_AXIS}=$value --format csv --out $OUT/raw/ab-$tag.json >$OUT/raw/ab-$tag.csv 2>>$OUT/raw/ab.log
          rc=$?
          printf 'ab %s N=%s K=%s M=%s %s=%s rc=%s %s\n' ${AB_VARIANT} $1 $2 $3 ${AB_AXIS} $value $rc \
            "$(csv_row $OUT/raw/ab-$tag.csv)" | tee -a $OUT/ab.txt
        done
      done
      note "ab ${AB_VARIANT} ${AB_AXIS} done" ;;
    sweep)
      # Whole parameter sets of one variant, alternating, SWEEP_ROUNDS rounds, every row
      # verified: SWEEP_CASES ("N K M [a=1,b=2];..."; the optional fourth field is the case's
      # own base params, put before every set's), SWEEP_SETS ("--param a=1 --param b=2|--param a=3").
      # A set may start with "defines:A=1,B=2": it runs with MKBENCH_NVRTC_DEFINES="A=1 B=2" (a
      # kernel experiment behind a macro, against the default in the same binary).
      need SWEEP_SETS || continue
      IFS=';' read -ra cases <<<"${SWEEP_CASES:-16 3..7 32M}"
      IFS='|' read -ra sets <<<"${SWEEP_SETS}"
      for case in "${cases[@]}"; do
        set -- $case
        base=""; for kv in ${4:+${4//,/ }}; do base+=" --param $kv"; done
        for round in $(seq 1 ${SWEEP_ROUNDS:-2}); do
          for i in "${!sets[@]}"; do
            tag=${SWEEP_VARIANT:-tensor-multik}-N$1-K$2-M$3-set$i-r$round
            defines=""; params=${sets[$i]}
            if [[ $params == defines:* ]]; then
              first=${params%% *}; defines=${first#defines:}; defines=${defines//,/ }; params=${params#"$first"}
            fi
            MKBENCH_NVRTC_DEFINES=$defines timeout $(cap 150) $MK run --variant ${SWEEP_VARIANT:-tensor-multik} --dims $1 \
              --k $2 --points $3 --iters 20 --verify --no-tuned $base $params --out $OUT/raw/sweep-$tag.json \
              >/dev/null 2>>$OUT/raw/sweep.log
            printf 'sweep N=%s K=%s M=%s round %s rc=%s set%s [%s] %s\n' $1 $2 $3 $round $? $i "$base ${sets[$i]}" \
              "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rows"][0]; print(round(r["summary"]["median_ms"],4), (r.get("verify") or {}).get("passed"))' $OUT/raw/sweep-$tag.json 2>/dev/null)" \
              | tee -a $OUT/sweep.txt
          done
        done
      done
      note "sweep done ($(grep -c True $OUT/sweep.txt 2>/dev/null) rows verified)" ;;
    table2-verify)
      # table2 with every row checked against the FP64 reference (the suite file leaves it
      # off): the fast paths by default, TABLE2_VERIFY_VARIANTS to change them.
      timeout $(cap ${TABLE2_TIMEOUT:-400}) $MK --suite table2 --verify \
        --variants ${TABLE2_VERIFY_VARIANTS:-tensor-multik,registers-multik,tf32-window,auto} \
        --out $OUT/table2-verify.json >$OUT/table2-verify.txt 2>$OUT/raw/table2-verify.log
      rc=$?; tail -2 $OUT/raw/table2-verify.log
      note "table2 --verify rc=$rc (124 = timeout): $(grep -c 'verify pass' $OUT/raw/table2-verify.log) pass, $(grep -c 'VERIFY FAIL' $OUT/raw/table2-verify.log) FAIL" ;;
    acceptance2)
      # Issue 2: naive-atomics and cpu-openmp verify for N x K x M.
      for variant in naive-atomics cpu-openmp; do
        for n in 2 4 8 32; do for k in 3..3 3..7; do for m in 1000 1M 32M; do
          timeout $(cap 300) $MK run --variant $variant --dims $n --k $k --points $m --iters 10 --warmup 1 --verify \
            --no-tuned --format csv --out $OUT/raw/acc2-$variant-$n-$k-$m.json >$OUT/raw/acc2-$variant-$n-$k-$m.csv 2>&1
          echo "$variant N=$n K=$k M=$m rc=$?" | tee -a $OUT/acceptance2.txt
        done; done; done
      done
      python3 scripts/merge-results.py $OUT/acceptance2.json $OUT/raw/acc2-*.json
      note "acceptance2: $(grep -c 'rc=0' $OUT/acceptance2.txt) of $(wc -l < $OUT/acceptance2.txt) rc=0" ;;
    profile)
      # SASS of the NVRTC kernel + ncu sections for one case (issue 4 notes): PROFILE_VARIANT
      # (registers-multik), PROFILE_KERNEL (its kernel's name regex), PROFILE_CASES ("N K M;...").
      variant=${PROFILE_VARIANT:-registers-multik}; kernel=${PROFILE_KERNEL:-multik_iteration}
      IFS=';' read -ra cases <<<"${PROFILE_CASES:-8 3..7 32M}"
      for case in "${cases[@]}"; do
      set -- $case
      tag=$variant-N$1-K$2
      MKBENCH_PTXAS_VERBOSE=1 MKBENCH_DUMP_CUBIN=$OUT/raw/$tag timeout $(cap 120) $MK run --variant $variant --dims $1 --k $2 \
        --points $3 --iters 10 --warmup 1 ${PROFILE_ARGS:-} >/dev/null 2>$OUT/raw/ptxas-$tag.log
      grep -E "registers|spill" $OUT/raw/ptxas-$tag.log | head -4
      for cubin in $OUT/raw/$tag-*.cubin; do
        cuobjdump -sass $cubin >${cubin%.cubin}.sass 2>&1
        python3 - ${cubin%.cubin}.sass <<'PY'
import re, sys, collections
ops = collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r'\s+/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)', line)
    if m: ops[m.group(1).split('.')[0]] += 1
print(sys.argv[1].split('/')[-1], 'instructions:', sum(ops.values()), dict(ops.most_common(24)))
PY
      done
      # SourceCounters keeps executed-instruction counts per SASS line: exported as CSV, they
      # say where a step's instructions go.
      timeout $(cap 240) ncu --clock-control none --kernel-name regex:$kernel --launch-skip 3 --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section SchedulerStats --section WarpStateStats \
        --section InstructionStats --section ComputeWorkloadAnalysis --section LaunchStats --section MemoryWorkloadAnalysis \
        --section SourceCounters -f -o $OUT/raw/ncu-$tag \
        $MK run --variant $variant --dims $1 --k $2 --points $3 --iters 3 --warmup 1 ${PROFILE_ARGS:-} >/dev/null 2>&1
      ncu -i $OUT/raw/ncu-$tag.ncu-rep --print-details all >$OUT/raw/ncu-$tag.txt 2>&1
      ncu -i $OUT/raw/ncu-$tag.ncu-rep --page source --csv --print-source sass >$OUT/raw/ncu-$tag-sass.csv 2>&1
      python3 reports/sass_mix.py $OUT/raw/ncu-$tag-sass.csv $3 --top 16 | tee $OUT/profile-$tag-sass-mix.txt | head -8
      cp $OUT/raw/ncu-$tag.txt $OUT/profile-$tag.txt
      rm -f $OUT/raw/ncu-$tag.ncu-rep
      grep -E " Duration|DRAM Throughput|Issue Slots Busy|Achieved Occupancy|Registers Per|Stall (Wait|Short|Math|Not Sel|Long)|Pipe (Alu|Tensor|Fma) Cycles" \
        $OUT/raw/ncu-$tag.txt | grep -v Hmma | head -14
      note "profile $tag done"
      done ;;
    timeline)
      # Where one launch's time goes (issue 4), from tensor-multik's global-timer stamps
      # (MKBENCH_TIMELINE): block start skew, prologue, loop, the spread of warps' loop ends, the
      # epilogue and the last block's division, against the event-timed median of the same run.
      # TIMELINE_CASES ("N K M [a=1,b=2];..."), TIMELINE_ARGS (extra mkbench run arguments).
      IFS=';' read -ra cases <<<"${TIMELINE_CASES:-4 3..5 32M}"
      for case in "${cases[@]}"; do
        set -- $case
        params=""; for kv in ${4:+${4//,/ }}; do params+=" --param $kv"; done
        tag=tensor-multik-N$1-K$2-M$3${4:+-${4//[=,]/-}}
        MKBENCH_TIMELINE=$OUT/raw/timeline-$tag.csv timeout $(cap 120) $MK run --variant tensor-multik --dims $1 --k $2 \
          --points $3 --iters 20 --no-tuned $params ${TIMELINE_ARGS:-} --out $OUT/raw/timeline-$tag.json \
          >/dev/null 2>$OUT/raw/timeline-$tag.log
        python3 tests/timeline_summary.py $OUT/raw/timeline-$tag.csv $OUT/raw/timeline-$tag.json "$tag" | tee -a $OUT/timeline.txt
      done
      note "timeline done" ;;
    balance)
      # How evenly one kernel launch keeps the SMs busy (issue 4): per-SM active cycles (min,
      # average, max) against the elapsed cycles, and warps resident per scheduler while active.
      # BALANCE_CASES ("N K M [a=1,b=2];..."), BALANCE_VARIANT (tensor-multik), BALANCE_KERNEL.
      IFS=';' read -ra cases <<<"${BALANCE_CASES:-4 3..5 32M}"
      for case in "${cases[@]}"; do
        set -- $case
        params=""; for kv in ${4:+${4//,/ }}; do params+=" --param $kv"; done
        tag=${BALANCE_VARIANT:-tensor-multik}-N$1-K$2-M$3${4:+-${4//[=,]/-}}
        timeout $(cap 120) ncu --clock-control none --kernel-name regex:${BALANCE_KERNEL:-tensor_multik_iteration} \
          --launch-skip 3 --launch-count 1 --csv --metrics \
          gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max,smsp__warps_active.avg.per_cycle_active,smsp__warps_launched.sum \
          $MK run --variant ${BALANCE_VARIANT:-tensor-multik} --dims $1 --k $2 --points $3 --iters 5 --warmup 1 --no-tuned $params \
          >$OUT/raw/balance-$tag.csv 2>$OUT/raw/balance-$tag.log
        python3 - $OUT/raw/balance-$tag.csv "$tag" <<'PY' | tee -a $OUT/balance.txt
import csv, sys
# (mkbench's own table shares stdout: only ncu's header and metric rows are kept.)
rows = [r for r in csv.reader(open(sys.argv[1])) if "Metric Name" in r or (len(r) > 14 and r[0].isdigit())]
if len(rows) < 2: print(sys.argv[2], "no metrics (see raw/balance log)"); sys.exit()
h = rows[0]; v = {r[h.index("Metric Name")]: r[h.index("Metric Value")].replace(",", "") for r in rows[1:]}
f = lambda k: float(v.get(k, "nan"))
el = f("sm__cycles_elapsed.max")
print(f'{sys.argv[2]}: {f("gpu__time_duration.sum")/1000:.1f} us, elapsed {el:.0f} cycles; SM active min/avg/max '
      f'{f("sm__cycles_active.min")/el:.3f}/{f("sm__cycles_active.avg")/el:.3f}/{f("sm__cycles_active.max")/el:.3f} '
      f'of elapsed; warps per scheduler while active {f("smsp__warps_active.avg.per_cycle_active"):.2f}')
PY
      done
      note "balance done" ;;
    ab-builds)
      # Today's code against an older version of one source file (ABB_FILE, the old copy carried
      # as build-carry/ab-old/<basename>): a second build with that file swapped in, then both
      # binaries alternately on ABB_CASES ("N K M;..."), ABB_ROUNDS times, tuned config (or
      # ABB_ARGS, e.g. --no-tuned --param ...), median of 20 each; the new rows are verified
      # (ABB_VERIFY: new, both, none).
      need ABB_FILE || continue
      rm -rf /tmp/abb && mkdir -p /tmp/abb
      tar cf - --exclude=./build-device --exclude=./build --exclude=./build-carry --exclude=./build-slow . | tar xf - -C /tmp/abb
      cp build-carry/ab-old/$(basename $ABB_FILE) /tmp/abb/$ABB_FILE
      start=$SECONDS
      cmake -S /tmp/abb -B /tmp/abb/b -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DMKBENCH_BUILD_TESTS=OFF \
        >$OUT/raw/abb-cmake.log 2>&1 && cmake --build /tmp/abb/b -j16 --target mkbench >$OUT/raw/abb-build.log 2>&1
      rc=$?; note "ab-builds: old build rc=$rc ($((SECONDS-start)) s)"; ((rc == 0)) || continue
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
      note "ab-builds done" ;;
    ab-trees)
      # Today's tree against an older commit's whole tree (carried as build-carry/old-src.tgz, made
      # here by `git archive --format=tar.gz -o build-carry/old-src.tgz <commit>`): both built, then
      # run alternately, AB_ROUNDS rounds of AB_CASES ("N K M[ variant];..."), median of 20 each, the
      # new rows verified. For a refactor that must keep the speed (docs/gpu-machine.md).
      [[ -f build-carry/old-src.tgz ]] || { note "skipped ab-trees: no build-carry/old-src.tgz"; continue; }
      rm -rf /tmp/abt && mkdir -p /tmp/abt/src && tar xzf build-carry/old-src.tgz -C /tmp/abt/src
      start=$SECONDS
      cmake -S /tmp/abt/src -B /tmp/abt/b -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DMKBENCH_BUILD_TESTS=OFF \
        >$OUT/raw/abt-cmake.log 2>&1 && cmake --build /tmp/abt/b -j16 --target mkbench >$OUT/raw/abt-build.log 2>&1
      rc=$?; note "ab-trees: old build rc=$rc ($((SECONDS-start)) s)"; ((rc == 0)) || continue
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
      note "ab-trees done" ;;
    explore)
      # Seed 000 section 4 on the GPU (docs/explore.md): the subset batch's GPU tests against the
      # FP64 reference, compute-sanitizer memcheck and racecheck on its kernels (300 copies: two
      # blocks of problems, one part-filled; 5003 rows: a part-filled tile and group), then the
      # seed's run timed: 10,000 copies of 3 attributes of 18, k=8, 5 steps over 5M rows. The
      # real SUSY file is used when SUSY_CSV names it (label in column 0, as UCI ships it);
      # otherwise the synthetic SUSY-shaped table (susy:, informative attributes 0, 6 and 17),
      # where the top-ranked subset must be those three.
      timeout $(cap 300) $BUILD/mkbench_tests --gtest_filter='*SubsetBatch*:Explore*' \
        >$OUT/raw/explore-tests.log 2>&1; rc=$?
      grep -E "^\[  (PASSED|FAILED|SKIPPED) " $OUT/raw/explore-tests.log | head -20
      cp $OUT/raw/explore-tests.log $OUT/explore-tests.txt
      note "explore gpu tests rc=$rc: $(grep -E '^\[  PASSED|^\[  FAILED|tests ran' $OUT/raw/explore-tests.log | tr '\n' ' ')"
      for tool in memcheck racecheck; do
        timeout $(cap 240) compute-sanitizer --tool $tool --error-exitcode 9 $MK explore --dataset susy --points 5003 \
          --copies 300 --k 8 --max-iter 3 --engine cuda --no-baseline --quiet >$OUT/raw/san-$tool-explore.log 2>&1
        rc=$?; errs=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/raw/san-$tool-explore.log | tail -1)
        echo "$tool explore (subset batch) S=3 K=8 N=18 M=5003 B=300 rc=$rc: ${errs}" >>$OUT/sanitize-explore.txt
        note "sanitize $tool explore rc=$rc ${errs}"
      done
      if [[ -n ${SUSY_CSV:-} && -f ${SUSY_CSV:-} ]]; then dataset="csv:$SUSY_CSV:label=0"; source_note="real SUSY file $SUSY_CSV"
      else dataset=susy; source_note="SUSY file absent (SUSY_CSV unset): synthetic SUSY-shaped data, susy: informative 0,6,17"; fi
      echo "explore data: $source_note"
      timeout $(cap 300) $MK explore --dataset "$dataset" --copies 10000 --subset-size 3 --k 8 --max-iter 5 --engine cuda \
        --repeat ${EXPLORE_REPEAT:-5} --out $OUT >$OUT/explore.txt 2>$OUT/raw/explore.log; rc=$?
      tail -14 $OUT/explore.txt
      note "explore seed run rc=$rc; data: $source_note"
      [[ $rc == 0 ]] && while IFS= read -r line; do note "$line"; done < <(python3 - "$OUT/explore.json" "$dataset" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); t = d["time_s"]; s = d["summary"]
runs = sorted(t["steps_runs"]); labels = sorted(t["label_pass_runs"])
print(f"explore | copies {s['copies']} ({s['distinct_subsets']} subsets) | M {d['dataset']['m']} N {d['dataset']['n']} | "
      f"engine {d['engine']['name']} on {d['device'].get('name', '?')}")
print(f"explore | 5 steps median {runs[len(runs)//2]:.3f} s | label pass median {labels[len(labels)//2]:.3f} s | "
      f"cluster median {t['cluster']:.3f} s (goal <= 0.5 s: {'met' if t['cluster'] <= 0.5 else 'NOT met'}) | "
      f"prepare {t['prepare']:.2f} s | total {t['total']:.1f} s")
top = d["subsets"][0]; base = d["baseline"]
print(f"explore | top subset {top['columns']} best {top['best']:.4f} | median copy {s['accuracy']['median']:.4f} | "
      f"all attributes {base['accuracy'] if base else 'n/a'} | majority class {d['majority_class_share']:.4f}")
if sys.argv[2] == "susy":
    planted = d["dataset"]["identity"]["params"]["informative"]
    print(f"explore | planted subset {sorted(planted)} ranked first: {'PASS' if top['columns'] == sorted(planted) else 'FAIL'}")
PY
) ;;
    ci)
      # The GPU CI recipe (<= 10 minutes on an H100/H200 with 16 cores; docs/perf-gate.md): the whole
      # ctest, a slice of the verify matrix, compute-sanitizer on the default fast paths, and the perf
      # gate against the stored baseline. Run after `build`. Exit status: the first failure's.
      ci_rc=0
      (cd $BUILD && timeout $(cap ${CTEST_BUDGET:-330}) ctest -j12 --output-on-failure --timeout 300 >$OUT/raw/ci-ctest.log 2>&1) || ci_rc=1
      cp $OUT/raw/ci-ctest.log $OUT/ctest.txt
      note "ci ctest: $(grep -E 'tests passed|tests failed' $OUT/raw/ci-ctest.log | tail -1)"
      timeout $(cap 90) $MK verify-matrix --points 100000 --dims 4,8,32 --k 3..7,64..64 --out $OUT/verify-matrix-ci.json \
        >$OUT/raw/ci-matrix.txt 2>&1
      rc=$?; ((rc == 0)) || ci_rc=1
      note "ci verify-matrix slice rc=$rc: $(grep -c '✗' $OUT/raw/ci-matrix.txt) failing cells"
      for spec in "tensor-multik 8 3..7" "tensor-multik 4 3..5" "tf32-window 32 256" "registers-multik 8 3..7"; do
        set -- $spec
        for tool in memcheck racecheck; do
          timeout $(cap 120) compute-sanitizer --tool $tool --error-exitcode 9 $MK run --variant $1 --dims $2 --k $3 \
            --points 40000 --iters 2 --warmup 1 --verify >$OUT/raw/ci-san-$tool-$1-$2.log 2>&1 || ci_rc=1
          echo "$tool $1 N=$2 K=$3 M=40000: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/raw/ci-san-$tool-$1-$2.log | tail -1)" \
            | tee -a $OUT/sanitize-ci.txt
        done
      done
      MKBENCH=$MK timeout $(cap 150) scripts/perf-gate.sh ${CI_GATE_SUITE:-table1} ${CI_GATE_THRESHOLD:-5%} \
        >$OUT/raw/ci-gate.md 2>&1 || ci_rc=1
      note "ci perf gate: $(grep -m1 -E 'REGRESSION|NOT JUDGED|no regression' $OUT/raw/ci-gate.md)"
      note "ci rc=$ci_rc" ;;
    mscan)
      # Time per iteration against M for one variant and shape (MSCAN_VARIANT, MSCAN_DIMS,
      # MSCAN_K, MSCAN_POINTS): the intercept is the per-iteration cost that does not scale
      # with the data (launch, prologue, epilogue).
      for points in ${MSCAN_POINTS:-1M 2M 4M 8M 16M}; do
        timeout $(cap 60) $MK run --variant ${MSCAN_VARIANT:-tensor-multik} --dims ${MSCAN_DIMS:-8} --k ${MSCAN_K:-16} \
          --points $points --iters 30 ${MSCAN_ARGS:-} --format csv --out $OUT/raw/mscan-$points.json \
          >$OUT/raw/mscan-$points.csv 2>>$OUT/raw/mscan.log
        printf 'mscan %s N=%s K=%s M=%s rc=%s %s\n' ${MSCAN_VARIANT:-tensor-multik} ${MSCAN_DIMS:-8} ${MSCAN_K:-16} $points $? \
          "$(csv_row $OUT/raw/mscan-$points.csv)" | tee -a $OUT/mscan.txt
      done
      note "mscan done" ;;
    peak)
      $MK peak 2>&1 | tee $OUT/peak.txt | tail -8; note "peak rc=${PIPESTATUS[0]}" ;;
    sanitize-one)
      # One variant on a shape it implements: SANITIZE_VARIANT, SANITIZE_DIMS (SANITIZE_K, SANITIZE_POINTS).
      need SANITIZE_VARIANT || continue
      for tool in memcheck racecheck; do
        timeout $(cap 300) compute-sanitizer --tool $tool --error-exitcode 9 $MK run --variant ${SANITIZE_VARIANT} --dims ${SANITIZE_DIMS:-32} \
          --points ${SANITIZE_POINTS:-4096} --k ${SANITIZE_K:-3..5} --iters 2 --warmup 1 --verify ${SANITIZE_ARGS:-} \
          >$OUT/raw/san-$tool-${SANITIZE_VARIANT}.log 2>&1
        rc=$?
        note "sanitize $tool ${SANITIZE_VARIANT} N=${SANITIZE_DIMS:-32} K=${SANITIZE_K:-3..5} ${SANITIZE_ARGS:-} rc=$rc $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/raw/san-$tool-${SANITIZE_VARIANT}.log | tail -1)"
        echo "$tool ${SANITIZE_VARIANT} N=${SANITIZE_DIMS:-32} K=${SANITIZE_K:-3..5} M=${SANITIZE_POINTS:-4096} ${SANITIZE_ARGS:-} rc=$rc: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/raw/san-$tool-${SANITIZE_VARIANT}.log | tail -1)" \
          >>$OUT/sanitize-${SANITIZE_VARIANT}.txt
      done ;;
    kernels-rest)
      # The part of the kernels suite earlier calls could not fit: KERNELS_REST names a suite
      # file holding only those cases (default: the N=128, M=8M rows, written here). Merge the
      # parts into the standing with scripts/merge-results.py kernels.json PART.json...
      rest=${KERNELS_REST:-$BUILD/kernels-rest-suite.json}
      [[ -n ${KERNELS_REST:-} ]] || python3 - $rest <<'PY'
import json, sys
json.dump({"name": "kernels", "description": "the kernels suite's N=128, M=8M rows", "dataset": "uniform", "seed": 42,
           "iters": 5, "warmup": 1, "verify": False,
           "cases": [{"dims": [128], "k": ["16", "64", "256", "1024", "4096"], "points": ["8M"], "variants": ["all-gpu"]}],
           "cpu_fallback": {"points": ["8K"], "variants": ["cpu-openmp"]}, "report": {"kind": "generic"}}, open(sys.argv[1], "w"), indent=2)
PY
      timeout $(cap ${SUITE_TIMEOUT:-590}) $MK --suite $rest --out $OUT/kernels-rest.json 2>$OUT/raw/kernels-rest.log | tail -5
      note "suite $(basename $rest) rc=${PIPESTATUS[0]} rows: $(grep -c '"variant"' $OUT/kernels-rest.json)" ;;
    sanitize)
      for variant in $($MK list --names-only --gpu-only 2>/dev/null); do
        for tool in memcheck racecheck; do
          timeout $(cap 300) compute-sanitizer --tool $tool --error-exitcode 9 $MK run --variant $variant --dims 8 --points 4096 \
            --k 3..5 --iters 2 --warmup 1 --verify >$OUT/raw/san-$tool-$variant.log 2>&1
          rc=$?
          errs=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/raw/san-$tool-$variant.log | tail -1)
          note "sanitize $tool $variant rc=$rc ${errs}"
          echo "$tool $variant N=8 K=3..5 M=4096 rc=$rc: ${errs}" >>$OUT/sanitize.txt
        done
      done ;;
    seeding)
      # Issue 31's k-means++ goals on an H200: K=64 on 8M x 8 <= 10 ms, K=1024 on 2M x 32 <= 100 ms
      # (docs/seeding.md). Both GPU schedules; the CPU path on the first shape must choose the
      # same centres (equal chosen_sha256). SEED_RUNS repetitions, the median reported.
      for shape in "64 8 8M" "1024 32 2M"; do
        read -r k n m <<<"$shape"
        for schedule in persistent stepwise; do
          json=$OUT/seed-k$k-n$n-$schedule.json
          timeout $(cap 240) $MK seed --init k-means++ --k $k --dims $n --points $m --runs ${SEED_RUNS:-5} \
            --gpu-schedule $schedule --out $json 2>&1 | tail -2
          note "seed K=$k N=$n M=$m $schedule rc=${PIPESTATUS[0]} $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("median %.2f ms min %.2f ms sha %s" % (d["median_seconds"]*1e3, min(d["seconds"])*1e3, d["chosen_sha256"][:12]))' $json 2>/dev/null)"
        done
      done
      timeout $(cap 240) $MK seed --cpu --init k-means++ --k 64 --dims 8 --points 8M --runs 1 --out $OUT/seed-k64-n8-cpu.json 2>&1 | tail -1
      note "seed K=64 N=8 M=8M cpu rc=${PIPESTATUS[0]} $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.0f ms sha %s" % (d["median_seconds"]*1e3, d["chosen_sha256"][:12]))' $OUT/seed-k64-n8-cpu.json 2>/dev/null)" ;;
    sanitize-seeding)
      # The k-means++ kernels under compute-sanitizer: both schedules, float4 and scalar rows,
      # 8- and 16-candidate kernels, a K range over several tiles; then the GPU tests (all D²
      # zero, fewer points than a tile, 32 candidates) under memcheck.
      for tool in memcheck racecheck synccheck initcheck; do
        for schedule in persistent stepwise; do
          for args in "--k 40 --dims 8 --points 5000" "--k 20 --dims 5 --points 3000 --candidates 12"; do
            log=$OUT/raw/san-seed-$tool-$schedule-$(echo $args | tr -d ' -').log
            timeout $(cap 300) compute-sanitizer --tool $tool --error-exitcode 9 $MK seed --init k-means++ $args \
              --runs 1 --gpu-schedule $schedule >$log 2>&1
            note "sanitize $tool seed $schedule $args rc=$? $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $log | tail -1)"
          done
        done
      done
      timeout $(cap 400) compute-sanitizer --tool memcheck --error-exitcode 9 $BUILD/mkbench_tests \
        --gtest_filter='KmeansppGpu.*' >$OUT/raw/san-seed-tests.log 2>&1
      note "sanitize memcheck KmeansppGpu tests rc=$? $(grep -E "ERROR SUMMARY" $OUT/raw/san-seed-tests.log | tail -1) $(grep -E '^\[  (PASSED|FAILED) ' $OUT/raw/san-seed-tests.log | tr '\n' ' ')" ;;
    quantize)
      # Issue 33 part 2 (docs/quantize.md): the quantize tests (GPU ones included), then the goal
      # case, a 1024x1024 image with K=255 and 100 steps at tol 0 (goal <= 10 ms on an H200,
      # without file I/O and seeding), a 4096x4096 one, and cpu-openmp on the goal image. The
      # table: steps, PSNR and the time split from each run's --json.
      py=python3; /usr/bin/python3 -c 'import numpy' 2>/dev/null && py=/usr/bin/python3
      MKBENCH_PYTHON=$py timeout $(cap 300) $BUILD/mkbench_tests --gtest_filter='Quantize*' >$OUT/raw/quantize-tests.log 2>&1
      note "quantize tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $OUT/raw/quantize-tests.log | tr '\n' ' ')"
      grep -E '^K=' $OUT/raw/quantize-tests.log | sed 's/^/== /'
      for size in 1024 4096; do
        $py tests/make_quantize_image.py $OUT/raw/quantize-$size.png $size $size
      done
      for run in "1024 auto" "4096 auto" "1024 cpu-openmp"; do
        read -r size variant <<<"$run"
        timeout $(cap 240) $MK quantize $OUT/raw/quantize-$size.png $OUT/raw/quantize-$size-$variant-out.png --k 255 \
          --max-iter 100 --tol 0 --variant $variant --out-palette $OUT/raw/quantize-$size-$variant-palette.png \
          --json $OUT/quantize-$size-$variant.json 2>&1 | tail -3
        note "quantize ${size}x$size K=255 $variant rc=${PIPESTATUS[0]}"
      done
      python3 - $OUT/quantize-*.json <<'PY' | tee $OUT/quantize.txt
import json, sys
print("%-10s %-12s %5s %9s %7s %9s %9s %9s %9s %8s %7s" % ("image", "variant", "steps", "PSNR dB", "load s",
      "seeding s", "prepare s", "steps ms", "labels ms", "ms/step", "write s"))
for path in sys.argv[1:]:
    try:
        d = json.load(open(path))
    except Exception as e:
        print(path, "unreadable:", e); continue
    t = d["seconds"]
    psnr = "inf" if d["psnr_db"] is None else "%.3f" % d["psnr_db"]
    print("%-10s %-12s %5d %9s %7.3f %9.4f %9.4f %9.2f %9.2f %8.4f %7.3f" % ("%dx%d" % (d["width"], d["height"]),
          d["variant"], d["iterations"], psnr, t["load"], t["seeding"], t["prepare"], t["steps"] * 1e3,
          t["labels"] * 1e3, t["steps"] * 1e3 / max(d["iterations"], 1), t["write"]))
PY
      ;;
    sanitize-quantize)
      # quantize end to end under compute-sanitizer (k-means++ on the GPU, the step-split
      # variant fit's auto picks for N=3, the empty policies), then the GPU tests under memcheck.
      py=python3; /usr/bin/python3 -c 'import numpy' 2>/dev/null && py=/usr/bin/python3
      $py tests/make_quantize_image.py $OUT/raw/quantize-san.png 200 150 --channels 4
      for tool in memcheck racecheck synccheck initcheck; do
        for empty in farthest random; do
          log=$OUT/raw/san-quantize-$tool-$empty.log
          timeout $(cap 300) compute-sanitizer --tool $tool --error-exitcode 9 $MK quantize $OUT/raw/quantize-san.png \
            $OUT/raw/quantize-san-out.png --k 255 --max-iter 5 --empty $empty >$log 2>&1
          note "sanitize $tool quantize K=255 --empty $empty rc=$? $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $log | tail -1)"
        done
      done
      timeout $(cap 400) compute-sanitizer --tool memcheck --error-exitcode 9 $BUILD/mkbench_tests \
        --gtest_filter='QuantizeGpu.*' >$OUT/raw/san-quantize-tests.log 2>&1
      note "sanitize memcheck QuantizeGpu tests rc=$? $(grep -E "ERROR SUMMARY" $OUT/raw/san-quantize-tests.log | tail -1) $(grep -E '^\[  (PASSED|FAILED) ' $OUT/raw/san-quantize-tests.log | tr '\n' ' ')" ;;
    matrix)
      # Issue 3's matrix, or a slice of it (MATRIX_POINTS, MATRIX_DIMS) named MATRIX_TAG; the
      # JSON is rewritten after every shape, so a slice stopped by the timeout keeps its cells.
      # The whole matrix is verify-matrix.json/.md; a slice verify-matrix-<MATRIX_TAG>.json/.md.
      tag=${MATRIX_TAG:-all}; name=verify-matrix${MATRIX_TAG:+-$MATRIX_TAG}
      timeout $(cap ${MATRIX_BUDGET:-280}) $MK verify-matrix --variants ${MATRIX_VARIANTS:-all} --points ${MATRIX_POINTS:-1000,1M,8M} --k ${MATRIX_K:-3..7,3..12,16..16,256..256,1024..1024} --dims ${MATRIX_DIMS:-2,4,8,16,32,128} \
        --iterations ${MATRIX_ITERATIONS:-2} --max-reference-work ${MATRIX_MAX_WORK:-4e11} --out $OUT/$name.json \
        >$OUT/$name.md 2>$OUT/raw/$name.log
      rc=$?; tail -3 $OUT/$name.md; grep -E "✗" $OUT/raw/$name.log | head -5
      note "verify-matrix $tag rc=$rc (124 = stopped by the timeout) $(tail -1 $OUT/$name.md) cells logged: $(grep -cE '  (✓|✗|-)  \(' $OUT/raw/$name.log)" ;;
    tune-space)
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
      note "tune-space done" ;;
    perf)
      # Issue 4's five cases, every GPU variant in one results file per case, all verified.
      gpu_variants=${PERF_VARIANTS:-$($MK list --names-only --gpu-only | paste -sd,)}
      IFS=';' read -ra cases <<<"${PERF_CASES:-8 3..7 32M;4 3..5 32M;16 3..7 32M;32 1024 2M;8 16 8M}"
      for case in "${cases[@]}"; do
        set -- $case
        timeout $(cap 200) $MK run --variant $gpu_variants --dims $1 --k $2 --points $3 --iters 20 --verify \
          --out $OUT/perf-N$1-K$2-M$3.json --format csv >$OUT/raw/perf-N$1-K$2-M$3.csv 2>>$OUT/raw/perf.log
        echo "case N=$1 K=$2 M=$3 rc=$?"
        [[ -s $OUT/perf-N$1-K$2-M$3.json ]] && python3 -c "import json,sys; [print(r[\"variant\"], r[\"status\"], round(r[\"summary\"][\"median_ms\"],4) if r.get(\"summary\") else \"-\", (r.get(\"verify\") or {}).get(\"passed\")) for r in json.load(open(sys.argv[1]))[\"rows\"]]" $OUT/perf-N$1-K$2-M$3.json
      done
      note "perf done" ;;
    planted)
      [[ -f $OUT/table1-a.json ]] || cp build-carry/table1-a.json $OUT/table1-a.json
      # Issue 7: a build whose registers-multik does its FMA loop twice must compare SLOWER.
      cmake -S . -B build-slow -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DMKBENCH_BUILD_TESTS=OFF \
        -DMKBENCH_PLANT_SLOWDOWN=ON >$OUT/raw/slow-cmake.log 2>&1 && cmake --build build-slow -j16 >$OUT/raw/slow-build.log 2>&1
      build-slow/mkbench --suite table1 --out $OUT/table1-slowed.json >/dev/null 2>$OUT/raw/t1slow.log
      $MK compare $OUT/table1-a.json $OUT/table1-slowed.json --format md | tee $OUT/compare-planted.md | tail -20
      note "compare planted slowdown rc=${PIPESTATUS[0]} (expect 1)" ;;
    tune)
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
      note "tune done" ;;
    tune-issue4)
      # Issue 4's cases tuned into the device config (configs/<slug>.json, merged by bucket):
      # TUNE4_CASES="N K M variants strategy budget;...", TUNE4_ARGS extra tune options (--fix update=f16).
      IFS=';' read -ra cases <<<"${TUNE4_CASES:-32 1024 2M gemm-tf32x3 exhaustive 90s;8 3..7 32M registers-multik anneal 60s;16 3..7 32M registers-multik anneal 60s;8 16 8M registers-multik anneal 60s}"
      for case in "${cases[@]}"; do
        set -- $case
        timeout $(cap 150) $MK tune --dims $1 --k $2 --points $3 --variants $4 --strategy $5 --budget $6 --samples 10 --warmup 2 ${TUNE4_ARGS:-} \
          --cache $OUT/raw/tune-issue4.jsonl >$OUT/raw/tune-issue4-case.txt 2>>$OUT/raw/tune-issue4.log
        rc=$?; cat $OUT/raw/tune-issue4-case.txt >>$OUT/tune-issue4.txt
        echo "tune N=$1 K=$2 M=$3 $4 $5 $6 rc=$rc $(tail -n +2 $OUT/raw/tune-issue4-case.txt | cut -f3-8)"
      done
      grep -E "^config " $OUT/raw/tune-issue4.log
      mkdir -p $OUT/configs; cp configs/*.json $OUT/configs/ 2>/dev/null; cp $OUT/raw/tune-issue4.jsonl $OUT/
      note "tune-issue4 done" ;;
    tune-table2)
      # Issue 6: the suite tune with a 10-minute measurement budget, writing configs/<slug>.json.
      # The cache lives in build-carry/ so a call stopped by the lease limit resumes in the
      # next call with the rest of the same budget (cached points charge their recorded time).
      mkdir -p build-carry
      timeout $(cap ${TUNE_TIMEOUT:-520}) $MK tune --suite table2 --budget 10m --cache build-carry/tune-table2.jsonl \
        >$OUT/tune-table2.txt 2>$OUT/raw/tune-table2.log
      rc=$?; tail -4 $OUT/raw/tune-table2.log; head -60 $OUT/tune-table2.txt
      cp build-carry/tune-table2.jsonl $OUT/ 2>/dev/null; mkdir -p $OUT/configs; cp configs/*.json $OUT/configs/ 2>/dev/null
      note "tune table2 rc=$rc (124 = stopped by the call limit; the same stage resumes it)" ;;
    table2-tuned)
      # Issue 6: table2 with the tuned config (configs/<slug>.json) ...
      timeout $(cap ${TABLE2_TIMEOUT:-400}) $MK --suite table2 --out $OUT/table2-tuned.json >$OUT/table2-tuned.txt 2>$OUT/raw/table2-tuned.log
      note "table2 tuned rc=$? ($(grep -o '"tuned_config"' $OUT/table2-tuned.json | wc -l) rows ran a tuned config)" ;;
    table2-defaults)
      # ... and with the defaults (table2.json is the suite as `mkbench --suite table2` runs it: tuned).
      timeout $(cap ${TABLE2_TIMEOUT:-400}) $MK --suite table2 --no-tuned --out $OUT/table2-defaults.json >$OUT/table2-defaults.txt 2>$OUT/raw/table2-defaults.log
      note "table2 defaults rc=$?" ;;
    compare-table2)
      tuned=${TABLE2_TUNED:-$OUT/table2-tuned.json}
      $MK compare $OUT/table2-defaults.json $tuned --ignore-params --format md >$OUT/compare-table2-tuned.md
      rc=$?; grep -E "SLOWER|FASTER|AMBIGUOUS" $OUT/compare-table2-tuned.md | head -20; tail -3 $OUT/compare-table2-tuned.md
      note "compare defaults -> tuned rc=$rc" ;;
    baseline)
      # A fresh perf-gate baseline of each suite in BASELINE_SUITES (default table1) on this GPU:
      # `mkbench baseline update` runs the suite as `mkbench --suite S` and stores the checked file
      # under $OUT/baselines/<device-slug>/<suite>.json (also copied to $OUT/baseline-<slug>-<suite>.json);
      # commit it as reports/baselines/<device-slug>/<suite>.json. The writer refuses a build that
      # does not know its commit: on a copied tree, prefix the call with MKBENCH_GIT_SHA=<sha>.
      for suite in ${BASELINE_SUITES:-table1}; do
        timeout $(cap ${SUITE_TIMEOUT:-590}) $MK baseline update --suite $suite --dir $OUT/baselines \
          >$OUT/raw/baseline-$suite.txt 2>$OUT/raw/baseline-$suite.log
        rc=$?; tail -3 $OUT/raw/baseline-$suite.log; stored=$(tail -1 $OUT/raw/baseline-$suite.txt)
        [[ $rc == 0 && -f $stored ]] && cp "$stored" "$OUT/baseline-$(basename "$(dirname "$stored")")-$suite.json"
        note "baseline $suite rc=$rc: ${stored:-nothing stored}"
      done ;;
    compare-table1)
      # Issue 7: two back-to-back table1 runs must compare SAME.
      $MK --suite table1 --out $OUT/table1-a.json >/dev/null 2>$OUT/raw/t1a.log
      $MK --suite table1 --out $OUT/table1-b.json >/dev/null 2>$OUT/raw/t1b.log
      $MK compare $OUT/table1-a.json $OUT/table1-b.json --format md | tee $OUT/compare-table1.md | tail -20
      note "compare back-to-back rc=${PIPESTATUS[0]}" ;;
    fit-tests)
      # Issue 31's checks on the GPU: the fit gtests (the metric passes' GPU paths against their CPU
      # paths; best_k's recovery of planted K on the variant `fit --variant auto` picks) and
      # tests/fit_vs_sklearn.py for every GPU variant (ctest FitVsSklearn.*; skipped without python3-sklearn).
      timeout $(cap 400) $BUILD/mkbench_tests --gtest_filter='Fit*:*/FitMetricPassesOnGpu.*:*/FitBestK.*' >$OUT/raw/fit-gtests.log 2>&1; rc=$?
      grep -E "^best_k |^\[  (PASSED|FAILED) |^\[  SKIPPED" $OUT/raw/fit-gtests.log | tee $OUT/fit-tests.txt | head -30
      (cd $BUILD && timeout $(cap 400) ctest -R FitVsSklearn --output-on-failure >$OUT/raw/fit-sklearn.log 2>&1); rc2=$?
      grep -E "fit_vs_sklearn|tests passed|tests failed|FAIL" $OUT/raw/fit-sklearn.log | tee -a $OUT/fit-tests.txt | head -20
      note "fit-tests gtest rc=$rc, FitVsSklearn rc=$rc2: $(grep -E 'tests passed|tests failed' $OUT/raw/fit-sklearn.log | tail -1)" ;;
    python-bench) source tests/device/python-bench.sh ;;
    python)
      # The Python package on the GPU (ctest Python.KMeans: python/tests against scikit-learn, where
      # variant auto must pick a GPU variant). Built only where pybind11-dev and python3-dev are.
      if ! ls $BUILD/python/mkbench/_core*.so >/dev/null 2>&1; then
        note "skipped python: the module was not built (no pybind11-dev/python3-dev here; see $OUT/raw/cmake.log)"
      else
        (cd $BUILD && timeout $(cap 300) ctest -R '^Python\.' -V >$OUT/raw/python-tests.log 2>&1); rc=$?
        grep -E "Ran [0-9]+ test|: (OK|FAILED)|\.\.\. (ok|FAIL|ERROR|skipped)" $OUT/raw/python-tests.log | tee $OUT/python-tests.txt | tail -25
        note "python rc=$rc: $(grep -oE 'Ran [0-9]+ tests?' $OUT/raw/python-tests.log | tail -1), $(grep -oE ': (OK|FAILED.*)$' $OUT/raw/python-tests.log | tail -1), $(grep -oE 'python variant: .*' $OUT/raw/python-tests.log | tail -1)"
      fi ;;
    sanitize-fit)
      # fit's own kernels (apps/fit/metric_passes_gpu.cu: the Davies-Bouldin distance pass in its
      # thread-per-point (N=5) and warp-per-point (N=40) forms, the pairwise distances and the
      # silhouette rows over a sample smaller than M) under compute-sanitizer, through `mkbench fit`
      # on naive-atomics (the variant's own kernels are the sanitize stage's); then tensor-multik's
      # split step inside a fit (memcheck); then the FitMetricPassesOnGpu tests under memcheck.
      for tool in memcheck racecheck synccheck initcheck; do
        for dims in 5 40; do
          log=$OUT/raw/san-fit-$tool-n$dims.log
          timeout $(cap 240) compute-sanitizer --tool $tool --error-exitcode 9 $MK fit --dataset blobs:centers=4 \
            --dims $dims --points 3000 --k 2..6 --variant naive-atomics --max-iter 15 --silhouette-sample 1000 \
            --quiet >$log 2>&1
          rc=$?; errs=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $log | tail -1)
          note "sanitize $tool fit naive-atomics N=$dims K=2..6 M=3000 rc=$rc ${errs}"
          echo "$tool fit naive-atomics N=$dims K=2..6 M=3000 rc=$rc: ${errs}" >>$OUT/sanitize-fit.txt
        done
      done
      log=$OUT/raw/san-fit-memcheck-tensor-multik.log
      timeout $(cap 240) compute-sanitizer --tool memcheck --error-exitcode 9 $MK fit --dataset blobs:centers=5 \
        --dims 8 --points 5000 --k 3..7 --variant tensor-multik --max-iter 15 --silhouette-sample 1000 --quiet >$log 2>&1
      rc=$?; errs=$(grep -E "ERROR SUMMARY" $log | tail -1)
      note "sanitize memcheck fit tensor-multik N=8 K=3..7 M=5000 rc=$rc ${errs}"
      echo "memcheck fit tensor-multik N=8 K=3..7 M=5000 rc=$rc: ${errs}" >>$OUT/sanitize-fit.txt
      timeout $(cap 300) compute-sanitizer --tool memcheck --error-exitcode 9 $BUILD/mkbench_tests \
        --gtest_filter='*/FitMetricPassesOnGpu.*' >$OUT/raw/san-fit-tests.log 2>&1
      rc=$?; errs=$(grep -E "ERROR SUMMARY" $OUT/raw/san-fit-tests.log | tail -1)
      note "sanitize memcheck FitMetricPassesOnGpu tests rc=$rc ${errs} $(grep -E '^\[  (PASSED|FAILED) ' $OUT/raw/san-fit-tests.log | tr '\n' ' ')"
      echo "memcheck FitMetricPassesOnGpu tests rc=$rc: ${errs}" >>$OUT/sanitize-fit.txt ;;
    fit-iteration)
      # Issue 31, iteration cost: a fit's step on N=8 K=3..7 M=32M (accumulate, then update with
      # per-K freezing and one small read-back) against `run`'s fused iteration, for the variant the
      # fit ran and for auto (the issue's 0.49 ms on an H200). --tol 0 from `first` keeps the Ks
      # moving; a step's time is the fit's iterations time over its steps (host clock, each step's
      # synchronisation included). The labels (640 MB) stay out of $OUT: only fit.json is kept.
      rm -rf $BUILD/fit-iteration
      timeout $(cap 240) $MK fit --dataset uniform --dims 8 --points 32M --k 3..7 --init first --tol 0 \
        --max-iter ${FIT_STEPS:-100} --quiet --out $BUILD/fit-iteration >$OUT/raw/fit-iteration.txt 2>&1
      rc=$?; cp $BUILD/fit-iteration/fit.json $OUT/fit-iteration-fit.json 2>/dev/null
      fit_variant=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["variant"]["name"])' \
        $OUT/fit-iteration-fit.json 2>/dev/null)
      for v in $fit_variant auto; do
        timeout $(cap 120) $MK run --variant $v --dims 8 --k 3..7 --points 32M --iters 20 \
          --out $OUT/fit-iteration-run-$v.json >/dev/null 2>>$OUT/raw/fit-iteration.txt
      done
      python3 - $OUT/fit-iteration-fit.json $OUT/fit-iteration-run-$fit_variant.json $OUT/fit-iteration-run-auto.json \
        $OUT/fit-iteration.json <<'PY' | tee $OUT/fit-iteration.txt
import json, sys
fit = json.load(open(sys.argv[1]))
step_ms = 1000 * fit["time_s"]["iterations"] / fit["steps"]
out = {"benchmark": "fit-iteration", "problem": "N=8 K=3..7 M=32M", "device": fit["device"].get("name"),
       "build": fit["build"], "fit": {"variant": fit["variant"]["name"], "steps": fit["steps"],
       "iterations_s": fit["time_s"]["iterations"], "ms_per_step": step_ms}, "run": {}}
for path in sys.argv[2:4]:
    try:
        row = json.load(open(path))["rows"][0]
        out["run"][row["variant"] if "auto" not in path else "auto"] = {
            "ran": row.get("params", {}), "variant": row["variant"], "median_ms": row["summary"]["median_ms"],
            "fit_step_over_run": step_ms / row["summary"]["median_ms"]}
    except Exception as error:
        out["run"][path] = {"error": str(error)}
json.dump(out, open(sys.argv[4], "w"), indent=1)
print(f"fit step {step_ms:.4f} ms ({fit['variant']['name']}, {fit['steps']} steps); " + "; ".join(
    f"run {name} {r['median_ms']:.4f} ms: x{r['fit_step_over_run']:.3f}" for name, r in out["run"].items() if "median_ms" in r))
PY
      note "fit-iteration rc=$rc: $(tail -1 $OUT/fit-iteration.txt)" ;;
    fit-fmnist)
      # Issue 31: Fashion-MNIST (60000 x 784) end to end on the GPU, `fit --k 5..15` (the check) and
      # `fit --k 2..20` (the whole-fit benchmark: seeding, iterations to convergence, labels and
      # metrics). Images: FMNIST_IDX, else the dataset-fashion-mnist package's, else a carried
      # build-carry/fmnist/train-images-idx3-ubyte.gz.
      images=${FMNIST_IDX:-$(dpkg -L dataset-fashion-mnist 2>/dev/null | grep 'train-images-idx3-ubyte' | head -1)}
      [[ -n $images && -f $images ]] || images=build-carry/fmnist/train-images-idx3-ubyte.gz
      if [[ ! -f $images ]]; then
        note "skipped fit-fmnist: no Fashion-MNIST images (dataset-fashion-mnist, FMNIST_IDX or build-carry/fmnist/)"; continue
      fi
      for range in ${FMNIST_RANGES:-5..15 2..20}; do
        tag=fit-fmnist-k${range/../-}
        rm -rf $BUILD/$tag; start=$(date +%s.%N)
        timeout $(cap 300) $MK fit --dataset idx:$images --k $range --quiet --out $BUILD/$tag >$OUT/$tag.txt 2>$OUT/raw/$tag.log
        rc=$?; wall=$(python3 -c "import sys; print(round($(date +%s.%N) - $start, 3))")
        cp $BUILD/$tag/fit.json $OUT/$tag.json 2>/dev/null
        summary=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d["time_s"]
print("best_k", d["best_k"], "(%s)," % d["best_k_rule"], "steps", d["steps"], "| seeding %.3f iterations %.3f labels %.3f metrics %.3f total %.3f s" % (t["seeding"], t["iterations"], t["labels"], t["metrics"], t["total"]), "|", d["variant"]["name"])' \
          $OUT/$tag.json 2>/dev/null)
        note "fit-fmnist --k $range rc=$rc wall ${wall}s (load included): $summary"
      done ;;
    # --- gemm-window and auto on issue 32's mainstream shapes ------------------------------
    mainstream)
      # Issue 32 in one stage (about 6 minutes on an H200, after `build`): (a) gemm-window's GPU
      # tests, (b) compute-sanitizer memcheck and racecheck at one small shape, (c) the goal table:
      # gemm-window and auto (MAINSTREAM_VARIANTS) with --verify, median of 10, one results file a
      # row, and Flash-KMeans on the same rows (scripts/peer-flash-kmeans.py, from a checkout in
      # third_party/flash-kmeans; skipped cleanly without one). The table is printed last.
      start=$SECONDS
      timeout $(cap ${MAINSTREAM_TEST_BUDGET:-150}) $BUILD/mkbench_tests \
        --gtest_filter="${MAINSTREAM_TEST_FILTER:-GemmWindow*:*gemm_window*:StepPhasesContract.*}" \
        >$OUT/raw/mainstream-gpu-tests.log 2>&1; rc=$?
      cp $OUT/raw/mainstream-gpu-tests.log $OUT/mainstream-gpu-tests.txt
      grep -E "^\[  FAILED  \]" $OUT/raw/mainstream-gpu-tests.log | head -10
      note "mainstream gpu tests rc=$rc: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)  \] [0-9]+ test' $OUT/raw/mainstream-gpu-tests.log | tr '\n' ' ')"
      for tool in memcheck racecheck; do
        timeout $(cap 90) compute-sanitizer --tool $tool --error-exitcode 9 $MK run --variant gemm-window --dims 96 \
          --points 3000 --k 300 --iters 1 --warmup 1 --verify --no-tuned >$OUT/raw/mainstream-san-$tool.log 2>&1
        rc=$?
        errs=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/raw/mainstream-san-$tool.log | tail -1)
        echo "$tool gemm-window N=96 K=300 M=3000 rc=$rc: $errs" | tee -a $OUT/mainstream-sanitize.txt
        note "mainstream sanitize $tool rc=$rc $errs"
      done
      variants=${MAINSTREAM_VARIANTS:-gemm-window,auto}
      IFS=';' read -ra cases <<<"${MAINSTREAM_CASES:-128 1024 2M;64 256 4M;32 64 16M;128 100 1M;8 3..12 32M;256 4096 1M;768 1000 1M}"
      for case in "${cases[@]}"; do
        set -- $case
        tag=N$1-K$2-M$3
        timeout $(cap ${MAINSTREAM_TIMEOUT:-60}) $MK run --variant $variants --dims $1 --k $2 --points $3 --iters 10 --verify \
          ${MAINSTREAM_ARGS:-} --out $OUT/mainstream-$tag.json >$OUT/raw/mainstream-$tag.txt 2>$OUT/raw/mainstream-$tag.log
        note "mainstream $case rc=$?"
      done
      peer_cases=$(printf '%s;' "${cases[@]}")"128 1024 65536 32"
      timeout $(cap ${PEER_TIMEOUT:-120}) python3 scripts/peer-flash-kmeans.py --cases "$peer_cases" \
        --out $OUT/peer-flash-kmeans.json >$OUT/raw/peer-flash-kmeans.log 2>&1
      note "mainstream peer rc=$?: $(head -1 $OUT/raw/peer-flash-kmeans.log)"
      note "mainstream done in $((SECONDS - start)) s (table: mainstream.txt, also at the end of the summary)"
      python3 scripts/mainstream-table.py --results "$OUT" --cases "$peer_cases" >$OUT/mainstream.txt 2>&1
      while IFS= read -r line; do summary+=("$line"); done <$OUT/mainstream.txt ;;
    mainstream-stats)
      # How often gemm-window's exact paths run (MKBENCH_GEMM_WINDOW_STATS): the share of
      # point-group steps arbitrated exactly, slice scans and exact distances per point.
      IFS=';' read -ra cases <<<"${MAINSTREAM_CASES:-128 1024 2M;64 256 4M;32 64 16M;128 100 1M;8 3..12 32M;256 4096 1M;768 1000 1M}"
      for case in "${cases[@]}"; do
        set -- $case
        MKBENCH_GEMM_WINDOW_STATS=1 timeout $(cap 120) $MK run --variant gemm-window --dims $1 --k $2 --points $3 --iters 3 \
          --warmup 1 ${MAINSTREAM_ARGS:-} 2>&1 >/dev/null | grep "gemm-window stats" | sed "s/^/N=$1 K=$2 M=$3: /" | tee -a $OUT/mainstream-stats.txt
      done
      note "mainstream-stats done" ;;
    mainstream-sanitize)
      # compute-sanitizer memcheck and racecheck on small shapes of every gemm-window path:
      # each tile, each update, both table modes, a K range, N not a multiple of 4, a partial tile.
      sets=("128 1000 256 tile=128x128/4x2,update=global,table=stream"
            "96 1000 300 tile=128x128/4x1,update=sorted,table=stream"
            "32 3000 64 tile=128x64/4x1,update=shared,table=resident"
            "200 700 130 tile=64x128/2x2,update=global,table=stream"
            "8 5000 3..12 tile=128x16/4x1,update=shared,table=resident"
            "37 2001 50 tile=128x64/4x1,update=sorted,table=stream")
      for set in "${sets[@]}"; do
        set -- $set
        params=""; for kv in ${4//,/ }; do params+=" --param $kv"; done
        for tool in memcheck racecheck; do
          tag=$tool-N$1-K$3-${4//[\/=,]/-}
          timeout $(cap 300) compute-sanitizer --tool $tool --error-exitcode 9 $MK run --variant gemm-window --dims $1 \
            --points $2 --k $3 --iters 1 --warmup 1 --verify --no-tuned $params >$OUT/raw/san-$tag.log 2>&1
          rc=$?
          note "sanitize $tool gemm-window N=$1 M=$2 K=$3 $4 rc=$rc $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/raw/san-$tag.log | tail -1)"
        done
      done ;;
    mainstream-profile)
      # ncu on gemm-window's kernel (PROFILE_CASES, default 128/1024/2M): DRAM %, tensor pipe %,
      # issue slots %, occupancy and the top warp stalls.
      IFS=';' read -ra cases <<<"${PROFILE_CASES:-128 1024 2M}"
      for case in "${cases[@]}"; do
        set -- $case
        tag=gemm-window-N$1-K$2-M$3
        timeout $(cap 300) ncu --clock-control none --kernel-name regex:gemm_window_kernel --launch-skip 2 --launch-count 1 \
          --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
          --section Occupancy --section MemoryWorkloadAnalysis --section LaunchStats \
          --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__issue_active.avg.pct_of_peak_sustained_active \
          -f -o $OUT/raw/ncu-$tag $MK run --variant gemm-window --dims $1 --k $2 --points $3 --iters 3 --warmup 1 \
          ${PROFILE_ARGS:-} >/dev/null 2>$OUT/raw/ncu-$tag.log
        ncu -i $OUT/raw/ncu-$tag.ncu-rep --print-details all >$OUT/raw/ncu-$tag.txt 2>&1
        rm -f $OUT/raw/ncu-$tag.ncu-rep
        grep -E " Duration|DRAM Throughput|sm__pipe_tensor_op_hmma|sm__inst_executed_pipe_alu|sm__issue_active|dram__throughput|Issue Slots Busy|Achieved Occupancy|Registers Per|Stall [A-Z][a-z]+ " \
          $OUT/raw/ncu-$tag.txt | head -24 | tee $OUT/mainstream-profile-$tag.txt
        note "mainstream-profile $tag done"
      done ;;
    peer)
      # Flash-KMeans on issue 32's shapes in the same call, if a checkout is in third_party/.
      timeout $(cap 400) python3 scripts/peer-flash-kmeans.py ${PEER_CASES:+--cases "$PEER_CASES"} --out $OUT/peer-flash-kmeans.json \
        2>&1 | tee $OUT/peer-flash-kmeans.txt | tail -12
      note "peer flash-kmeans rc=${PIPESTATUS[0]}: $(head -1 $OUT/peer-flash-kmeans.txt)" ;;
    # --- end of the gemm-window block ---------------------------------------------------------
    table1|table2|table3|kernels|blobs|smoke)
      timeout $(cap ${SUITE_TIMEOUT:-590}) $MK --suite $stage --out $OUT/$stage.json 2>$OUT/raw/$stage.log | tee $OUT/$stage.txt | tail -25
      note "suite $stage rc=${PIPESTATUS[0]}" ;;
    ooc)
      # Out-of-core Lloyd (docs/out-of-core.md). 1) The GPU tests: chunked == in core == FP64
      # reference with chunk sizes that do not divide M, and the planner's own choice.
      timeout $(cap 240) $BUILD/mkbench_tests --gtest_filter='OutOfCore*:MemoryPlanOutOfCore*:MemoryPlanGpu*' \
        >$OUT/ooc-tests.txt 2>&1
      rc=$?; tail -3 $OUT/ooc-tests.txt; grep -E "SKIPPED|FAILED" $OUT/ooc-tests.txt | head -10
      note "ooc tests rc=$rc"
      # 2) --verify of every streaming GPU variant, 7 chunks of 300001 (the last short).
      timeout $(cap 150) $MK run --variant naive-atomics,shared-atomics,registers-multik,gemm-cublas --dims 8 \
        --points 2M --k 3..7 --chunk-points 300001 --verify --no-tuned --iters 5 --warmup 1 \
        --out $OUT/ooc-verify.json >$OUT/raw/ooc-verify.txt 2>$OUT/raw/ooc-verify.log
      rc=$?; grep "^verify" $OUT/raw/ooc-verify.log
      note "ooc verify rc=$rc ($(grep -c ': PASS' $OUT/raw/ooc-verify.log) of 4 PASS)"
      # 3) Overlap: N=8 K=3..7 M=${OOC_POINTS:-256M} (8 GiB) in chunks of ${OOC_CHUNK:-32M} (1 GiB),
      # then the same problem in core; the out-of-core rows' share of the pinned H2D floor.
      for v in registers-multik naive-atomics; do
        timeout $(cap 150) $MK run --variant $v --dims 8 --points ${OOC_POINTS:-256M} --k 3..7 \
          --chunk-points ${OOC_CHUNK:-32M} --no-tuned --iters 10 --warmup 2 --out $OUT/ooc-$v.json \
          >$OUT/raw/ooc-$v.txt 2>$OUT/raw/ooc-$v.log
        note "ooc $v rc=$?"
        timeout $(cap 120) $MK run --variant $v --dims 8 --points ${OOC_POINTS:-256M} --k 3..7 --no-tuned \
          --iters 10 --warmup 2 --out $OUT/incore-$v.json >$OUT/raw/incore-$v.txt 2>$OUT/raw/incore-$v.log
        note "in-core $v rc=$?"
        python3 - "$OUT/ooc-$v.json" "$OUT/incore-$v.json" <<'PY' | tee -a $OUT/ooc-overlap.txt
import json, sys
def row(path):
    try: return json.load(open(path))["rows"][0]
    except Exception as e: return {"status": "missing: %s" % e}
o, i = row(sys.argv[1]), row(sys.argv[2])
if o.get("status") != "ok" or "out_of_core" not in o:
    print(o.get("variant"), "out of core:", o.get("status"), o.get("reason", "")); sys.exit(0)
x = o["out_of_core"]; ms = o["summary"]["median_ms"]
gbs = x["bytes_per_iteration"] / (ms * 1e-3) / 1e9
line = "%s out of core: %d chunks of %d (%s), %.2f ms/iter, %.1f GB/s = %.1f %% of pinned H2D %.1f GB/s" % (
    o["variant"], x["chunks"], x["chunk_points"], x["transfer"], ms, gbs, 100 * gbs / x["h2d_gb_per_s"], x["h2d_gb_per_s"])
if i.get("status") == "ok": line += "; in core %.2f ms/iter (x%.1f)" % (i["summary"]["median_ms"], ms / i["summary"]["median_ms"])
print(line)
PY
      done ;;
    # ---------------------------------------------------------------- several GPUs (issue 35)
    # Run on a 2- or 4-GPU kind (nvidia-h100-x2 / -x4), after build (or unpack):
    #   tests/device.sh build multigpu-verify multigpu [mpi-setup build multigpu-mpi]
    # docs/multi-gpu.md says what each prints and what the goals are.
    multigpu-verify)
      # The multi-GPU tests (2 GPUs, and 4 where present, give one GPU's labels and centroids;
      # every GPU variant passes the reference over 2 GPUs), then one verified CLI row over all GPUs.
      timeout $(cap 240) $BUILD/mkbench_tests --gtest_filter='ShardedGpu.*:ShardedRun.*:ShardedCli.*:DeviceOption.*' \
        >$OUT/raw/multigpu-tests.log 2>&1; rc=$?
      grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[       OK \] Sharded|needs [0-9] CUDA" $OUT/raw/multigpu-tests.log | head -20
      cp $OUT/raw/multigpu-tests.log $OUT/multigpu-tests.txt
      note "multigpu tests rc=$rc: $(grep -E '^\[  PASSED|^\[  FAILED|^\[  SKIPPED' $OUT/raw/multigpu-tests.log | tr '\n' ' ')"
      timeout $(cap 180) $MK run --variant ${MGPU_VARIANT:-tensor-multik} --dims 8 --k 3..7 --points 8000001 --iters 5 \
        --verify --device all --out $OUT/multigpu-verify.json >$OUT/raw/multigpu-verify.txt 2>&1; rc=$?
      tail -4 $OUT/raw/multigpu-verify.txt
      note "multigpu --device all --verify rc=$rc $(csv_row_json $OUT/multigpu-verify.json)" ;;
    multigpu)
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
      done ;;
    mpi-setup)
      # The device has no package registry: OpenMPI comes as .deb files carried in
      # build-carry/mpi-debs/ (the list is in docs/multi-gpu.md), unpacked into a private root.
      # Run `build` after this stage so the binary is built with MPI.
      if command -v mpirun >/dev/null; then note "mpi-setup: mpirun already on PATH"; continue; fi
      if ! ls build-carry/mpi-debs/*.deb >/dev/null 2>&1; then
        note "skipped mpi-setup: no mpirun and no build-carry/mpi-debs/*.deb (see docs/multi-gpu.md)"; continue
      fi
      root=$PWD/build-carry/mpi-root; mkdir -p $root
      for deb in build-carry/mpi-debs/*.deb; do dpkg -x $deb $root; done
      export OPAL_PREFIX=$root/usr PATH=$root/usr/bin:$PATH MPI_HOME=$root/usr
      export LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu/openmpi/lib:$root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
      export OMPI_MCA_plm_rsh_agent=false  # one host: never look for ssh
      note "mpi-setup: $(mpirun --version 2>&1 | head -1)" ;;
    multigpu-mpi)
      # mpirun -np 2 (one GPU a rank, NCCL id over MPI) against one process driving both GPUs;
      # goal: within 5 %. MGPU_MPI_CASE defaults to the issue's shape.
      if ! command -v mpirun >/dev/null; then note "skipped multigpu-mpi: no mpirun (carry OpenMPI's .deb files, stage mpi-setup)"; continue; fi
      if ! grep -q "MPI built in" $OUT/raw/cmake.log 2>/dev/null && ! grep -q "MPI built in" $BUILD/CMakeFiles/CMakeOutput.log 2>/dev/null; then
        note "multigpu-mpi: this build may lack MPI (no 'MPI built in' in raw/cmake.log); mkbench refuses mpirun then"
      fi
      set -- ${MGPU_MPI_CASE:-8 3..7 256M}
      common=(run --variant ${MGPU_VARIANT:-tensor-multik} --dims $1 --k $2 --points $3 --iters ${MGPU_ITERS:-20} --no-peak-measure)
      timeout $(cap 200) $MK "${common[@]}" --device 0,1 --out $OUT/multigpu-one-process.json >$OUT/raw/multigpu-one.txt 2>&1
      rc1=$?
      timeout $(cap 240) mpirun -np 2 --allow-run-as-root --oversubscribe -x NCCL_NVLS_ENABLE=0 -x LD_LIBRARY_PATH \
        $MK "${common[@]}" --device all --out $OUT/multigpu-mpirun.json >$OUT/raw/multigpu-mpi.txt 2>&1
      rc2=$?; ((rc1 && rc2)) || tail -3 $OUT/raw/multigpu-mpi.txt
      python3 tests/multigpu_table.py $OUT/multigpu-one-process.json $OUT/multigpu-mpirun.json --within 5 | tee $OUT/multigpu-mpi.txt
      note "multigpu-mpi rc=$rc1/$rc2 table=${PIPESTATUS[0]}: $(tail -1 $OUT/multigpu-mpi.txt)" ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done

