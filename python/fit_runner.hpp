#pragma once
// The fits behind mkbench._core.fit and fit_device (docs/python.md): the choices of `mkbench
// fit` (apps/fit/cli_fit.cpp: the variant, its tuned or default parameters, the device) for
// data already in memory, host arrays or device arrays. No Python here: core_module.cpp binds it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "apps/fit/device_points.hpp"
#include "apps/fit/k_choice.hpp"
#include "apps/fit/lloyd_loop.hpp"
#include "datasets/dataset.hpp"

namespace mk {

struct FitRequest {
  int k = 8;
  int k_max = 0;  // 0: K alone; else the range k..k_max, fitted together as `mkbench fit --k A..B`
  std::string init = "k-means++";
  // k_max (or k) rows x n when init is an array; the first K rows start each K of a range, as
  // the rows of `fit --init npy:PATH` do.
  std::vector<float> initial;
  int max_iter = 300;
  double tol = 1e-4;
  int n_init = 1;
  uint64_t seed = 42;
  std::string variant = "auto";
  int device = 0;
  // None: `device` alone. Else `--device`'s text (harness/parallel/placement.hpp): "0,1" or
  // "all" (one shard per GPU), "cpu" or "cpu:N" (the host CPU over N in-process shards).
  std::optional<std::string> placement;

  KRange range() const { return KRange{k, k_max > 0 ? k_max : k}; }
};

struct FitAnswer {
  std::vector<KFit> per_k;  // every K of the range, kmin first
  // A range's K-choice scores (fit.json's per_k) and the CLI's choice of K among them
  // (apps/fit/k_choice.hpp); for one K, that K. The fit of best_index is the estimator's.
  Scores scores;
  BestK best;
  size_t best_index = 0;
  std::vector<int> best_restart;
  std::string variant;
  std::string variant_reason;
  std::string device_name;
  std::string placement;  // Placement::describe() of a `placement` request; "" otherwise
  int shards = 1;
  std::string params;
  double tol_threshold = 0;
  // Where the C++ side's time went (fit.json's "seconds", plus what the module adds): the
  // benchmark (python/bench/bench_vs_sklearn.py) takes the Python overhead of KMeans.fit as
  // its wall time minus "total".
  std::map<std::string, double> seconds;
};

// Points in host memory (the Dataset is the staging copy the variant uploads from). A range
// without any K Calinski-Harabasz can score is an InputError (no K to choose).
FitAnswer run_fit(const Dataset& data, const FitRequest& request);

// Points in device memory, consumed there (apps/fit/device_points.hpp). The variant must take
// streamed points (Problem::streamed): auto takes `mkbench fit`'s choice when it does, else the
// first of registers-multik, shared-atomics, warp-centric, gemm-cublas, naive-atomics that
// does; a named variant that cannot is refused (UnsupportedError, with its reason). One GPU: a
// placement is refused (InputError; docs/python.md says why). A range's K-choice scores read
// the points where the run holds them; only the silhouette sample's rows come to the host.
FitAnswer run_fit_on_device(const DevicePoints& points, const FitRequest& request);

// Whether host rows (a NumPy array) are fitted as device points (DevicePoints::on_host: one
// upload, no staging copy, the moments and seeding on the GPU) instead of through run_fit's
// host Dataset. One K on one GPU, with room for the points there, and a variant that takes
// streamed points: the named one, or auto's choice; auto's tensor-multik too, which falls back
// to registers-multik there, because its host preparation cost more than its faster steps save:
// at 10M x 32, K=8 on an H100 the host route spent 1.06 s of 1.22 s on the staging copy, the
// host moments and the upload, against 0.038 s of steps and labels (python-bench.json at
// d67c0f1). Anything else, and every CPU fit, takes run_fit.
bool host_rows_fit_on_device(const FitRequest& request, int64_t m, int n);

}  // namespace mk
