#pragma once
// An independent FP64 Lloyd for one copy of the subset batch (variants/subset_batch/): the
// copy's columns gathered into their own small table, plain loops, no tiling, no OpenMP, so
// it shares no code with the engines it checks. The same rules as the batch: the nearest
// centroid by Σ(x − c)² (ties to the lower index), an empty cluster keeps its centroid, stop
// after a step whose shift Σ‖c_new − c_old‖² is at most the threshold. The score is the last
// step's: its assignment counted per (cluster, class), and that partition's Σ‖x − c_final‖²,
// summed point by point here (the engines use identities on their sums).
#include <cstdint>
#include <limits>
#include <vector>

#include "datasets/dataset.hpp"

namespace mk::testing_support {

struct CopyReference {
  std::vector<double> centroids;      // k × s
  int steps = 0;
  bool converged = false;
  std::vector<int64_t> class_counts;  // k × classes, the last step's assignment
  double inertia = 0;
  std::vector<double> best, second;   // per row, the last step's nearest and runner-up distances
};

inline CopyReference reference_copy(const Dataset& data, const std::vector<int32_t>& labels, int classes,
                                    const int32_t* columns, int s, int k, const float* initial, double threshold,
                                    int max_iter) {
  const int64_t m = data.m;
  std::vector<double> x(size_t(m) * s);
  for (int64_t i = 0; i < m; ++i)
    for (int d = 0; d < s; ++d) x[size_t(i) * s + d] = data.at(i, columns[d]);
  CopyReference out;
  out.centroids.assign(initial, initial + size_t(k) * s);
  auto nearest = [&](int64_t i, double* best, double* second) {
    int index = 0;
    double b = std::numeric_limits<double>::infinity(), r = b;
    for (int j = 0; j < k; ++j) {
      double distance = 0;
      for (int d = 0; d < s; ++d) {
        const double delta = x[size_t(i) * s + d] - out.centroids[size_t(j) * s + d];
        distance += delta * delta;
      }
      if (distance < b) r = b, b = distance, index = j;
      else if (distance < r) r = distance;
    }
    if (best) *best = b;
    if (second) *second = r;
    return index;
  };
  out.best.resize(size_t(m));
  out.second.resize(size_t(m));
  std::vector<int> assigned(size_t(m), 0);
  for (int step = 0; step < max_iter; ++step) {
    std::vector<double> sums(size_t(k) * s, 0.0);
    std::vector<int64_t> counts(size_t(k), 0);
    out.class_counts.assign(size_t(k) * classes, 0);
    for (int64_t i = 0; i < m; ++i) {
      const int j = nearest(i, &out.best[size_t(i)], &out.second[size_t(i)]);
      assigned[size_t(i)] = j;
      for (int d = 0; d < s; ++d) sums[size_t(j) * s + d] += x[size_t(i) * s + d];
      ++counts[size_t(j)];
      ++out.class_counts[size_t(j) * classes + labels[size_t(i)]];
    }
    double shift = 0;
    for (int j = 0; j < k; ++j) {
      if (counts[size_t(j)] == 0) continue;
      for (int d = 0; d < s; ++d) {
        const double next = sums[size_t(j) * s + d] / double(counts[size_t(j)]);
        shift += (next - out.centroids[size_t(j) * s + d]) * (next - out.centroids[size_t(j) * s + d]);
        out.centroids[size_t(j) * s + d] = next;
      }
    }
    ++out.steps;
    if (shift <= threshold) {
      out.converged = true;
      break;
    }
  }
  for (int64_t i = 0; i < m; ++i) {
    const int j = assigned[size_t(i)];
    for (int d = 0; d < s; ++d) {
      const double delta = x[size_t(i) * s + d] - out.centroids[size_t(j) * s + d];
      out.inertia += delta * delta;
    }
  }
  return out;
}

}  // namespace mk::testing_support
