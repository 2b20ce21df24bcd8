// One thread = one problem: its centroids in registers, and the nearest of them for a point.
#pragma once
#include "config.cuh"

// The distance key of centroid j is d'_j = ‖c_j‖² − 2·x·c_j (‖x − c_j‖² − ‖x‖²: the same
// argmin), S_COLS FMAs from ‖c_j‖² with −2·c_j as operands. Its low INDEX_BITS mantissa bits
// are replaced by j, so one FMNMX per centroid keeps the value and its index together (the
// registers-multik trick). The key loses 2^(INDEX_BITS−23) of |d'| to the index: points that
// near a tie may go to either centroid (docs/explore.md, Precision).
struct ProblemCentroids {
  float minus_two_c[K_CLUSTERS][S_COLS];
  float norm[K_CLUSTERS];
};

__device__ __forceinline__ void load_centroids(ProblemCentroids& out, const float* __restrict__ centroids) {
#pragma unroll
  for (int j = 0; j < K_CLUSTERS; ++j) {
    float norm = 0.f;
#pragma unroll
    for (int d = 0; d < S_COLS; ++d) {
      const float c = centroids[j * S_COLS + d];
      out.minus_two_c[j][d] = -2.f * c;
      norm = fmaf(c, c, norm);
    }
    out.norm[j] = norm;
  }
}

// The smallest key; its low INDEX_BITS bits are the centroid's index (ties to the larger
// index among keys equal after truncation, either way a distance within the key's error).
__device__ __forceinline__ float nearest_key(const ProblemCentroids& c, const float (&x)[S_COLS]) {
  float best = 0.f;
#pragma unroll
  for (int j = 0; j < K_CLUSTERS; ++j) {
    float distance = c.norm[j];
#pragma unroll
    for (int d = 0; d < S_COLS; ++d) distance = fmaf(x[d], c.minus_two_c[j][d], distance);
    const float key = __uint_as_float((__float_as_uint(distance) & ~INDEX_MASK) | unsigned(j));
    best = j == 0 ? key : fminf(best, key);
  }
  return best;
}

__device__ __forceinline__ int key_index(float key) { return int(__float_as_uint(key) & INDEX_MASK); }

// Component p (0..3) of a float4, p a compile-time constant after unrolling.
__device__ __forceinline__ float component(const float4& v, int p) {
  return p == 0 ? v.x : p == 1 ? v.y : p == 2 ? v.z : v.w;
}

// Copies `count` float4s from global to shared memory, the whole block together.
template <int THREADS>
__device__ __forceinline__ void load_block(float4* __restrict__ to, const float4* __restrict__ from, int count) {
  for (int i = threadIdx.x; i < count; i += THREADS) to[i] = from[i];
}
