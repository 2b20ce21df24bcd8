# tests/device.sh stage table3: the table3 suite with the tuned config (suite_stage, tests/device/lib.sh).
suite_stage
