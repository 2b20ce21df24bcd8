# tests/device.sh stage table2: the table2 suite with the tuned config (suite_stage, tests/device/lib.sh).
suite_stage
