// One thread = one problem: its centroids in registers, and the nearest of them for a point.
#pragma once
#include "config.cuh"

// The distance key of centroid j is d'_j = ‖c_j‖² − 2·x·c_j (‖x − c_j‖² − ‖x‖²: the same
// argmin), S_COLS FMAs from ‖c_j‖² with −2·c_j as operands. Its low INDEX_BITS mantissa bits
// are replaced by j, so one FMNMX per centroid keeps the value and its index together (the
// registers-multik trick). The key loses 2^(INDEX_BITS−23) of |d'| to the index: points that
// near a tie may go to either centroid (docs/explore.md, Precision).
//
// The mask and the indices are held in registers that the compiler cannot fold (`opaque`, a
// zero it cannot prove), so each key is one LOP3 ((d & mask) | j, three register operands):
// with them as immediates ptxas split it into an AND and an OR, and the ALU pipe, at half the
// FMA pipe's rate, was the busiest (ncu on an H200, docs/explore.md "Where the time goes").
struct ProblemCentroids {
  float minus_two_c[K_CLUSTERS][S_COLS];
  float norm[K_CLUSTERS];
  unsigned keep_mask;
  unsigned index[K_CLUSTERS];
};

__device__ __forceinline__ unsigned lop3_and_or(unsigned a, unsigned mask, unsigned index) {
  unsigned out;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(out) : "r"(a), "r"(mask), "r"(index));  // (a & mask) | index
  return out;
}

// `opaque` must be zero at run time (a value the compiler cannot know, e.g. from memory).
__device__ __forceinline__ void load_centroids(ProblemCentroids& out, const float* __restrict__ centroids,
                                               unsigned opaque) {
  out.keep_mask = ~INDEX_MASK ^ opaque;
#pragma unroll
  for (int j = 0; j < K_CLUSTERS; ++j) out.index[j] = unsigned(j) ^ opaque;
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
    const float key = __uint_as_float(lop3_and_or(__float_as_uint(distance), c.keep_mask, c.index[j]));
    best = j == 0 ? key : fminf(best, key);
  }
  return best;
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
