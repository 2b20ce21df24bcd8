#!/bin/bash
# session 19 call 2: which of the three changes helps which shape (one binary, kernel macros)
export MKBENCH_GIT_SHA=$1
OLD="EXP_WINDOW_FMA=0,EXP_LANE_LIMIT=0"
DEADLINE=390 SWEEP_CASES='8 3..7 32M' SWEEP_ROUNDS=2 \
SWEEP_SETS="defines:$OLD --param prefetch=0|defines:$OLD,EXP_BRANCHLESS_CHECK=1 --param prefetch=0|defines:$OLD,EXP_BRANCHLESS_CHECK=1 --param prefetch=1|defines:EXP_LANE_LIMIT=0,EXP_BRANCHLESS_CHECK=1 --param prefetch=1|defines:EXP_WINDOW_FMA=0,EXP_BRANCHLESS_CHECK=1 --param prefetch=1|defines:EXP_BRANCHLESS_CHECK=1 --param prefetch=1|defines:EXP_BRANCHLESS_CHECK=1 --param prefetch=0" \
  bash tests/device.sh ${STAGES:-build pack} sweep 2>&1 | grep -E "^sweep|^==" 
mv $OUT/raw.tgz $OUT/raw-n8.tgz
DEADLINE=$((580 - SECONDS)) SWEEP_CASES='4 3..5 32M;8 16 8M' SWEEP_ROUNDS=2 \
SWEEP_SETS="defines:EXP_BRANCHLESS_CHECK=1 --param prefetch=1|defines:EXP_BRANCHLESS_CHECK=1 --param prefetch=0|defines:EXP_BRANCHLESS_CHECK=0 --param prefetch=1|defines:$OLD,EXP_BRANCHLESS_CHECK=1 --param prefetch=1" \
  bash tests/device.sh sweep 2>&1 | grep -E "^sweep|^=="
