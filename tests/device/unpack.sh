# tests/device.sh stage unpack (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Binaries built by an earlier lease call (stage pack), carried back in
# build-carry/: skips the ~65 s build on a fresh machine.
mkdir -p $BUILD && tar xzf build-carry/bin.tgz -C $BUILD && note "unpacked carried binaries ($(ls $BUILD | tr '\n' ' '))"
