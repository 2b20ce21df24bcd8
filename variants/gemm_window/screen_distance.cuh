#pragma once
// The FP32 screen's sums (fp32_screen.hpp holds the rule that reads them): a lane's share of
// Σ(x − c)² in FP32 for C candidates, in the settle kernel (deferred_arbitration.cu).
#include <cuda_runtime.h>

namespace mk::gemm_window {

// The FP32 screen's shares (fp32_screen.hpp) of C candidates: the same pieces as
// partial_distances, summed in FP32 (FADD + FFMA a dimension instead of two conversions, a DADD
// and a DFMA), in the chains screen_roundings counts: two of two dims a float4 piece, or one.
template <int C>
__device__ __forceinline__ void screen_partial_distances(const float* __restrict__ x, const float* const (&c)[C],
                                                         int n, int part, int lanes, float (&out)[C]) {
  float s0[C], s1[C];
#pragma unroll
  for (int j = 0; j < C; ++j) s0[j] = s1[j] = 0.f;
  if ((n & 3) == 0) {
    const int pieces = n >> 2;
    for (int i = part; i < pieces; i += lanes) {
      const float4 xv = __ldg(reinterpret_cast<const float4*>(x) + i);
#pragma unroll
      for (int j = 0; j < C; ++j) {
        const float4 cv = __ldg(reinterpret_cast<const float4*>(c[j]) + i);
        const float e0 = xv.x - cv.x, e1 = xv.y - cv.y, e2 = xv.z - cv.z, e3 = xv.w - cv.w;
        s0[j] = fmaf(e0, e0, s0[j]);
        s1[j] = fmaf(e1, e1, s1[j]);
        s0[j] = fmaf(e2, e2, s0[j]);
        s1[j] = fmaf(e3, e3, s1[j]);
      }
    }
  } else {
    for (int d = part; d < n; d += lanes) {
      const float xd = __ldg(x + d);
#pragma unroll
      for (int j = 0; j < C; ++j) {
        const float e = xd - __ldg(c[j] + d);
        s0[j] = fmaf(e, e, s0[j]);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < C; ++j) out[j] = s0[j] + s1[j];
}

}  // namespace mk::gemm_window
