# tests/device.sh stage blobs: the blobs suite with the tuned config (suite_stage, tests/device/lib.sh).
suite_stage
