#pragma once
// The per-step centroid table and the exact nearest-centroid search of gpu-u8-norm's full pass
// over every pixel (apps/quantize/u8_norm_run.hpp has the exactness argument). The bounded
// steps' group search (u8_norm_bounds.cuh) scores the same way, over a table in group order.
#include <cfloat>
#include <cstdint>

#include "apps/quantize/u8_norm_groups.hpp"

namespace mk::u8norm {

constexpr int kBlock = 256;
constexpr int kPixelsPerThread = 4;  // a table entry read from shared memory serves 4 pixels

// Fills table[j] = (−2c_j, fl(‖c_j‖²)) for j < k, the whole block together, and returns the
// re-decided window 2⁻²⁰·S (S bounds every intermediate of every score, rounded up
// generously); `scratch` is kBlock / 32 floats of shared memory. Ends with __syncthreads().
__device__ inline float build_table(float4* table, float* scratch, const float* __restrict__ centroids, int k) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float bound = 0.0f;
  for (int j = threadIdx.x; j < k; j += kBlock) {
    const float c0 = centroids[3 * j], c1 = centroids[3 * j + 1], c2 = centroids[3 * j + 2];
    const float w = __fmaf_rn(c2, c2, __fmaf_rn(c1, c1, __fmul_rn(c0, c0)));
    table[j] = make_float4(-2.0f * c0, -2.0f * c1, -2.0f * c2, w);
    bound = fmaxf(bound, 1.01f * (w + 510.0f * (fabsf(c0) + fabsf(c1) + fabsf(c2))));
  }
  for (int offset = 16; offset > 0; offset >>= 1) bound = fmaxf(bound, __shfl_xor_sync(0xffffffffu, bound, offset));
  if (lane == 0) scratch[warp] = bound;
  __syncthreads();
  float window = 0.0f;
  for (int w = 0; w < kBlock / 32; ++w) window = fmaxf(window, scratch[w]);
  return window * 0x1p-20f;  // 16 · 2⁻²⁴ · S
}

// Lowest index at an equal FP64 distance; x − c is exact in FP64 for integer x and float c.
__device__ inline int exact_nearest(const float4* table, int k, double x0, double x1, double x2) {
  double best = DBL_MAX;
  int index = 0;
  for (int j = 0; j < k; ++j) {
    const float4 t = table[j];
    const double d0 = x0 - double(-0.5f * t.x), d1 = x1 - double(-0.5f * t.y), d2 = x2 - double(-0.5f * t.z);
    const double d = d0 * d0 + d1 * d1 + d2 * d2;
    if (d < best) best = d, index = j;
  }
  return index;
}

// The FP64 squared distance of x to table entry j's centroid (−0.5 · −2c is c exactly).
__device__ inline double exact_distance(const float4* table, int j, const float (&x)[3]) {
  const float4 t = table[j];
  const double d0 = double(x[0]) - double(-0.5f * t.x), d1 = double(x[1]) - double(-0.5f * t.y),
               d2 = double(x[2]) - double(-0.5f * t.z);
  return d0 * d0 + d1 * d1 + d2 * d2;
}

// One pixel's search: its exact nearest centroid and the float scores behind it.
struct Nearest {
  int index;     // the exact nearest (lowest index at an equal FP64 distance)
  float best;    // the smallest float score over all K
  float second;  // the second smallest (FLT_MAX with K = 1)
  int float_index;
};

// The nearest centroid of each of kPixelsPerThread pixels (x[p], integers 0..255 as floats).
__device__ inline void search(const float4* table, int k, float window, const float (&x)[kPixelsPerThread][3],
                              Nearest (&out)[kPixelsPerThread]) {
#pragma unroll
  for (int p = 0; p < kPixelsPerThread; ++p) out[p] = {0, FLT_MAX, FLT_MAX, 0};
  // Unrolled by 4 so the loop's counter, compare and branch are paid once per 4 entries (from
  // the instruction count; neither this nor kPixelsPerThread has been timed yet).
#pragma unroll 4
  for (int j = 0; j < k; ++j) {
    const float4 t = table[j];
#pragma unroll
    for (int p = 0; p < kPixelsPerThread; ++p) {
      const float s = __fmaf_rn(x[p][2], t.z, __fmaf_rn(x[p][1], t.y, __fmaf_rn(x[p][0], t.x, t.w)));
      const bool better = s < out[p].best;
      out[p].second = fminf(out[p].second, fmaxf(out[p].best, s));
      out[p].float_index = better ? j : out[p].float_index;
      out[p].best = fminf(out[p].best, s);
    }
  }
#pragma unroll
  for (int p = 0; p < kPixelsPerThread; ++p) {
    out[p].index = out[p].float_index;
    if (!(out[p].second - out[p].best > window)) out[p].index = exact_nearest(table, k, x[p][0], x[p][1], x[p][2]);
  }
}

}  // namespace mk::u8norm
