// Copies of `mkbench explore` (subsets.hpp).
#include "apps/explore/subsets.hpp"

#include <algorithm>
#include <limits>

#include "datasets/counter_rng.hpp"

namespace mk::explore {
namespace {

// Floyd's algorithm: `count` distinct values of [0, range), draw i from index first + i.
std::vector<int64_t> distinct_draws(const CounterRng& rng, uint64_t first, int64_t range, int count) {
  std::vector<int64_t> chosen;
  chosen.reserve(size_t(count));
  for (int64_t j = range - count, i = 0; j < range; ++j, ++i) {
    const int64_t t = int64_t(rng.below(first + uint64_t(i), uint64_t(j + 1)));
    chosen.push_back(std::find(chosen.begin(), chosen.end(), t) == chosen.end() ? t : j);
  }
  return chosen;
}

}  // namespace

std::vector<int32_t> random_subsets(int n, int s, int64_t copies, uint64_t seed) {
  const CounterRng rng(seed, RandomStream::ExploreSubset);
  std::vector<int32_t> columns(size_t(copies) * s);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < copies; ++b) {
    std::vector<int64_t> drawn = distinct_draws(rng, uint64_t(b) * uint64_t(s), n, s);
    std::sort(drawn.begin(), drawn.end());
    for (int d = 0; d < s; ++d) columns[size_t(b) * s + d] = int32_t(drawn[size_t(d)]);
  }
  return columns;
}

int64_t subset_count(int n, int s) {
  if (s < 0 || s > n) return 0;
  s = std::min(s, n - s);
  unsigned __int128 count = 1;
  for (int i = 1; i <= s; ++i) {
    count = count * unsigned(n - s + i) / unsigned(i);
    if (count > static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max())) return std::numeric_limits<int64_t>::max();
  }
  return int64_t(count);
}

std::vector<int32_t> all_subsets(int n, int s) {
  std::vector<int32_t> columns;
  std::vector<int32_t> current(static_cast<size_t>(s));
  for (int d = 0; d < s; ++d) current[size_t(d)] = d;
  while (true) {
    columns.insert(columns.end(), current.begin(), current.end());
    int d = s - 1;
    while (d >= 0 && current[size_t(d)] == n - s + d) --d;
    if (d < 0) break;
    ++current[size_t(d)];
    for (int e = d + 1; e < s; ++e) current[size_t(e)] = current[size_t(e - 1)] + 1;
  }
  return columns;
}

std::vector<int64_t> initial_rows(int64_t m, int k, int64_t copy, uint64_t seed) {
  const CounterRng rng(seed, RandomStream::ExploreInit);
  return distinct_draws(rng, uint64_t(copy) * uint64_t(k), m, k);
}

std::vector<float> initial_centroids(const Dataset& data, const std::vector<int32_t>& columns, int s, int k,
                                     uint64_t seed) {
  const int64_t copies = int64_t(columns.size()) / s;
  std::vector<float> centroids(size_t(copies) * k * s);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < copies; ++b) {
    const std::vector<int64_t> rows = initial_rows(data.m, k, b, seed);
    for (int j = 0; j < k; ++j)
      for (int d = 0; d < s; ++d)
        centroids[size_t((b * k + j) * s + d)] = data.at(rows[size_t(j)], columns[size_t(b * s + d)]);
  }
  return centroids;
}

std::vector<double> attribute_variances(const Dataset& data) {
  const int n = data.n;
  std::vector<double> mean(size_t(n), 0.0), variance(size_t(n), 0.0);
  for (int64_t i = 0; i < data.m; ++i)
    for (int d = 0; d < n; ++d) mean[size_t(d)] += data.at(i, d);
  for (double& value : mean) value /= double(data.m);
  for (int64_t i = 0; i < data.m; ++i)
    for (int d = 0; d < n; ++d) {
      const double delta = data.at(i, d) - mean[size_t(d)];
      variance[size_t(d)] += delta * delta;
    }
  for (double& value : variance) value /= double(data.m);
  return variance;
}

std::vector<double> convergence_thresholds(const std::vector<double>& variances, const std::vector<int32_t>& columns,
                                           int s, double tol) {
  const size_t copies = columns.size() / size_t(s);
  std::vector<double> thresholds(copies);
  for (size_t b = 0; b < copies; ++b) {
    double sum = 0;
    for (int d = 0; d < s; ++d) sum += variances[size_t(columns[b * s + d])];
    thresholds[b] = tol * sum / s;
  }
  return thresholds;
}

}  // namespace mk::explore
