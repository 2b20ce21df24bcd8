#pragma once
// Weighted Lloyd for `mkbench fit --weights` (docs/fit.md, "Sample weights"), scikit-learn's
// sample_weight meaning: a centroid is Σ w·x / Σ w over its points, the inertia is Σ w·d², a
// cluster is empty when its weight is 0, and --empty farthest relocates as sklearn does (the
// farthest point by unweighted distance moves with its weight).
//
// The route is general, so every variant that splits its step serves a weighted fit unchanged:
// the variant assigns (accumulate() with labels, read_back()), and the weighted sums are
// recomputed from the labels on the host, in FP64 over a fixed partition of the points (so the
// answer does not depend on the thread count), then the update runs on the host and the new
// centroids go back with set_centroids(). On a GPU this costs a read-back of M int32 labels
// per K and step and a host pass over the points; the unweighted fit keeps its device update.
#include <cstdint>
#include <vector>

#include "apps/fit/lloyd_loop.hpp"
#include "datasets/dataset.hpp"

namespace mk {

// Per slot (KRange::slot_offset) and per K, from labels against `centroids`.
struct WeightedSums {
  std::vector<double> sums;          // slots * n, Σ w·x
  std::vector<double> weight;        // slots, Σ w
  std::vector<double> plain_sums;    // slots * n, Σ x (the metrics)
  std::vector<int64_t> counts;       // slots, points
  std::vector<double> inertia;       // per K, Σ w·‖x − c_label‖²
  std::vector<double> point_inertia; // per K, Σ ‖x − c_label‖²
};

// `labels[index]` holds K = kmin + index's labels (m each); `centroids` packed per slot.
WeightedSums weighted_sums(const Dataset& data, const std::vector<float>& weights, const KRange& k,
                           const std::vector<const int32_t*>& labels, const std::vector<float>& centroids);

// run_to_convergence's contract (lloyd_loop.hpp) with weights (m values).
LoopOutcome run_weighted_to_convergence(PreparedRun& run, const KRange& k, const Dataset& data,
                                        const std::vector<float>& weights, const std::vector<float>& initial,
                                        const LoopSettings& settings);

}  // namespace mk
