#pragma once
// The independent FP64 reference: one Lloyd step in double precision (Eigen), and the
// tie-aware comparison that every variant must pass under --verify.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/dataset.hpp"
#include "core/problem.hpp"
#include "variants/variant.hpp"

namespace mk {

// A centroid coordinate j (dimension d) passes when
//   |got_j − expected_j| ≤ centroid_spread · σ_d + centroid_ulps · ulp(expected_j),
// σ_d the standard deviation of the data in dimension d and ulp() the spacing of FP32 numbers
// there. The spread term is what matters to a clustering, whatever the data's distance from
// the origin: relative to the largest centroid coordinate (the former rule) data offset by
// 30000 and spanning 1.0 let an error of 3.0, or an update that moved nothing, pass. The ULP
// term is the FP32 floor: a centroid returned as a float is half an ULP off at best; one ULP
// leaves as much again for the arithmetic. Where the data's spread is only a few ULPs of its
// magnitude, the floor dominates and the check cannot be sharper than the format allows.
struct Tolerances {
  double tie_relative = 1e-5;       // best vs second-best squared distance
  double centroid_spread = 1e-4;    // × the data's standard deviation per dimension
  double centroid_ulps = 1.0;       // × the FP32 spacing at the expected value
  double inertia_relative = 1e-5;
};

// Per dimension: the standard deviation of the data in FP64 (two passes, so offset data
// loses nothing to cancellation).
std::vector<double> column_spread(const Dataset& data);

struct KReference {
  int k = 0;
  std::vector<int32_t> labels;      // m
  std::vector<double> best;         // m: squared distance to the nearest centroid
  std::vector<double> second;       // m: to the runner-up (inf when k == 1)
  std::vector<double> centroids;    // k*n, after the update (empty cluster keeps its centroid)
  std::vector<int64_t> counts;      // k
  double inertia = 0;               // Σ best
};

// centroids_before: packed per KRange::slot_offset, as the variants hold them.
std::vector<KReference> reference_step(const Dataset& data, const KRange& k,
                                       const std::vector<float>& centroids_before);

// Centroid update in FP64 from given labels, data.m of them (used for tie-aware comparison).
void reference_update(const Dataset& data, int k, const int32_t* labels,
                      const float* centroids_before, std::vector<double>& centroids,
                      std::vector<int64_t>& counts);

struct KVerdict {
  int k = 0;
  int problem = -1;  // the problem of a batch it judges (Problem::batch > 1), else -1
  int64_t label_mismatches = 0;  // mismatches that are NOT ties: failures
  int64_t tie_flips = 0;         // mismatches explained by near-ties
  int64_t ties = 0;              // points whose best and second-best are within tie tolerance
  int64_t count_mismatches = 0;
  // The largest centroid error in units of the data's standard deviation (of its dimension),
  // in FP32 ULPs (of its expected value), and as a fraction of its allowance (≤ 1 passes).
  double centroid_error_spread = 0;
  double centroid_error_ulps = 0;
  double centroid_tolerance_used = 0;
  double inertia_rel_error = 0;
  bool passed = false;
};

struct VerifyReport {
  bool passed = false;
  std::vector<KVerdict> per_k;
  Tolerances tolerances;
  std::string summary() const;  // one line
  nlohmann::json to_json() const;
};

VerifyReport compare_with_reference(const Dataset& data, const KRange& k,
                                    const std::vector<float>& centroids_before,
                                    const IterationResult& got, const Tolerances& tol = {});

// Every problem of a batch (Problem::batch; variants/batched/) against the reference on its own
// rows, from its own centroids: the verdicts come problem after problem, each naming its problem,
// and the report passes when every problem's does. With batch 1, compare_with_reference.
VerifyReport compare_batch_with_reference(const Dataset& data, const Problem& problem,
                                          const std::vector<float>& centroids_before, const IterationResult& got,
                                          const Tolerances& tol = {});
// Same, with the reference step already computed (several variants checked from the same
// starting centroids share one FP64 step).
VerifyReport compare_with_reference(const Dataset& data, const KRange& k,
                                    const std::vector<float>& centroids_before,
                                    const IterationResult& got, const std::vector<KReference>& reference,
                                    const Tolerances& tol = {});

}  // namespace mk
