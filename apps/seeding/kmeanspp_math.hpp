#pragma once
// The arithmetic both k-means++ paths share, compiled for the host (the OpenMP path) and the
// device (the GPU kernels) from this one text, so that the two paths pick the same centres
// for the same seed.
//
// Why the answer is exact and the same everywhere:
//   * A squared distance is one fixed sequence of IEEE operations: per dimension in order, a
//     float subtraction and a fused multiply-add (fmaf rounds once on every IEEE machine; a
//     separate multiply and add could be fused by one compiler and not by another).
//   * D² sampling and the greedy choice use integer weights q = floor(D² · 2^s), where 2^s is
//     fixed once from the largest D² after the first centre (D² only decreases afterwards).
//     Every sum of weights (per tile, per candidate, prefix sums) is then a uint64 sum, which
//     is associative: any thread count, schedule, tile size or reduction tree gives the same
//     bits. 2^s is chosen so that M weights sum below 2^63; the weights resolve D² to
//     2^-(63 - ceil(log2 M)) of the largest D² (2.3e-13 at M = 2M points), far below the
//     float32 rounding of D² itself for every point that has a real chance of being drawn.
//   * Draws are the project's counter RNG (datasets/counter_rng.hpp, stream Seeding): the
//     draw for a step and candidate is a pure function of (seed, index).
#include <cmath>
#include <cstdint>
#include <stdexcept>

#if defined(__CUDACC__)
#define MK_SEEDING_HD __host__ __device__
#else
#define MK_SEEDING_HD
#endif

namespace mk::seeding {

// ‖x − c‖² over n dimensions, in dimension order, one fmaf per dimension.
MK_SEEDING_HD inline float squared_distance(const float* x, const float* c, int n) {
  float acc = 0.0f;
  for (int d = 0; d < n; ++d) {
#if defined(__CUDA_ARCH__)
    const float diff = __fsub_rn(x[d], c[d]);
    acc = __fmaf_rn(diff, diff, acc);
#else
    const float diff = x[d] - c[d];
    acc = std::fma(diff, diff, acc);  // the float overload: one rounding
#endif
  }
  return acc;
}

// D² → integer weight floor(D² · 2^s). The factor is split in two normal floats (2^s ranges
// over about ±211 for float data); both products are exact powers-of-two scalings, so the
// result is floor(D² · 2^s) exactly.
struct Quantizer {
  float scale_hi = 0.0f;
  float scale_lo = 0.0f;
  MK_SEEDING_HD uint64_t operator()(float d2) const {
#if defined(__CUDA_ARCH__)
    return __float2ull_rz(__fmul_rn(__fmul_rn(d2, scale_hi), scale_lo));
#else
    return static_cast<uint64_t>((d2 * scale_hi) * scale_lo);
#endif
  }
};

// The scale for M points whose largest D² (after the first centre) is max_d2 (finite, >= 0).
// Every weight is below 2^(63 - ceil(log2 M)), so M of them sum below 2^63.
inline Quantizer make_quantizer(float max_d2, int64_t m) {
  Quantizer q;
  if (!(max_d2 > 0.0f)) return q;  // every D² is 0: every weight is 0 (uniform fallback)
  int exponent = 0;
  (void)std::frexp(max_d2, &exponent);  // max_d2 < 2^exponent
  int log2_m = 0;
  while (log2_m < 63 && (int64_t(1) << log2_m) < m) ++log2_m;
  const int s = 63 - log2_m - exponent;
  const int s_hi = s / 2;
  q.scale_hi = std::ldexp(1.0f, s_hi);
  q.scale_lo = std::ldexp(1.0f, s - s_hi);
  return q;
}

// The counter RNG of datasets/counter_rng.hpp for RandomStream::Seeding, as a function the
// device can call (that header is host-only). A CPU test checks it against CounterRng.
MK_SEEDING_HD inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct Draws {
  uint64_t key = 0;
  MK_SEEDING_HD uint64_t bits(uint64_t index) const { return mix64(key + (index + 1) * 0x9e3779b97f4a7c15ULL); }
  // Uniform integer in [0, bound), as CounterRng::below (multiply-high).
  MK_SEEDING_HD uint64_t below(uint64_t index, uint64_t bound) const {
#if defined(__CUDA_ARCH__)
    return __umul64hi(bits(index), bound);
#else
    return static_cast<uint64_t>((static_cast<unsigned __int128>(bits(index)) * bound) >> 64);
#endif
  }
};

// The sampled quantity w·D², one float multiply (weights: per point, or null for all 1); with
// weight 1 it is D² exactly.
MK_SEEDING_HD inline float weighted(const float* weights, int64_t i, float d2) {
#if defined(__CUDA_ARCH__)
  return weights ? __fmul_rn(weights[i], d2) : d2;
#else
  return weights ? weights[i] * d2 : d2;
#endif
}

// Stream number 9 is RandomStream::Seeding (datasets/counter_rng.hpp); seeding.cpp asserts it.
constexpr uint64_t kSeedingStream = 9;
inline Draws make_draws(uint64_t seed) {
  return Draws{mix64(seed ^ mix64(kSeedingStream * 0x9e3779b97f4a7c15ULL))};
}

// Which draw each choice uses: index 0 is the first centre (uniform over the points); step
// j >= 1 draws its candidate b with index 1 + (j-1)·L + b.
MK_SEEDING_HD inline uint64_t draw_index(int step, int candidates, int candidate) {
  return 1 + uint64_t(step - 1) * uint64_t(candidates) + uint64_t(candidate);
}

// The first centre of a weighted run (host): drawn with probability w_i / Σ w (scikit-learn's
// kmeans_plusplus with sample_weight), from integer weights as every other draw; uniform when
// every weight quantises to 0.
inline int64_t first_weighted_centre(const float* weights, int64_t m, const Draws& draws) {
  float largest = 0.0f;
  for (int64_t i = 0; i < m; ++i) largest = std::fmax(largest, weights[i]);
  const Quantizer quantize = make_quantizer(largest, m);
  uint64_t total = 0;
  for (int64_t i = 0; i < m; ++i) total += quantize(weights[i]);
  if (total == 0) return int64_t(draws.below(0, uint64_t(m)));
  const uint64_t target = draws.below(0, total);
  uint64_t before = 0;
  for (int64_t i = 0; i < m; ++i) {
    before += quantize(weights[i]);
    if (before > target) return i;
  }
  throw std::logic_error("k-means++: the first weighted draw fell outside the weights");
}

}  // namespace mk::seeding
