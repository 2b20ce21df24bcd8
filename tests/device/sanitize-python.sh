# tests/device.sh stage sanitize-python (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# The Python package's own device code under compute-sanitizer, through small fits in a python3
# under the sanitizer (python/bench/sanitize_fits.py): a NumPy array's upload through the pinned
# ring (apps/fit/device_points.cu, upload_host_rows: a 70 MB array, three 32 MiB pieces), a
# CuPy array's copy, moments and k-means++, and a CuPy range's K-choice passes over the run's
# buffer (apps/fit/metric_passes_gpu.cu: gather_rows_kernel, the distance sums on device).
# Needs the build stage's module and CuPy. Writes $OUT/sanitize-python.txt.
if ! ls $BUILD/python/mkbench/_core*.so >/dev/null 2>&1; then
  note "skipped sanitize-python: the module was not built (see $OUT/raw/cmake.log)"
else
  py=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' $BUILD/CMakeCache.txt); py=${py:-python3}
  for tool in memcheck racecheck; do
    log=$OUT/raw/san-python-$tool.log
    PYTHONPATH=$BUILD/python timeout $(cap 240) compute-sanitizer --tool $tool \
      --error-exitcode 9 $py python/bench/sanitize_fits.py >$log 2>&1
    rc=$?; errs=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $log | tail -1)
    note "sanitize $tool python fits rc=$rc ${errs} $(grep -E '^fits:' $log | tail -1)"
    echo "$tool python fits (NumPy upload through the pinned ring, CuPy one K and a range) rc=$rc: ${errs}" >>$OUT/sanitize-python.txt
  done
fi
