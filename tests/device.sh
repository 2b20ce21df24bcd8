#!/usr/bin/env bash
# Everything the GPU machine should do in one lease call: native sm_90 build, full ctest,
# peak measurement, sanitizers, the verify matrix and the performance cases. Stages can
# be picked: tests/device.sh build test peak sanitize matrix perf table1 table2 kernels ooc
# seeding sanitize-seeding fit-tests fit fit-iteration fit-fmnist sanitize-fit python.
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
    quick)
      for variant in registers-multik naive-atomics shared-atomics; do
        timeout $(cap 120) $MK run --variant $variant --dims 8 --k 3..7 --points 32M --iters 20 --verify \
          --out $OUT/raw/quick-$variant.json 2>&1 | tail -6
        note "quick $variant rc=${PIPESTATUS[0]}"
      done ;;
    gpu-tests)
      # Only the tests that need the GPU (fast; ctest runs everything).
      timeout $(cap ${CTEST_BUDGET:-300}) $BUILD/mkbench_tests --gtest_filter="${GPU_TEST_FILTER:-Registered/*:GemmVariantsOnDevice*:OutOfMemory*}" \
        --gtest_repeat=${GPU_TEST_REPEAT:-1} >$OUT/raw/gpu-tests.log 2>&1; rc=$?
      grep -E "^\[  (PASSED|FAILED|SKIPPED) " $OUT/raw/gpu-tests.log | head -20
      cp $OUT/raw/gpu-tests.log $OUT/gpu-tests.txt
      note "gpu tests rc=$rc: $(grep -E '^\[  PASSED|tests ran' $OUT/raw/gpu-tests.log | tr '\n' ' ')" ;;
    diag-shared)
      # shared-atomics alone, then after registers-multik in the same process.
      for filter in 'Registered/GpuVariant.MatchesTheReferenceOnSmallShapesWithDefaultParams/shared_atomics' \
                    'Registered/GpuVariant.MatchesTheReferenceOnSmallShapesWithDefaultParams/registers_multik:Registered/GpuVariant.MatchesTheReferenceOnSmallShapesWithDefaultParams/shared_atomics' \
                    'Registered/GpuVariant.MatchesTheReferenceOnSmallShapesWithDefaultParams/naive_atomics:Registered/GpuVariant.MatchesTheReferenceOnSmallShapesWithDefaultParams/shared_atomics'; do
        $BUILD/mkbench_tests --gtest_filter="$filter" >$OUT/raw/diag.log 2>&1
        note "diag rc=$? $(grep -cE '^\[  FAILED  \] Reg' $OUT/raw/diag.log) failed: $filter"
      done ;;
    diag-shared-params)
      # Which shared-atomics placement/layout disagrees with the reference at M=100000?
      for params in "centroids=constant layout=soa" "centroids=constant layout=aos" "centroids=shared layout=soa" \
                    "centroids=global layout=soa" "centroids=constant layout=soa aggregate=none"; do
        args=""; for p in $params; do args="$args --param $p"; done
        for repeat in 1 2; do
          $MK run --variant shared-atomics --dims 8 --k 3..7 --points 100000 --iters 3 --warmup 1 --verify --no-tuned \
            $args >$OUT/raw/diag-sa.log 2>&1
          note "diag shared-atomics $params #$repeat rc=$? $(grep -iE 'verif|labels' $OUT/raw/diag-sa.log | tail -1 | cut -c1-140)"
        done
      done ;;
    multik-ab)
      # registers-multik lane_points 1 vs 2 on issue 4's cases, every row verified.
      IFS=';' read -ra cases <<<"${PERF_CASES:-8 3..7 32M;4 3..5 32M;16 3..7 32M;8 16 8M}"
      for case in "${cases[@]}"; do
        set -- $case
        for lanes in 1 2; do
          timeout $(cap 120) $MK run --variant registers-multik --dims $1 --k $2 --points $3 --iters 20 --verify --no-tuned \
            --param lane_points=$lanes --out $OUT/raw/ab-N$1-K$2-M$3-L$lanes.json --format csv \
            >$OUT/raw/ab-N$1-K$2-M$3-L$lanes.csv 2>>$OUT/raw/ab.log
          rc=$?
          printf 'ab N=%s K=%s M=%s lane_points=%s rc=%s %s\n' $1 $2 $3 $lanes $rc \
            "$(csv_row $OUT/raw/ab-N$1-K$2-M$3-L$lanes.csv)" | tee -a $OUT/ab.txt
        done
      done
      note "multik-ab done" ;;
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
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done

