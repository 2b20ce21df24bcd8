// k-means|| on the CPU (OpenMP): kmeans_parallel.hpp says what it computes. Every draw is the
// counter RNG's at (round, point), every sum is taken in fixed blocks in a fixed order, and a
// point's nearest candidate is the first of the nearest, so no result depends on the threads.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "apps/seeding/kmeans_parallel.hpp"
#include "apps/seeding/kmeanspp.hpp"
#include "core/errors.hpp"
#include "datasets/counter_rng.hpp"

namespace mk::seeding {
namespace {

// Rows a block of the fixed-order sums.
constexpr int64_t kBlock = 4096;
// Rounds added, at most, while fewer candidates than kmax were drawn (a tiny or repetitive
// data set); past them the first other rows fill in (their D² is 0: copies of candidates).
constexpr int kExtraRounds = 20;
// The first centre's draw: an index no round uses (rounds use (round - 1)·m + i < 2^63).
constexpr uint64_t kFirstCentreDraw = ~uint64_t(0);

double squared_distance_fp64(const float* a, const float* b, int n) {
  double sum = 0;
  for (int d = 0; d < n; ++d) {
    const double diff = double(a[d]) - double(b[d]);
    sum += diff * diff;
  }
  return sum;
}

// Σ values in blocks of kBlock, each summed in order, then the blocks in order.
double fixed_order_sum(const std::vector<double>& values) {
  const int64_t m = int64_t(values.size());
  const int64_t blocks = (m + kBlock - 1) / kBlock;
  std::vector<double> partial(size_t(blocks), 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    double sum = 0;
    for (int64_t i = b * kBlock; i < std::min(m, (b + 1) * kBlock); ++i) sum += values[size_t(i)];
    partial[size_t(b)] = sum;
  }
  double total = 0;
  for (double value : partial) total += value;
  return total;
}

// D² and the nearest candidate of every point, against candidates [first, end): a candidate
// replaces the nearest only when strictly nearer, so ties keep the first drawn.
void add_candidates(const Dataset& data, const std::vector<int64_t>& candidates, size_t first,
                    std::vector<double>& d2, std::vector<int64_t>& nearest) {
  const int n = data.n;
  const size_t added = candidates.size() - first;
  if (added == 0) return;
  std::vector<float> rows(added * size_t(n));  // the new candidates' rows, contiguous
  for (size_t c = 0; c < added; ++c)
    std::copy(data.row(candidates[first + c]), data.row(candidates[first + c]) + n, rows.begin() + long(c * n));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < data.m; ++i) {
    const float* x = data.row(i);
    double best = d2[size_t(i)];
    int64_t index = nearest[size_t(i)];
    for (size_t c = 0; c < added; ++c) {
      const double d = squared_distance_fp64(x, rows.data() + c * size_t(n), n);
      if (d < best) best = d, index = int64_t(first + c);
    }
    d2[size_t(i)] = best;
    nearest[size_t(i)] = index;
  }
}

}  // namespace

KmeansParallelRun kmeans_parallel_cpu(const Dataset& data, int kmax, uint64_t seed,
                                      const KmeansParallelOptions& options) {
  if (options.rounds < 1) throw InputError("k-means||: rounds must be at least 1, got " + std::to_string(options.rounds));
  if (!(options.oversampling >= 0) || !std::isfinite(options.oversampling))
    throw InputError("k-means||: the oversampling factor must be a finite number >= 0 (0: 2 x K), got " +
                     std::to_string(options.oversampling));
  if (kmax < 1 || data.m < kmax || data.n < 1 || !data.holds_rows())
    throw InputError("k-means||: cannot seed K=" + std::to_string(kmax) + " from " + std::to_string(data.m) + " x " +
                     std::to_string(data.n) + " points");
  const auto start = std::chrono::steady_clock::now();
  const int64_t m = data.m;
  const double ell = options.oversampling > 0 ? options.oversampling : 2.0 * kmax;
  const CounterRng rng(seed, RandomStream::SeedingParallel);

  KmeansParallelRun run;
  run.candidates.push_back(int64_t(rng.below(kFirstCentreDraw, uint64_t(m))));
  std::vector<double> d2(size_t(m), INFINITY);
  std::vector<int64_t> nearest(size_t(m), 0);
  add_candidates(data, run.candidates, 0, d2, nearest);

  std::vector<unsigned char> drawn(static_cast<size_t>(m));
  for (int round = 1; round <= options.rounds + kExtraRounds; ++round) {
    if (round > options.rounds && int64_t(run.candidates.size()) >= kmax) break;
    const double potential = fixed_order_sum(d2);
    if (!(potential > 0)) break;  // every point is a copy of a candidate: no draw adds one
    const double scale = ell / potential;
    const uint64_t base = uint64_t(round - 1) * uint64_t(m);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; ++i)
      drawn[size_t(i)] = rng.unit_double(base + uint64_t(i)) < std::min(1.0, scale * d2[size_t(i)]);
    const size_t first = run.candidates.size();
    for (int64_t i = 0; i < m; ++i)
      if (drawn[size_t(i)]) run.candidates.push_back(i);
    add_candidates(data, run.candidates, first, d2, nearest);
    run.rounds = round;
  }
  // Fewer candidates than kmax only where the points coincide with the candidates: the first
  // other rows fill in (as k-means++ draws uniformly when every D² is 0).
  if (int64_t(run.candidates.size()) < kmax) {
    std::vector<unsigned char> taken(size_t(m), 0);
    for (int64_t c : run.candidates) taken[size_t(c)] = 1;
    const size_t first = run.candidates.size();
    for (int64_t i = 0; i < m && int64_t(run.candidates.size()) < kmax; ++i)
      if (!taken[size_t(i)]) run.candidates.push_back(i);
    add_candidates(data, run.candidates, first, d2, nearest);
  }

  run.candidate_weights.assign(run.candidates.size(), 0);
  for (int64_t i = 0; i < m; ++i) ++run.candidate_weights[size_t(nearest[size_t(i)])];

  // Greedy k-means++ on the weighted candidates.
  Dataset pool;
  pool.m = int64_t(run.candidates.size());
  pool.n = data.n;
  pool.values.resize(run.candidates.size() * size_t(data.n));
  for (size_t c = 0; c < run.candidates.size(); ++c)
    std::copy(data.row(run.candidates[c]), data.row(run.candidates[c]) + data.n,
              pool.values.begin() + long(c * size_t(data.n)));
  pool.finite_checked = true;
  std::vector<float> weights(run.candidate_weights.begin(), run.candidate_weights.end());
  const KmeansppRun recluster =
      kmeanspp_cpu(pool, kmax, candidate_count(kmax, options.candidates), seed, weights.data());
  for (int64_t index : recluster.chosen) run.chosen.push_back(run.candidates[size_t(index)]);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace mk::seeding
