// Validation of loaded points and the centroid seeds every variant starts from.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "datasets/counter_rng.hpp"
#include "datasets/dataset.hpp"
#include "datasets/generated_rows.hpp"
#include "datasets/point_indices.hpp"
#include "core/errors.hpp"

namespace mk {

namespace {

// Every variant computes squared distances in FP32. Σ_d (max_d − min_d)² bounds each point's
// squared distance to any point or centroid of the data's box: from FLT_MAX on one can overflow
// (labels and centroids then go wrong: run --verify failed, fit's k-means++ threw), and below
// 1e-30 (the window variants' floor, docs/gemm-window.md) they are too small for FP32's
// expansions and sums (fit reported an inertia of 0 for 1e-40 data, whose squares flush to 0).
// A pass over rows held in memory that no one-pass loader checked: an .npy file's load and a
// generator's rows (issue 34's measured load, tests/device/load.sh) are left out, as are a
// mapped file and a generator's on-demand rows.
void check_distance_scale(const Dataset& data) {
  if (data.finite_checked || data.is_mapped() || data.is_on_demand() || !data.holds_rows() || data.m < 2 ||
      data.n < 1)
    return;
  const int n = data.n;
  const float* values = data.points();
  std::vector<float> lo(size_t(n), std::numeric_limits<float>::infinity());
  std::vector<float> hi(size_t(n), -std::numeric_limits<float>::infinity());
#pragma omp parallel
  {
    std::vector<float> my_lo(size_t(n), std::numeric_limits<float>::infinity());
    std::vector<float> my_hi(size_t(n), -std::numeric_limits<float>::infinity());
#pragma omp for schedule(static) nowait
    for (int64_t i = 0; i < data.m; ++i) {
      const float* row = values + size_t(i) * size_t(n);
      for (int d = 0; d < n; ++d) {
        my_lo[size_t(d)] = std::min(my_lo[size_t(d)], row[d]);
        my_hi[size_t(d)] = std::max(my_hi[size_t(d)], row[d]);
      }
    }
#pragma omp critical
    for (int d = 0; d < n; ++d) {
      lo[size_t(d)] = std::min(lo[size_t(d)], my_lo[size_t(d)]);
      hi[size_t(d)] = std::max(hi[size_t(d)], my_hi[size_t(d)]);
    }
  }
  double bound = 0.0;
  for (int d = 0; d < n; ++d) {
    const double range = double(hi[size_t(d)]) - double(lo[size_t(d)]);
    bound += range * range;
  }
  if (bound == 0.0) return;  // every point the same: no distance to lose
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", bound);
  if (bound >= double(std::numeric_limits<float>::max()))
    throw InputError(std::string("the data's squared distances reach up to ") + text +
                     ", beyond float32's 3.4e38, where mkbench computes them: scale the data down");
  if (bound < 1e-30)
    throw InputError(std::string("the data's squared distances are at most ") + text +
                     ", below 1e-30, where float32 loses them to underflow: scale the data up");
}

}  // namespace

void check_finite(const Dataset& data) {
  if (data.finite_checked) return;  // the loader's one pass checked NaN/Inf (and leaves out the scale)
  check_values_finite(data);
  check_distance_scale(data);
}

void check_values_finite(const Dataset& data) {
  const int64_t count = data.holds_rows() ? data.m * int64_t(data.n) : static_cast<int64_t>(data.values.size());
  const float* values = data.points();
  int64_t first_bad = std::numeric_limits<int64_t>::max();
#pragma omp parallel for schedule(static) reduction(min : first_bad)
  for (int64_t i = 0; i < count; ++i)
    if (!std::isfinite(values[i])) first_bad = std::min(first_bad, i);
  if (first_bad == std::numeric_limits<int64_t>::max()) return;
  const int n = std::max(data.n, 1);
  const float bad = values[first_bad];
  const char* what = std::isnan(bad) ? "NaN" : (bad > 0 ? "Inf" : "-Inf");
  throw InputError(std::string("dataset contains ") + what + " at row " + std::to_string(first_bad / n) +
                   ", column " + std::to_string(first_bad % n));
}

namespace {

// K distinct point indices, drawn by a Fisher-Yates shuffle that only materialises the
// positions it touches, so drawing 4096 seeds from 32M points costs 4096 steps, not 32M.
std::vector<int64_t> distinct_sample(int64_t population, int count, uint64_t seed) {
  CounterRng draw(seed, RandomStream::InitialSample);
  std::unordered_map<int64_t, int64_t> swapped;  // position -> index now stored there
  auto at = [&](int64_t position) {
    auto found = swapped.find(position);
    return found == swapped.end() ? position : found->second;
  };
  std::vector<int64_t> picks(count);
  for (int j = 0; j < count; ++j) {
    int64_t other = j + static_cast<int64_t>(draw.below(j, static_cast<uint64_t>(population - j)));
    int64_t chosen = at(other);
    swapped[other] = at(j);
    picks[j] = chosen;
  }
  return picks;
}

}  // namespace

std::vector<int64_t> initial_point_indices(int64_t m, int kmax, InitMethod method, uint64_t seed) {
  if (kmax < 1 || kmax > m)
    throw InputError("K=" + std::to_string(kmax) + " exceeds the number of points M=" + std::to_string(m));
  if (method == InitMethod::RandomSample) return distinct_sample(m, kmax, seed);
  std::vector<int64_t> first(size_t(kmax), 0);
  for (int c = 0; c < kmax; ++c) first[size_t(c)] = c;
  return first;
}

std::vector<float> initial_centroids(const Dataset& data, const KRange& k, InitMethod method,
                                     uint64_t seed) {
  if (k.kmin < 1 || k.kmax < k.kmin)
    throw InputError("invalid K range " + k.str() + " for initial centroids");
  if (data.n < 1 || data.m < 1) throw InputError("cannot pick initial centroids from an empty dataset");
  if (!data.holds_rows() && !data.is_on_demand())
    throw InputError("dataset holds " + std::to_string(data.values.size()) + " values but claims " +
                     std::to_string(data.m) + " x " + std::to_string(data.n));
  if (k.kmax > data.m)
    throw InputError("K=" + std::to_string(k.kmax) + " exceeds the number of points M=" +
                     std::to_string(data.m));

  // Both methods give every K a prefix of one sequence of points, so K and K+1 share their
  // first K seeds and results across the range are comparable.
  std::vector<int64_t> order;
  if (method == InitMethod::RandomSample) order = distinct_sample(data.m, k.kmax, seed);

  const size_t n = static_cast<size_t>(data.n);
  if (method == InitMethod::FirstK)
    for (int c = 0; c < k.kmax; ++c) order.push_back(c);
  std::vector<float> seeds(size_t(k.kmax) * n);
  copy_rows_at(data, order, seeds.data());  // an on-demand data set makes the rows
  std::vector<float> centroids(static_cast<size_t>(k.sum()) * n);
  for (int kk = k.kmin; kk <= k.kmax; ++kk)
    std::copy(seeds.begin(), seeds.begin() + ptrdiff_t(size_t(kk) * n),
              centroids.begin() + ptrdiff_t(size_t(k.slot_offset(kk)) * n));
  return centroids;
}

std::vector<float> batch_initial_centroids(const Dataset& data, const Problem& problem, InitMethod method,
                                           uint64_t seed) {
  if (problem.batch <= 1) return initial_centroids(data, problem.k, method, seed);
  if (data.m != problem.total_points())
    throw InputError("a batch of " + std::to_string(problem.batch) + " problems of " + std::to_string(problem.m) +
                     " points needs " + std::to_string(problem.total_points()) + " rows; the data has " +
                     std::to_string(data.m));
  std::vector<float> packed;
  for (int b = 0; b < problem.batch; ++b) {
    const std::vector<float> one = initial_centroids(rows_of(data, int64_t(b) * problem.m, int64_t(b + 1) * problem.m),
                                                     problem.k, method, seed + uint64_t(b));
    packed.insert(packed.end(), one.begin(), one.end());
  }
  return packed;
}

}  // namespace mk
