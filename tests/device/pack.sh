# tests/device.sh stage pack (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
tar czf $OUT/bin.tgz -C $BUILD mkbench mkbench_tests && note "packed binaries ($(du -h $OUT/bin.tgz | cut -f1))"
