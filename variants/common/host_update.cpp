#include "variants/common/host_update.hpp"

#include <omp.h>

#include <algorithm>
#include <limits>

#include "datasets/counter_rng.hpp"

namespace mk {

int64_t random_relocation_point(uint64_t seed, uint64_t step, int slot, int64_t m) {
  const CounterRng rng(seed, RandomStream::EmptyRelocation);
  return int64_t(rng.below((step << 32) | uint64_t(uint32_t(slot)), uint64_t(m)));
}

std::vector<FarPoint> farthest_points(const float* points, int64_t m, int n, const float* centroids, int k,
                                      int count) {
  std::vector<double> nearest(static_cast<size_t>(m));
  std::vector<int> label(static_cast<size_t>(m));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < m; ++i) {
    const float* x = points + size_t(i) * n;
    double best = std::numeric_limits<double>::infinity();
    int best_c = 0;
    for (int c = 0; c < k; ++c) {
      double d2 = 0;
      for (int d = 0; d < n; ++d) {
        const double diff = double(x[d]) - double(centroids[size_t(c) * n + d]);
        d2 += diff * diff;
      }
      if (d2 < best) best = d2, best_c = c;
    }
    nearest[size_t(i)] = best;
    label[size_t(i)] = best_c;
  }
  count = int(std::min<int64_t>(count, m));
  std::vector<int64_t> order(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) order[size_t(i)] = i;
  auto farther = [&](int64_t a, int64_t b) {
    return nearest[size_t(a)] != nearest[size_t(b)] ? nearest[size_t(a)] > nearest[size_t(b)] : a < b;
  };
  std::partial_sort(order.begin(), order.begin() + count, order.end(), farther);
  std::vector<FarPoint> result;
  for (int j = 0; j < count; ++j) {
    const int64_t i = order[size_t(j)];
    result.push_back({i, label[size_t(i)], nearest[size_t(i)]});
  }
  return result;
}

StepSummary host_update(const HostStepState& s, const UpdateOptions& options, uint64_t step) {
  const int n = s.n;
  auto& sums = *s.sums;
  auto& counts = *s.counts;
  auto& centroids = *s.centroids;
  StepSummary summary;
  for (int k = s.ks.kmin; k <= s.ks.kmax; ++k) {
    const int index = k - s.ks.kmin;
    const int base = s.ks.slot_offset(k);
    KStepSummary ks;
    ks.k = k;
    ks.inertia = (*s.inertia)[size_t(index)];
    ks.active = options.active.empty() || options.active[size_t(index)] != 0;
    if (!ks.active) {  // frozen: nothing moves, nothing is counted
      summary.per_k.push_back(ks);
      continue;
    }
    std::vector<int> empty;
    for (int c = 0; c < k; ++c)
      if (counts[size_t(base + c)] == 0) empty.push_back(base + c);
    ks.empty = int(empty.size());
    if (!empty.empty() && options.empty == EmptyPolicy::Farthest) {
      // As scikit-learn: the farthest points, measured from the centroids before this update,
      // move to the empty clusters and leave their own clusters' sums.
      const auto far = farthest_points(s.points, s.m, n, centroids.data() + size_t(base) * n, k, int(empty.size()));
      for (size_t j = 0; j < far.size(); ++j) {
        const float* x = s.points + size_t(far[j].index) * n;
        const int from = base + far[j].label, to = empty[j];
        for (int d = 0; d < n; ++d) {
          sums[size_t(from) * n + d] -= double(x[d]);
          sums[size_t(to) * n + d] = double(x[d]);
        }
        counts[size_t(from)] -= 1;
        counts[size_t(to)] = 1;
        ++ks.relocated;
      }
    } else if (!empty.empty() && options.empty == EmptyPolicy::Random) {
      for (int slot : empty) {
        const float* x = s.points + size_t(random_relocation_point(options.seed, step, slot, s.m)) * n;
        for (int d = 0; d < n; ++d) sums[size_t(slot) * n + d] = double(x[d]);
        counts[size_t(slot)] = 1;
        ++ks.relocated;
      }
    }
    for (int c = 0; c < k; ++c) {
      const size_t slot = size_t(base + c);
      if (counts[slot] == 0) continue;  // keep: the previous centroid stays
      const double inv = 1.0 / double(counts[slot]);
      for (int d = 0; d < n; ++d) {
        const float updated = float(sums[slot * n + d] * inv);
        const double diff = double(updated) - double(centroids[slot * n + d]);
        ks.shift += diff * diff;
        centroids[slot * n + d] = updated;
      }
    }
    summary.per_k.push_back(ks);
  }
  return summary;
}

}  // namespace mk
