#pragma once
// The arithmetic of the streaming k-means (seed 001; docs/streaming.md) that both paths share,
// compiled for the host and the device from this one text, so that the CPU and GPU paths choose
// the same intermediate centres for the same seed.
//
// One routine does all the D² sampling: `rounds` rounds, each drawing `per_round` points with
// probability w·D² (w the point's weight, D² its squared distance to the nearest point chosen
// so far; before the first round D² counts as 1, so the first round draws ∝ w), then updating
// every point's D² and nearest chosen point. k-means# on a chunk is k rounds of ⌈3 ln k⌉ with
// w = 1 (its first round draws ⌈3 ln k⌉ points uniformly, as seed 001 §2.4); weighted k-means++
// on the intermediate centres is k rounds of 1 (greedy: greedy_candidates below).
//
// As apps/seeding/kmeanspp_math.hpp: squared distances are one fixed sequence of IEEE operations
// (its squared_distance), the sampled quantity w·D² is one float multiply, and the draws use
// integer weights q = floor(w·D² · 2^s) whose sums are exact uint64, so any thread count or
// partition of the points gives the same draws. The scale 2^s is fixed from the largest w before
// the first round and from the largest w·D² after it (D² only decreases afterwards).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "apps/seeding/kmeanspp_math.hpp"

namespace mk::stream {

using seeding::Draws;
using seeding::Quantizer;

// floor(w · d2 · 2^s): the product is one float rounding on both paths.
MK_SEEDING_HD inline float weighted_value(float w, float d2) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(w, d2);
#else
  return w * d2;
#endif
}

// The scale for `m` values whose largest is `largest` (finite, >= 0): every weight below
// 2^(63 − ceil(log2 m)), so m of them sum below 2^63 (kmeanspp_math.hpp's make_quantizer, in a
// form the device can run too).
MK_SEEDING_HD inline Quantizer quantizer_for(float largest, int64_t m) {
  Quantizer q;
  if (!(largest > 0.0f)) return q;
  int exponent = 0;
  (void)frexpf(largest, &exponent);
  int log2_m = 0;
  while (log2_m < 63 && (int64_t(1) << log2_m) < m) ++log2_m;
  const int s = 63 - log2_m - exponent;
  const int s_hi = s / 2;
  q.scale_hi = ldexpf(1.0f, s_hi);
  q.scale_lo = ldexpf(1.0f, s - s_hi);
  return q;
}

// The draws of one stage: chunk c's k-means# (c >= 0), or a reduce-phase k-means++ (c < 0).
inline Draws stage_draws(uint64_t seed, int64_t chunk) {
  const Draws base = seeding::make_draws(seed);
  return Draws{seeding::mix64(base.key + uint64_t(chunk + 1) * 0xd1b54a32d192ed03ULL)};
}

// The stage number of reduce-phase restart r (chunks are 0, 1, ...): -1, -2, ...
inline int64_t reduce_stage(int restart) { return -1 - int64_t(restart); }

// Draw b of round r uses counter index r·per_round + b.
MK_SEEDING_HD inline uint64_t round_draw_index(int round, int per_round, int draw) {
  return uint64_t(round) * uint64_t(per_round) + uint64_t(draw);
}

// The reduce phase's weighted k-means++ is greedy, as scikit-learn's (and fit's): from the
// second centre on, 2 + ⌊ln k⌋ candidates are drawn and the one that lowers Σ w·D² most is kept.
// Plain k-means++ there left 1.3-1.44x full Lloyd's inertia on 60000 blobs of 6 dimensions,
// K = 12 (tests/test_stream.cpp's case), against 1.00 greedy.
inline int greedy_candidates(int k) { return 2 + int(std::floor(std::log(double(std::max(k, 1))))); }

// ⌈3 ln k⌉ points a round (seed 001's 3 log k), at least 1.
inline int draws_per_round(int k) { return k <= 1 ? 1 : std::max(1, int(std::ceil(3.0 * std::log(double(k))))); }

}  // namespace mk::stream
