# tests/device.sh stage table2-tuned (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Issue 6: table2 with the tuned config (configs/<slug>.json) ...
timeout $(cap ${TABLE2_TIMEOUT:-400}) $MK --suite table2 --out $OUT/table2-tuned.json >$OUT/table2-tuned.txt 2>$OUT/raw/table2-tuned.log
note "table2 tuned rc=$? ($(grep -o '"tuned_config"' $OUT/table2-tuned.json | wc -l) rows ran a tuned config)"
