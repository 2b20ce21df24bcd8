#pragma once
// Helpers shared by the seeding tests: small data sets and an FP64 potential computed here,
// independently of the code under test.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"

namespace mk::seeding_test {

inline Dataset blobs(int64_t m, int n, int centers, double spread, uint64_t seed) {
  GeneratorSpec spec;
  spec.kind = "blobs";
  spec.m = m;
  spec.n = n;
  spec.centers = centers;
  spec.spread = spread;
  spec.seed = seed;
  return generate(spec);
}

inline Dataset uniform(int64_t m, int n, uint64_t seed) {
  GeneratorSpec spec;
  spec.kind = "uniform";
  spec.m = m;
  spec.n = n;
  spec.seed = seed;
  return generate(spec);
}

// Σ over points of the smallest squared distance to `count` row-major centres, in FP64.
inline double potential_fp64(const Dataset& data, const float* centres, int count) {
  double total = 0;
  for (int64_t i = 0; i < data.m; ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (int c = 0; c < count; ++c) {
      double d2 = 0;
      for (int d = 0; d < data.n; ++d) {
        const double diff = double(data.at(i, d)) - double(centres[size_t(c) * data.n + d]);
        d2 += diff * diff;
      }
      best = std::min(best, d2);
    }
    total += best;
  }
  return total;
}

inline double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0.0 : sum / double(values.size());
}

}  // namespace mk::seeding_test
