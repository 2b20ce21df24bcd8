# tests/device.sh stage python (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# The Python package on the GPU (ctest Python.KMeans: python/tests against scikit-learn, where
# variant auto must pick a GPU variant). Built only where pybind11-dev and python3-dev are.
if ! ls $BUILD/python/mkbench/_core*.so >/dev/null 2>&1; then
  note "skipped python: the module was not built (no pybind11-dev/python3-dev here; see $OUT/raw/cmake.log)"
else
  (cd $BUILD && timeout $(cap 300) ctest -R '^Python\.' -V >$OUT/raw/python-tests.log 2>&1); rc=$?
  grep -E "Ran [0-9]+ test|: (OK|FAILED)|\.\.\. (ok|FAIL|ERROR|skipped)" $OUT/raw/python-tests.log | tee $OUT/python-tests.txt | tail -25
  note "python rc=$rc: $(grep -oE 'Ran [0-9]+ tests?' $OUT/raw/python-tests.log | tail -1), $(grep -oE ': (OK|FAILED.*)$' $OUT/raw/python-tests.log | tail -1), $(grep -oE 'python variant: .*' $OUT/raw/python-tests.log | tail -1)"
fi
