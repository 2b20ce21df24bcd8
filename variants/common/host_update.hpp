#pragma once
// The update phase of a step (variants/step.hpp) on host arrays: CPU runs use it directly.
// GPU runs divide on the device (variants/common/device_update.cuh) and share only the
// relocation choice below, so both pick the same points for the same data.
#include <cstdint>
#include <vector>

#include "core/problem.hpp"
#include "variants/step.hpp"

namespace mk {

struct HostStepState {
  const float* points = nullptr;  // m * n, row-major
  int64_t m = 0;
  int n = 0;
  KRange ks;
  std::vector<double>* sums = nullptr;               // slots * n
  std::vector<unsigned long long>* counts = nullptr;  // slots
  const std::vector<double>* inertia = nullptr;       // one per K
  std::vector<float>* centroids = nullptr;            // slots * n, before -> after
};

// Applies UpdateOptions (frozen Ks, the empty policy) and divides. `step` numbers the updates
// of one run, so the random policy draws anew when a cluster empties again.
StepSummary host_update(const HostStepState& state, const UpdateOptions& options, uint64_t step);

// The `count` points farthest from their nearest centroid among `centroids` (k * n, one K's),
// farthest first, ties to the lower index; with each one's nearest centroid (its label).
struct FarPoint {
  int64_t index = 0;
  int label = 0;
  double distance = 0;
};
std::vector<FarPoint> farthest_points(const float* points, int64_t m, int n, const float* centroids, int k,
                                      int count);

// The point the random policy gives empty cluster `slot` at update `step`.
int64_t random_relocation_point(uint64_t seed, uint64_t step, int slot, int64_t m);

}  // namespace mk
