# tests/device.sh stage ab (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# One variant, one axis, several values, on AB_CASES ("N K M;..."), every row verified:
# AB_VARIANT=gemm-tf32x3 AB_AXIS=update AB_VALUES="global sorted".
need AB_VARIANT AB_AXIS AB_VALUES || return
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
note "ab ${AB_VARIANT} ${AB_AXIS} done"
