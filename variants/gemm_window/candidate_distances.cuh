#pragma once
// The settle kernel's (deferred_arbitration.cu) shares of Σ(x − c)² for C candidates of one
// point, lane `part` of L: float4 pieces part, part + L, ... when n % 4 == 0, else single
// dimensions, in two chains (two dims of a piece each) or one; x's pieces are loaded once for
// all C. In T = double they are the exact distances (exact differences and squares, one
// rounding an addition, each sum in the order of exact_distance.cuh's partial_distance, so the
// same bits); in T = float the FP32 screen's (fp32_screen.hpp, whose bound counts these chains).
#include <cuda_runtime.h>

namespace mk::gemm_window {

__device__ __forceinline__ float mul_add(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double mul_add(double a, double b, double c) { return fma(a, b, c); }

template <typename T, int C>
__device__ __forceinline__ void candidate_distances(const float* __restrict__ x, const float* const (&c)[C], int n,
                                                    int part, int lanes, T (&out)[C]) {
  T s0[C], s1[C];
#pragma unroll
  for (int j = 0; j < C; ++j) s0[j] = s1[j] = T(0);
  if ((n & 3) == 0) {
    const int pieces = n >> 2;
    for (int i = part; i < pieces; i += lanes) {
      const float4 xv = __ldg(reinterpret_cast<const float4*>(x) + i);
#pragma unroll
      for (int j = 0; j < C; ++j) {
        const float4 cv = __ldg(reinterpret_cast<const float4*>(c[j]) + i);
        const T e0 = T(xv.x) - T(cv.x), e1 = T(xv.y) - T(cv.y), e2 = T(xv.z) - T(cv.z), e3 = T(xv.w) - T(cv.w);
        s0[j] = mul_add(e0, e0, s0[j]);
        s1[j] = mul_add(e1, e1, s1[j]);
        s0[j] = mul_add(e2, e2, s0[j]);
        s1[j] = mul_add(e3, e3, s1[j]);
      }
    }
  } else {
    for (int d = part; d < n; d += lanes) {
      const T xd = T(__ldg(x + d));
#pragma unroll
      for (int j = 0; j < C; ++j) {
        const T e = xd - T(__ldg(c[j] + d));
        s0[j] = mul_add(e, e, s0[j]);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < C; ++j) out[j] = s0[j] + s1[j];
}

}  // namespace mk::gemm_window
