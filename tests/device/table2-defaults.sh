# tests/device.sh stage table2-defaults (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# ... and with the defaults (table2.json is the suite as `mkbench --suite table2` runs it: tuned).
timeout $(cap ${TABLE2_TIMEOUT:-400}) $MK --suite table2 --no-tuned --out $OUT/table2-defaults.json >$OUT/table2-defaults.txt 2>$OUT/raw/table2-defaults.log
note "table2 defaults rc=$?"
