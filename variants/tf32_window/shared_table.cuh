#pragma once
// The centroid table in shared memory, loaded once per block: the FP16 image in fragment
// order (a lane reads its B fragments of an n-tile with LDS.128s, reused by both 16-row
// tiles of a warp; conflict-free at 32 and 96 dims, while at 64 and 128 the lanes' 32- and
// 64-byte strides conflict 2- and 4-way: docs/tf32-window.md), the norms as the MMA's C
// quads, the count weights of the second sweep, μ, and the block's counts. The kernel carves
// these in f16_smem_bytes's order (layout.hpp); the per-warp scratch follows.
#include <cuda_runtime.h>

#include <cstdint>

#include "variants/tf32_window/layout.hpp"
#include "variants/tf32_window/window_args.hpp"

namespace mk::tf32_window {

// Device helpers exist only where the kernel body does (sm_80+), and for the host pass.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
// Every thread of the block takes part; the caller synchronises before the sweeps.
//   image_s:      kpad · H · 8 words, the image as the host built it
//   norm_quads_s: kpad/2 C quads {‖c_2t‖², ‖c_2t+1‖², same}
//   weights_s:    per n-tile {W + 2nt, W + 2nt + 1, (2nt)², (2nt + 1)²}
//   center_s:     μ, zero past N
//   counts_s:     per centroid, zeroed
template <int H>  // m16n8k16 steps of 16 dims
__device__ __forceinline__ void load_shared_table(const WindowArgs& a, uint32_t* image_s, float4* norm_quads_s,
                                                  float4* weights_s, float4* center_s, unsigned* counts_s,
                                                  float weight) {
  const int ntiles = a.kpad / 8;
  const int64_t image4 = int64_t(a.kpad) * H * 2;
  const uint4* src = reinterpret_cast<const uint4*>(a.image);
  for (int64_t i = threadIdx.x; i < image4; i += blockDim.x) reinterpret_cast<uint4*>(image_s)[i] = src[i];
  for (int i = threadIdx.x; i < a.kpad / 2; i += blockDim.x) {
    const float2 pair = reinterpret_cast<const float2*>(a.norms)[i];
    norm_quads_s[i] = make_float4(pair.x, pair.y, pair.x, pair.y);
  }
  for (int nt = threadIdx.x; nt < ntiles; nt += blockDim.x) {
    const float i0 = float(2 * nt), i1 = i0 + 1.f;
    weights_s[nt] = make_float4(weight + i0, weight + i1, i0 * i0, i1 * i1);
  }
  for (int i = threadIdx.x; i < a.kpad; i += blockDim.x) counts_s[i] = 0;
  for (int d = threadIdx.x; d < kMaxDims; d += blockDim.x)
    reinterpret_cast<float*>(center_s)[d] = d < a.n ? a.center[d] : 0.f;
}
#endif

}  // namespace mk::tf32_window
