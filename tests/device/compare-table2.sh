# tests/device.sh stage compare-table2 (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
tuned=${TABLE2_TUNED:-$OUT/table2-tuned.json}
$MK compare $OUT/table2-defaults.json $tuned --ignore-params --format md >$OUT/compare-table2-tuned.md
rc=$?; grep -E "SLOWER|FASTER|AMBIGUOUS" $OUT/compare-table2-tuned.md | head -20; tail -3 $OUT/compare-table2-tuned.md
note "compare defaults -> tuned rc=$rc"
