// Greedy k-means++ on the CPU (OpenMP). Same steps, draws and integer weights as the GPU path
// (kmeanspp_math.hpp), so both choose the same centres; chunk sums play the part of the GPU's
// tile sums, and their size does not change the answer because the sums are exact.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/seeding/kmeanspp.hpp"
#include "apps/seeding/kmeanspp_math.hpp"
#include "core/errors.hpp"

namespace mk::seeding {
namespace {

// Points per chunk: a chunk's weight sum lets a draw skip whole chunks before it walks one.
constexpr int64_t kChunk = 4096;

// The hot loops are compiled with and without FMA and picked at load time (as cpu-openmp
// does): fmaf is one instruction with FMA and a libm call without, the same value either way.
// One string per clone: "arch=x86-64-v3" (AVX2 with FMA). "avx2,fma" made two clones, and the
// AVX2 one, picked first, called libm's fmaf for every dimension (36 % of k-means||'s CPU time).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define MKBENCH_SEEDING_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MKBENCH_SEEDING_CLONES
#endif

struct Points {
  const float* values;
  int64_t m;
  int n;
  const float* weights;  // per point, or null (every weight 1)
  const float* row(int64_t i) const { return values + size_t(i) * size_t(n); }
  // kmeanspp_math.hpp's w·D², as the GPU path computes it.
  float weighted(int64_t i, float d2) const { return seeding::weighted(weights, i, d2); }
};

// D² to the first centre; returns the largest w·D².
MKBENCH_SEEDING_CLONES
float first_distances(const Points& x, int64_t centre, std::vector<float>& d2) {
  const float* c = x.row(centre);
  float largest = 0.0f;
#pragma omp parallel for schedule(static) reduction(max : largest)
  for (int64_t i = 0; i < x.m; ++i) {
    d2[size_t(i)] = squared_distance(x.row(i), c, x.n);
    largest = std::max(largest, x.weighted(i, d2[size_t(i)]));
  }
  return largest;
}

// For every chunk and candidate b: Σ q(min(D², d²(x, cand_b))), into sums[b * chunks + chunk].
MKBENCH_SEEDING_CLONES
void candidate_sums(const Points& x, const std::vector<float>& d2, const std::vector<int64_t>& candidates,
                    const Quantizer& quantize, std::vector<uint64_t>& sums) {
  const int count = int(candidates.size());
  const int64_t chunks = (x.m + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    uint64_t local[kMaxCandidates] = {};
    const int64_t end = std::min(x.m, (chunk + 1) * kChunk);
    for (int64_t i = chunk * kChunk; i < end; ++i) {
      const float* p = x.row(i);
      const float current = d2[size_t(i)];
      for (int b = 0; b < count; ++b)
        local[b] += quantize(x.weighted(i, std::min(current, squared_distance(p, x.row(candidates[size_t(b)]), x.n))));
    }
    for (int b = 0; b < count; ++b) sums[size_t(b) * size_t(chunks) + size_t(chunk)] = local[b];
  }
}

MKBENCH_SEEDING_CLONES
void apply_centre(const Points& x, int64_t centre, std::vector<float>& d2) {
  const float* c = x.row(centre);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < x.m; ++i) d2[size_t(i)] = std::min(d2[size_t(i)], squared_distance(x.row(i), c, x.n));
}

// The first point whose inclusive prefix of weights exceeds target (target < Σ weights).
int64_t locate(const Points& x, const std::vector<float>& d2, const std::vector<uint64_t>& chunk_sums,
               const Quantizer& quantize, int64_t m, uint64_t target) {
  uint64_t before = 0;
  for (size_t chunk = 0; chunk < chunk_sums.size(); ++chunk) {
    if (before + chunk_sums[chunk] <= target) {
      before += chunk_sums[chunk];
      continue;
    }
    const int64_t end = std::min(m, int64_t(chunk + 1) * kChunk);
    for (int64_t i = int64_t(chunk) * kChunk; i < end; ++i) {
      before += quantize(x.weighted(i, d2[size_t(i)]));
      if (before > target) return i;
    }
    break;
  }
  throw std::logic_error("k-means++: a draw fell outside the weights it was drawn from (chunk sums and weights "
                         "disagree)");
}

}  // namespace

KmeansppRun kmeanspp_cpu(const Dataset& data, int kmax, int candidates, uint64_t seed, const float* weights) {
  const auto start = std::chrono::steady_clock::now();
  const Points x{data.points(), data.m, data.n, weights};
  const Draws draws = make_draws(seed);
  const int64_t chunks = (x.m + kChunk - 1) / kChunk;

  KmeansppRun run;
  run.path = "cpu-openmp";
  run.chosen.reserve(size_t(kmax));
  run.chosen.push_back(weights ? first_weighted_centre(weights, x.m, draws) : int64_t(draws.below(0, uint64_t(x.m))));

  std::vector<float> d2(size_t(x.m));
  const float largest = first_distances(x, run.chosen[0], d2);
  if (!std::isfinite(largest))
    throw InputError("k-means++: a squared distance overflows float32 (the data's coordinates are too large; "
                     "scale the data)");
  const Quantizer quantize = make_quantizer(largest, x.m);

  // Weight sums of the current D² per chunk, and their total (the current potential).
  std::vector<uint64_t> chunk_sums(size_t(chunks), 0);
  std::vector<uint64_t> sums(size_t(candidates) * size_t(chunks), 0);
  candidate_sums(x, d2, {run.chosen[0]}, quantize, chunk_sums);
  uint64_t total = 0;
  for (uint64_t s : chunk_sums) total += s;

  std::vector<int64_t> drawn(static_cast<size_t>(candidates));
  for (int step = 1; step < kmax; ++step) {
    for (int b = 0; b < candidates; ++b) {
      const uint64_t index = draw_index(step, candidates, b);
      // Every D² weighs 0 (all points coincide with chosen centres, as far as the weights
      // resolve): draw uniformly among the points, which is the limit of D² sampling.
      drawn[size_t(b)] = total == 0 ? int64_t(draws.below(index, uint64_t(x.m)))
                                    : locate(x, d2, chunk_sums, quantize, x.m, draws.below(index, total));
    }
    candidate_sums(x, d2, drawn, quantize, sums);
    int best = 0;
    uint64_t best_potential = 0;
    for (int b = 0; b < candidates; ++b) {
      uint64_t potential = 0;
      for (int64_t chunk = 0; chunk < chunks; ++chunk) potential += sums[size_t(b) * size_t(chunks) + size_t(chunk)];
      if (b == 0 || potential < best_potential) {
        best = b;
        best_potential = potential;
      }
    }
    run.chosen.push_back(drawn[size_t(best)]);
    total = best_potential;
    std::copy(sums.begin() + size_t(best) * size_t(chunks), sums.begin() + size_t(best + 1) * size_t(chunks),
              chunk_sums.begin());
    apply_centre(x, drawn[size_t(best)], d2);
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace mk::seeding
