# tests/device.sh stage smoke: the smoke suite with the tuned config (suite_stage, tests/device/lib.sh).
suite_stage
