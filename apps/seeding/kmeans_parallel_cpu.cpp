// k-means|| on the CPU (OpenMP): kmeans_parallel.hpp says what it computes. Every draw is the
// counter RNG's at (round, point), every sum is taken in fixed blocks in a fixed order, a
// distance is kmeanspp_math.hpp's fixed sequence of float operations, and a point's nearest
// candidate is the first of the nearest: no result depends on the threads, and the GPU path
// (kmeans_parallel_gpu.cu) computes the same values.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "apps/seeding/kmeans_parallel.hpp"
#include "apps/seeding/kmeanspp.hpp"
#include "apps/seeding/kmeans_parallel_math.hpp"
#include "apps/seeding/kmeanspp_math.hpp"
#include "core/errors.hpp"
#include "datasets/counter_rng.hpp"

namespace mk::seeding {
namespace {

constexpr int64_t kBlock = kParallelSumBlock;
constexpr int kExtraRounds = kParallelExtraRounds;

// The hot loop compiled with and without FMA, picked at load time (as kmeanspp_cpu.cpp does):
// fmaf is one instruction with FMA and a libm call without, the same value either way.
// One string per clone: "arch=x86-64-v3" (AVX2 with FMA). "avx2,fma" made two clones, and the
// AVX2 one, picked first, called libm's fmaf for every dimension (36 % of k-means||'s CPU time).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define MKBENCH_PARALLEL_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MKBENCH_PARALLEL_CLONES
#endif

// Σ D² in blocks of kBlock, each summed in order in FP64, then the blocks in order.
double fixed_order_sum(const std::vector<float>& values) {
  const int64_t m = int64_t(values.size());
  const int64_t blocks = (m + kBlock - 1) / kBlock;
  std::vector<double> partial(size_t(blocks), 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    double sum = 0;
    for (int64_t i = b * kBlock; i < std::min(m, (b + 1) * kBlock); ++i) sum += double(values[size_t(i)]);
    partial[size_t(b)] = sum;
  }
  double total = 0;
  for (double value : partial) total += value;
  return total;
}

// D² and the nearest candidate of every point, against candidates [first, end): a candidate
// replaces the nearest only when strictly nearer, so ties keep the first drawn.
MKBENCH_PARALLEL_CLONES
void add_candidates(const Dataset& data, const std::vector<int64_t>& candidates, size_t first,
                    std::vector<float>& d2, std::vector<int64_t>& nearest) {
  const int n = data.n;
  const size_t added = candidates.size() - first;
  if (added == 0) return;
  std::vector<float> rows(added * size_t(n));  // the new candidates' rows, contiguous
  for (size_t c = 0; c < added; ++c)
    std::copy(data.row(candidates[first + c]), data.row(candidates[first + c]) + n, rows.begin() + long(c * n));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < data.m; ++i) {
    const float* x = data.row(i);
    float best = d2[size_t(i)];
    int64_t index = nearest[size_t(i)];
    for (size_t c = 0; c < added; ++c) {
      const float d = squared_distance(x, rows.data() + c * size_t(n), n);
      if (d < best) best = d, index = int64_t(first + c);
    }
    d2[size_t(i)] = best;
    nearest[size_t(i)] = index;
  }
}

}  // namespace

KmeansParallelRun kmeans_parallel_cpu(const Dataset& data, int kmax, uint64_t seed,
                                      const KmeansParallelOptions& options) {
  check_parallel_request(data, kmax, options);
  const auto start = std::chrono::steady_clock::now();
  const int64_t m = data.m;
  const double ell = options.oversampling > 0 ? options.oversampling : 2.0 * kmax;
  const CounterRng rng(seed, RandomStream::SeedingParallel);

  KmeansParallelRun run;
  run.candidates.push_back(parallel_first_centre(rng, m));
  std::vector<float> d2(size_t(m), INFINITY);
  std::vector<int64_t> nearest(size_t(m), 0);
  add_candidates(data, run.candidates, 0, d2, nearest);

  std::vector<unsigned char> drawn(static_cast<size_t>(m));
  for (int round = 1; round <= options.rounds + kExtraRounds; ++round) {
    if (round > options.rounds && int64_t(run.candidates.size()) >= kmax) break;
    const double potential = fixed_order_sum(d2);
    check_potential(potential);
    if (!(potential > 0)) break;  // every point is a copy of a candidate: no draw adds one
    const double scale = ell / potential;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; ++i) drawn[size_t(i)] = parallel_draw(rng, round, m, i, scale, d2[size_t(i)]);
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
