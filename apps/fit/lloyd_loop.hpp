#pragma once
// Lloyd's iterations to convergence for every K of a range in one fused multi-K pass
// (docs/fit.md, "Convergence"). Each step is accumulate() then update() with the Ks that
// have converged frozen (UpdateOptions::active); only StepSummary's few scalars per K reach
// the host. The loop ends when every K has converged or at max_iter, and one more
// accumulate() with labels assigns every point to the final centroids (scikit-learn
// recomputes its labels_ the same way, so labels and centres agree).
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/problem.hpp"
#include "variants/variant.hpp"

namespace mk {

struct LoopSettings {
  int max_iter = 300;
  double shift_threshold = 0;  // a K has converged once its step's shift is <= this
  double rounding_floor = 0;   // ... or <= K·N times this (data_moments.hpp: summation_order_floor)
  EmptyPolicy empty = EmptyPolicy::Farthest;
  uint64_t seed = 0;  // the random empty policy's draws
  // Called after every step (the progress line); may be empty.
  std::function<void(int iteration, const StepSummary& step, const std::vector<uint8_t>& active)> on_step;
};

// One K after the final assignment pass. sums/counts/inertia are that pass's (labels against
// the final centroids), which the K-choice metrics are computed from.
struct KFit {
  int k = 0;
  int iterations = 0;   // steps in which this K moved (a frozen K stops counting)
  bool converged = false;
  double last_shift = 0;
  double inertia = 0;                 // Σ (weight ×) squared distance to the final centroids
  // A weighted fit (--weights): Σ squared distance without the weights, the within-cluster
  // sum the K-choice metrics use (they score the points, as sklearn.metrics, which take no
  // weights); unset otherwise (then it is `inertia`). counts and sums are unweighted too.
  std::optional<double> point_inertia;
  std::vector<float> centroids;       // k * n
  std::vector<int64_t> counts;        // k
  std::vector<double> sums;           // k * n, FP64 coordinate sums per cluster
  LabelValues labels;                 // m
};

struct LoopOutcome {
  std::vector<KFit> per_k;  // kmin..kmax
  int steps = 0;            // fused passes with an update
  double prepare_seconds = 0;  // PreparedRun::prepare_split(): what the first step would build
  double iteration_seconds = 0;
  // Each step's wall time, in order: a first step that pays a one-time cost (a sharded run's
  // first collective) shows apart from the steady steps a per-point rate is made of.
  std::vector<double> step_seconds;
  double labels_seconds = 0;  // the final assignment pass and the read-back
};

// `run` was prepared for (data, k); `initial` is packed per KRange::slot_offset.
LoopOutcome run_to_convergence(PreparedRun& run, const KRange& k, int n, const std::vector<float>& initial,
                               const LoopSettings& settings);

// The accumulators of the last accumulate(), copied to host memory (device runs copy them on
// their stream).
struct HostAccumulators {
  std::vector<double> sums;              // slots * n
  std::vector<unsigned long long> counts;  // slots
  std::vector<double> inertia;           // one per K
};
HostAccumulators copy_accumulators(PreparedRun& run);

}  // namespace mk
