# tests/device.sh stage profile (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
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
done
