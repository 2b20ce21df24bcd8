// tf32-window's centroid image, rebuilt every iteration from the state's exact centroids:
// translated by μ, scaled by a power of two so FP16 holds every value, rounded to FP16 and
// laid out in MMA-fragment order (layout.hpp's f16_image_offset), with the norms the MMAs
// start from.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "variants/common/fp16_key_error.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/tf32_window/layout.hpp"
#include "variants/tf32_window/window_args.hpp"

namespace mk::tf32_window {
namespace {

// Largest |value| after scaling: below 2^14, with the most of FP16's range above subnormals.
__device__ __forceinline__ float f16_scale_for(float largest_norm2) {
  if (!(largest_norm2 > 0.f)) return 1.f;
  int exponent = 0;
  frexpf(largest_norm2, &exponent);  // largest_norm2 < 2^exponent, so every |value| < 2^ceil(exponent/2)
  return ldexpf(1.f, 14 - ((exponent + 1) >> 1));
}

// One block: the scale needs every centroid's ‖c − μ‖² before any value is rounded.
// scalars = {scale, largest scaled ‖c‖², ρ}: ρ is the largest FP16 residual ratio
// ‖c_h/(−2) − c̃‖ / max(‖c̃‖, τ) over the real centroids (fp16_key_error.hpp).
__global__ void build_f16_window_image(WindowArgs a, float largest_point_norm2, __half* image, float* norms,
                                       float* scalars) {
  __shared__ unsigned largest_bits, ratio_bits;  // non-negative floats order like their bits
  if (threadIdx.x == 0) largest_bits = __float_as_uint(largest_point_norm2);
  __syncthreads();
  for (int j = threadIdx.x; j < a.k; j += blockDim.x) {
    float sq = 0.f;
    for (int d = 0; d < a.n; ++d) {
      const float centred = a.centroids[int64_t(j) * a.n + d] - a.center[d];
      sq = fmaf(centred, centred, sq);
    }
    atomicMax(&largest_bits, __float_as_uint(sq * 1.0001f));  // FP32 sum: widen a little
  }
  __syncthreads();
  const float scale = f16_scale_for(__uint_as_float(largest_bits));
  __syncthreads();
  if (threadIdx.x == 0) largest_bits = ratio_bits = 0u;
  __syncthreads();
  const int npad = 16 * a.f16_steps;
  for (int j = threadIdx.x; j < a.kpad; j += blockDim.x) {
    double norm = 0, residual2 = 0;
    for (int d = 0; d < npad; ++d) {
      float value = 0.f;
      if (j < a.k && d < a.n) {
        value = (a.centroids[int64_t(j) * a.n + d] - a.center[d]) * scale;
        norm += double(value) * value;
      }
      const __half h = __float2half_rn(-2.f * value);
      image[f16_image_offset(j, d, a.f16_steps)] = h;
      const float residual = __half2float(h) * -0.5f - value;  // exact: both sides within 2x
      residual2 += double(residual) * residual;
    }
    // Padding sorts above every real key (|keys| < 3·2^28 in scaled units) and is never
    // inside a window.
    norms[j] = j < a.k ? float(norm) : 1e30f;
    if (j < a.k) {
      atomicMax(&largest_bits, __float_as_uint(float(norm)));
      const double ratio = sqrt(residual2) / fmax(sqrt(norm), double(fp16_keys::residual_floor(npad)));
      atomicMax(&ratio_bits, __float_as_uint(__double2float_ru(ratio * (1.0 + 0x1p-40))));
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    scalars[0] = scale;
    scalars[1] = __uint_as_float(largest_bits);
    scalars[2] = __uint_as_float(ratio_bits);
  }
}

}  // namespace

void launch_build_f16_window_image(const WindowArgs& args, float largest_point_norm2, void* image, float* norms,
                                   float* scalars, cudaStream_t stream) {
  build_f16_window_image<<<1, 1024, 0, stream>>>(args, largest_point_norm2, static_cast<__half*>(image), norms,
                                                 scalars);
  gpu::check_launch("build_f16_window_image");
}

}  // namespace mk::tf32_window
