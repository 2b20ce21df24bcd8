# tests/device.sh stage compare-table1 (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 7: two back-to-back table1 runs must compare SAME.
$MK --suite table1 --out $OUT/table1-a.json >/dev/null 2>$OUT/raw/t1a.log
$MK --suite table1 --out $OUT/table1-b.json >/dev/null 2>$OUT/raw/t1b.log
$MK compare $OUT/table1-a.json $OUT/table1-b.json --format md | tee $OUT/compare-table1.md | tail -20
note "compare back-to-back rc=${PIPESTATUS[0]}"
