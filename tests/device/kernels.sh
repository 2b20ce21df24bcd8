# tests/device.sh stage kernels: the kernels suite with the tuned config (suite_stage, tests/device/lib.sh).
suite_stage
