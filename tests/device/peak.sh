# tests/device.sh stage peak (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
$MK peak 2>&1 | tee $OUT/peak.txt | tail -8; note "peak rc=${PIPESTATUS[0]}"
