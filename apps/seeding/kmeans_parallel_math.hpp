#pragma once
// What both k-means|| paths compute the same way (kmeans_parallel_cpu.cpp, kmeans_parallel_gpu.cu),
// so that they draw the same candidates and choose the same centres for the same seed: D² is
// kmeanspp_math.hpp's float distance, the potential Σ D² is summed in FP64 in fixed blocks of
// kParallelSumBlock rows (each in row order, then the blocks in order), and a point's draw in a
// round is this pure function of (seed, round, row, D²).
#include <cmath>
#include <cstdint>
#include <string>

#include "apps/seeding/kmeanspp_math.hpp"
#include "apps/seeding/kmeans_parallel.hpp"
#include "core/errors.hpp"
#include "datasets/counter_rng.hpp"

namespace mk::seeding {

// Rows a block of the potential's fixed-order sum.
constexpr int64_t kParallelSumBlock = 4096;
// Rounds added, at most, while fewer candidates than kmax were drawn (a tiny or repetitive
// data set); past them the first other rows fill in (their D² is 0: copies of candidates).
constexpr int kParallelExtraRounds = 20;

// The first candidate: a uniform row, drawn at an index no round uses (rounds use
// (round - 1)·m + i < 2^63).
inline int64_t parallel_first_centre(const CounterRng& rng, int64_t m) {
  return int64_t(rng.below(~uint64_t(0), uint64_t(m)));
}

// Row i is drawn in `round` (1, 2, ...) with probability min(1, scale·D²), scale = ℓ / Σ D²: a
// candidate (D² = 0) never is.
MK_SEEDING_HD inline bool parallel_draw(const CounterRng& rng, int round, int64_t m, int64_t i, double scale,
                                        float d2) {
  const double p = scale * double(d2);
  return rng.unit_double(uint64_t(round - 1) * uint64_t(m) + uint64_t(i)) < (p < 1.0 ? p : 1.0);
}

// Σ D² overflows only where a squared distance did (float32): the data's coordinates are too large.
inline void check_potential(double potential) {
  if (!std::isfinite(potential))
    throw InputError("k-means||: a squared distance overflows float32 (the data's coordinates are too large; "
                     "scale the data)");
}

// The request both paths refuse alike: InputError for rounds < 1, a negative or non-finite
// oversampling, or a K the points cannot seed.
inline void check_parallel_request(const Dataset& data, int kmax, const KmeansParallelOptions& options) {
  if (options.rounds < 1) throw InputError("k-means||: rounds must be at least 1, got " + std::to_string(options.rounds));
  if (!(options.oversampling >= 0) || !std::isfinite(options.oversampling))
    throw InputError("k-means||: the oversampling factor must be a finite number >= 0 (0: 2 x K), got " +
                     std::to_string(options.oversampling));
  if (kmax < 1 || data.m < kmax || data.n < 1 || !data.holds_rows())
    throw InputError("k-means||: cannot seed K=" + std::to_string(kmax) + " from " + std::to_string(data.m) + " x " +
                     std::to_string(data.n) + " points");
}

}  // namespace mk::seeding
