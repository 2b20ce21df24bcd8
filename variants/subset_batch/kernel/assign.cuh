// One thread = one problem: its centroids in registers, and the nearest of them for a point.
#pragma once
#include "config.cuh"

// Distances are measured from centroid 0: the key of centroid j is
//   d'_j = ‖x − c_j‖² − ‖x − c_0‖² = (‖c_j‖² − ‖c_0‖²) − 2·x·(c_j − c_0),
// the same argmin, and d'_0 = 0 for every point, so a point costs S_COLS FMAs and one index
// insertion for each of the other K−1 centroids only (21 FFMAs and 7 LOP3s for s=3, k=8, where
// ‖c_j‖² − 2x·c_j for every j took 24 and 8). Each key's low INDEX_BITS mantissa bits are
// replaced by j, so one FMNMX per centroid keeps the value and its index together (the
// registers-multik trick); the key loses 2^(INDEX_BITS−23) of |d'_j| to the index, so points
// that near a tie may go to either centroid (docs/explore.md, Precision).
//
// The index goes into the LOP3 as an immediate with the mask as the selector register
// (mask ? d : j): one LOP3 per key with a single register read besides the reused mask. With
// the indices in registers the kernel held 124 registers and the 5 steps of seed 000's run
// took 0.555 s; with immediates 116 registers and 0.555 s alone, 0.513 s with the minimum
// taken as a tree (reports/results/nvidia-h200/ab/explore-kernel.txt, part 4).
struct ProblemCentroids {
  float minus_two_delta[K_CLUSTERS > 1 ? K_CLUSTERS - 1 : 1][S_COLS];  // −2(c_j − c_0), j ≥ 1
  float offset[K_CLUSTERS > 1 ? K_CLUSTERS - 1 : 1];                   // ‖c_j‖² − ‖c_0‖², j ≥ 1
  unsigned keep_mask;
};

// `opaque` must be zero at run time (a value the compiler cannot know, e.g. from memory): the
// mask then stays in a register, and each key is one LOP3 with the index as its immediate.
__device__ __forceinline__ void load_centroids(ProblemCentroids& out, const float* __restrict__ centroids,
                                               unsigned opaque) {
  out.keep_mask = ~INDEX_MASK ^ opaque;
#pragma unroll
  for (int j = 1; j < K_CLUSTERS; ++j) {
    float offset = 0.f;
#pragma unroll
    for (int d = 0; d < S_COLS; ++d) {
      const float a = centroids[j * S_COLS + d], b = centroids[d];
      out.minus_two_delta[j - 1][d] = -2.f * (a - b);
      offset = fmaf(a - b, a + b, offset);  // ‖c_j‖² − ‖c_0‖² without squaring either
    }
    out.offset[j - 1] = offset;
  }
}

// (mask ? d : J) bit by bit: d's high bits and J in the low INDEX_BITS.
template <int J>
__device__ __forceinline__ float key_with_index(float distance, unsigned keep_mask) {
  unsigned out;
  asm("lop3.b32 %0, %1, %2, %3, 0xE4;" : "=r"(out) : "r"(__float_as_uint(distance)), "n"(J), "r"(keep_mask));
  return __uint_as_float(out);
}

template <int J>
__device__ __forceinline__ void keys_from(const ProblemCentroids& c, const float (&x)[S_COLS], float (&key)[K_CLUSTERS]) {
  if constexpr (J < K_CLUSTERS) {
    float distance = c.offset[J - 1];
#pragma unroll
    for (int d = 0; d < S_COLS; ++d) distance = fmaf(x[d], c.minus_two_delta[J - 1][d], distance);
    key[J] = key_with_index<J>(distance, c.keep_mask);
    keys_from<J + 1>(c, x, key);
  }
}

// The smallest key; its low INDEX_BITS bits are the centroid's index (keys equal after
// truncation cannot occur: the index bits differ; a tie within the key's error goes either way).
// The minimum is a tree (depth 3 for K=8): as a chain of K−1 dependent FMNMXs the 5 steps took
// 0.555 s against 0.513 s (explore-kernel.txt, part 4).
__device__ __forceinline__ float nearest_key(const ProblemCentroids& c, const float (&x)[S_COLS]) {
  float key[K_CLUSTERS];
  key[0] = 0.f;  // centroid 0, index 0
  keys_from<1>(c, x, key);
#pragma unroll
  for (int width = 1; width < K_CLUSTERS; width *= 2)
#pragma unroll
    for (int j = 0; j + width < K_CLUSTERS; j += 2 * width) key[j] = fminf(key[j], key[j + width]);
  return key[0];
}

// The centroid index a key carries.
__device__ __forceinline__ unsigned key_index(float key, const ProblemCentroids& c) {
  return __float_as_uint(key) & ~c.keep_mask;
}

// Component p (0..3) of a float4, p a compile-time constant after unrolling.
__device__ __forceinline__ float component(const float4& v, int p) {
  return p == 0 ? v.x : p == 1 ? v.y : p == 2 ? v.z : v.w;
}

// Copies `count` float4s from global to shared memory, the whole block together.
template <int THREADS>
__device__ __forceinline__ void load_block(float4* __restrict__ to, const float4* __restrict__ from, int count) {
  for (int i = threadIdx.x; i < count; i += THREADS) to[i] = from[i];
}
