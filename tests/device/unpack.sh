# tests/device.sh stage unpack (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Binaries carried in build-carry/bin.tgz, from an earlier lease call (stage pack) or built on the CPU
# machine (scripts/carry-binaries.sh): skips the build on a fresh machine. Binaries built there need
# libraries the device image may lack; scripts/carry-binaries.sh carries them in build-carry/lib, put on
# LD_LIBRARY_PATH (exported: later stages inherit it) only when the binaries do not load without them.
mkdir -p $BUILD && tar xzf build-carry/bin.tgz -C $BUILD && note "unpacked carried binaries ($(ls $BUILD | tr '\n' ' '))"
if ldd $BUILD/mkbench | grep -q "not found" && [[ -d build-carry/lib ]]; then
  export LD_LIBRARY_PATH=$PWD/build-carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  note "unpack: libraries from build-carry/lib ($(ls build-carry/lib | tr '\n' ' '))"
fi
if ldd $BUILD/mkbench | grep -q "not found"; then
  note "unpack: mkbench does not load: $(ldd $BUILD/mkbench | grep 'not found' | tr -s ' \t' ' ' | tr '\n' ';')"
  stop_stages=1
fi
