# tests/device.sh stage balance (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
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
note "balance done"
