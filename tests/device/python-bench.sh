# python-bench: issue 36's goal, mkbench.KMeans(8).fit(X) on a 10M x 32 float32 C-contiguous
# uniform array against scikit-learn's KMeans (algorithm="lloyd", the machine's cores) from the
# same centres, n_init=1, tol 0, PYBENCH_ITERS Lloyd steps for both (default 20: sklearn's side
# stays under a minute), the host->device copy counted (python/bench/bench_vs_sklearn.py).
# Needs the build stage's module ($BUILD/python) and numpy, scikit-learn in the python3 CMake
# picked. Writes $OUT/python-bench.json and prints the table.
if ! ls $BUILD/python/mkbench/_core*.so >/dev/null 2>&1; then
  note "skipped python-bench: the module was not built (no pybind11-dev/python3-dev here; see $OUT/raw/cmake.log)"
else
  py=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' $BUILD/CMakeCache.txt); py=${py:-python3}
  PYTHONPATH=$BUILD/python timeout $(cap 420) $py python/bench/bench_vs_sklearn.py \
    --points ${PYBENCH_POINTS:-10M} --dims ${PYBENCH_DIMS:-32} --k ${PYBENCH_K:-8} \
    --sklearn-iters ${PYBENCH_ITERS:-20} --repeats ${PYBENCH_REPEATS:-9} \
    --out $OUT/python-bench.json 2>$OUT/raw/python-bench.log | tee $OUT/python-bench.txt
  rc=${PIPESTATUS[0]}
  note "python-bench rc=$rc: $($py -c 'import json,sys; d=json.load(open(sys.argv[1])); m=d["mkbench"]; s=d.get("sklearn",{}); print("sklearn %.3f s, mkbench %.4f s (%s), %.1fx, python overhead %.3f ms" % (s.get("seconds",float("nan")), m["median_fit_seconds"], m["variant"], d.get("speedup",float("nan")), m["median_python_overhead_ms"]))' $OUT/python-bench.json 2>/dev/null)"
fi
