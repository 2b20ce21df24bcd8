#pragma once
// The fits behind mkbench._core.fit and fit_device (docs/python.md): the choices of `mkbench
// fit` (apps/fit/cli_fit.cpp: the variant, its tuned or default parameters, the device) for
// data already in memory, host arrays or device arrays. No Python here: core_module.cpp binds it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "apps/fit/device_points.hpp"
#include "apps/fit/lloyd_loop.hpp"
#include "datasets/dataset.hpp"

namespace mk {

struct FitRequest {
  int k = 8;
  std::string init = "k-means++";
  std::vector<float> initial;  // k x n when init is an array
  int max_iter = 300;
  double tol = 1e-4;
  int n_init = 1;
  uint64_t seed = 42;
  std::string variant = "auto";
  int device = 0;
};

struct FitAnswer {
  KFit fit;
  std::string variant;
  std::string variant_reason;
  std::string device_name;
  std::string params;
  double tol_threshold = 0;
  // Where the C++ side's time went (fit.json's "seconds", plus what the module adds): the
  // benchmark (python/bench/bench_vs_sklearn.py) takes the Python overhead of KMeans.fit as
  // its wall time minus "total".
  std::map<std::string, double> seconds;
};

// Points in host memory (the Dataset is the staging copy the variant uploads from).
FitAnswer run_fit(const Dataset& data, const FitRequest& request);

// Points in device memory, consumed there (apps/fit/device_points.hpp). The variant must take
// streamed points (Problem::streamed): auto takes `mkbench fit`'s choice when it does, else the
// first of registers-multik, shared-atomics, warp-centric, gemm-cublas, naive-atomics that
// does; a named variant that cannot is refused (UnsupportedError, with its reason).
FitAnswer run_fit_on_device(const DevicePoints& points, const FitRequest& request);

}  // namespace mk
