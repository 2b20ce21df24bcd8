# tests/device.sh stage table2-verify (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# table2 with every row checked against the FP64 reference (the suite file leaves it
# off): the fast paths by default, TABLE2_VERIFY_VARIANTS to change them.
timeout $(cap ${TABLE2_TIMEOUT:-400}) $MK --suite table2 --verify \
  --variants ${TABLE2_VERIFY_VARIANTS:-tensor-multik,registers-multik,tf32-window,auto} \
  --out $OUT/table2-verify.json >$OUT/table2-verify.txt 2>$OUT/raw/table2-verify.log
rc=$?; tail -2 $OUT/raw/table2-verify.log
note "table2 --verify rc=$rc (124 = timeout): $(grep -c 'verify pass' $OUT/raw/table2-verify.log) pass, $(grep -c 'VERIFY FAIL' $OUT/raw/table2-verify.log) FAIL"
