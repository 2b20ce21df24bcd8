#pragma once
// One `mkbench fit` on data already loaded and a variant already prepared: R seedings
// (--n-init), each iterated to convergence for every K at once, the best of them per K by
// inertia, then the K-choice scores. The command (cli_fit.cpp) adds the data, the variant,
// the progress line and the files.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apps/fit/k_choice.hpp"
#include "apps/fit/lloyd_loop.hpp"
#include "core/device_info.hpp"
#include "datasets/dataset.hpp"
#include "variants/variant.hpp"

namespace mk {

struct FitSettings {
  KRange k;
  std::string init = "k-means++";
  int64_t init_sample = 0;  // SeedingOptions::sample_rows: 0 = every row the seeding device holds
  // Given centroids (packed per KRange::slot_offset) instead of a seeding: the Python
  // estimator's init=ndarray. Non-empty: one restart from them; `init` only names them.
  std::vector<float> initial_centroids;
  int max_iter = 300;
  double tol = 1e-4;
  int n_init = 1;
  uint64_t seed = 42;
  EmptyPolicy empty = EmptyPolicy::Farthest;
  int64_t silhouette_sample = 10000;
  bool metrics_on_gpu = false;
  // --weights: one per point (scikit-learn's sample_weight), or null; weights_spec names the
  // file in fit.json. A weighted fit runs weighted_lloyd.hpp's loop and seeds on the host.
  std::shared_ptr<const std::vector<float>> weights;
  std::string weights_spec;
  // After every step of every restart (the progress line); may be empty.
  std::function<void(int restart, int iteration, const StepSummary& step, const std::vector<uint8_t>& active)> on_step;
  // Called with the run after its last pass, before it is released (a sharded run's devices,
  // ranks and step timings: the CLI's fit.json "parallel"); may be empty.
  std::function<void(PreparedRun& run)> before_release;
};

struct FitSeconds {
  // Before the fit proper (the CLI's; 0 where the caller loaded and placed the points itself):
  double load = 0;    // reading or generating the points, and their finite check
  double upload = 0;  // preparing the run: the points copied to the device(s), one shard each
  double seeding = 0;
  double prepare = 0;  // the run's one-time build for split steps (PreparedRun::prepare_split)
  double iterations = 0;
  double labels = 0;   // the final assignment passes and their read-backs
  double metrics = 0;  // data moments, the Davies-Bouldin pass, the silhouette sample
};

struct FitResult {
  std::vector<KFit> per_k;        // the best restart of each K
  std::vector<int> best_restart;  // per K
  Scores scores;
  BestK best;
  double tol_threshold = 0;
  int steps = 0;  // fused passes with an update, over all restarts
  std::vector<double> step_seconds;  // each of those steps' wall time, restarts in order
  FitSeconds seconds;
  std::string seeding_method;
  std::string seeding_path;  // where k-means++ or k-means|| ran ("gpu", "cpu-openmp"), else empty
  // k-means++ from a sample (SeedingResult::sample_reason non-empty): its rows and why.
  int64_t seeding_sample_rows = 0;
  std::string seeding_sample_reason;
};

// The seed of restart r: r = 0 uses `seed` itself, so one restart seeds as --seed says.
uint64_t restart_seed(uint64_t seed, int restart);

// `seeding_device` is where k-means++ runs: the fit's GPU, or the host for a CPU variant.
// The run is released after the last pass, before the metric passes allocate their own
// device memory.
FitResult fit_k_range(std::unique_ptr<PreparedRun> run, const Dataset& data, const FitSettings& settings,
                      const DeviceInfo& seeding_device);

// --init first and npy:PATH give the same centroids whatever the seed: more than one
// seeding would repeat the same fit (scikit-learn then runs one, with a warning).
bool init_depends_on_seed(const std::string& init);

}  // namespace mk
