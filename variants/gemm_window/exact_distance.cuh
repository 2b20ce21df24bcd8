#pragma once
// An exact squared distance Σ(x − c)² in FP64 from FP32 inputs (exact differences and
// squares, one rounding per addition), split over L lanes, and its packing above a column
// index: rounded once to FP32, so the smallest wins and equal distances fall to the lower
// index, as in the FP64 reference. Used in the block (arbitration.cuh) and by the deferred
// kernel (deferred_arbitration.cu, whose C candidates a pass are candidate_distances.cuh's).
#include <cuda_runtime.h>

namespace mk::gemm_window {

__device__ __forceinline__ unsigned long long pack_exact(double distance2, unsigned column) {
  return (static_cast<unsigned long long>(__float_as_uint(__double2float_rn(distance2))) << 32) | column;
}

// Lane `part` of L lanes: its share of Σ(x − c)² (float4 pieces part, part + L, ... when n % 4
// == 0, else single dimensions). Two independent FP64 sums keep the FMA chain half as long.
__device__ __forceinline__ double partial_distance(const float* __restrict__ x, const float* __restrict__ c, int n,
                                                   int part, int lanes) {
  double s0 = 0.0, s1 = 0.0;
  if ((n & 3) == 0) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const float4* c4 = reinterpret_cast<const float4*>(c);
    const int pieces = n >> 2;
#pragma unroll 2
    for (int i = part; i < pieces; i += lanes) {
      const float4 xv = __ldg(x4 + i), cv = __ldg(c4 + i);
      const double e0 = double(xv.x) - cv.x, e1 = double(xv.y) - cv.y, e2 = double(xv.z) - cv.z,
                   e3 = double(xv.w) - cv.w;
      s0 = fma(e0, e0, s0);
      s1 = fma(e1, e1, s1);
      s0 = fma(e2, e2, s0);
      s1 = fma(e3, e3, s1);
    }
  } else {
    for (int d = part; d < n; d += lanes) {
      const double e = double(__ldg(x + d)) - __ldg(c + d);
      s0 = fma(e, e, s0);
    }
  }
  return s0 + s1;
}

}  // namespace mk::gemm_window
