# tests/device.sh stage table1: the table1 suite with the tuned config (suite_stage, tests/device/lib.sh).
suite_stage
