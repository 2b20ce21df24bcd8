#pragma once
// kmeanspp_math.hpp's squared distance, a chunk of dimensions at a time, for the seeding kernels
// (k-means++ and k-means||): per dimension in order, a float subtraction and a fused multiply-add,
// so every kernel computes the CPU paths' bits.
#include <cuda_runtime.h>

namespace mk::seeding::gpu {

// acc += ‖x − c‖² over four dimensions, in order (kmeanspp_math.hpp's squared_distance).
__device__ __forceinline__ float add_squares(float acc, const float4& x, const float4& c) {
  float diff = __fsub_rn(x.x, c.x);
  acc = __fmaf_rn(diff, diff, acc);
  diff = __fsub_rn(x.y, c.y);
  acc = __fmaf_rn(diff, diff, acc);
  diff = __fsub_rn(x.z, c.z);
  acc = __fmaf_rn(diff, diff, acc);
  diff = __fsub_rn(x.w, c.w);
  return __fmaf_rn(diff, diff, acc);
}

__device__ __forceinline__ float add_square(float acc, float x, float c) {
  const float diff = __fsub_rn(x, c);
  return __fmaf_rn(diff, diff, acc);
}

}  // namespace mk::seeding::gpu
