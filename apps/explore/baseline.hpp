#pragma once
// The explorer's reference point: the same k-means and the same score on all the attributes
// at once (seed 000's 77.9 % line of Figure 5), run by the variants' step interface (`auto`
// on a GPU, cpu-openmp without one) with the copies' rules: k drawn rows as initial
// centroids, `fit`'s tolerance, the keep policy for empty clusters, then one labelled pass.
#include <cstdint>
#include <string>
#include <vector>

#include "apps/explore/labelled_table.hpp"
#include "core/device_info.hpp"

namespace mk::explore {

struct BaselineResult {
  std::string variant;
  double accuracy = 0;
  int steps = 0;
  bool converged = false;
  double inertia = 0;
  double seconds = 0;
};

// copy_index: the draw index of its initial rows (the explorer uses the number of copies, so
// the baseline's draw is not any copy's).
BaselineResult run_baseline(const LabelledTable& table, int k, int max_iter, double tol, uint64_t seed,
                            int64_t copy_index, const DeviceInfo& device);

}  // namespace mk::explore
