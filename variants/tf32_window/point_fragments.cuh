#pragma once
// A step's points as the A fragments of two m16n8k16 tiles per 16 dimensions, already
// translated by μ and scaled like the centroids, with each row's ‖(x − μ)·scale‖² for the
// window. They stay in registers for both sweeps (no point staging through shared memory).
#include <cuda_runtime.h>

#include <cstdint>

#include "variants/tf32_window/fp16_mma.cuh"
#include "variants/tf32_window/steps.cuh"
#include "variants/tf32_window/window_args.hpp"

namespace mk::tf32_window {

// Device helpers exist only where the kernel body does (sm_80+), and for the host pass.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
// centred[r][s]: lane (g, t)'s four dims 16s + 4t .. +3 of row r (tile r/2, row g, +8 for
// odd r), 0 past the data. Registers 0/1 of step s take k = 2t, 2t+1, registers 2/3 take
// 2t+8, 2t+9.
template <int H>  // m16n8k16 steps of 16 dims
__device__ __forceinline__ void pack_point_fragments(const WindowArgs& a, int64_t base, int g,
                                                     const float4 (&centred)[4][H], uint32_t (&frag)[2][H][4],
                                                     float (&xn2)[4], bool (&valid)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    valid[r] = base + row_in_step(r, g) < a.m;
    float sq = 0.f;
#pragma unroll
    for (int s = 0; s < H; ++s) {
      const float4 v = centred[r][s];
      sq = fmaf(v.x, v.x, sq), sq = fmaf(v.y, v.y, sq), sq = fmaf(v.z, v.z, sq), sq = fmaf(v.w, v.w, sq);
      frag[r >> 1][s][r & 1] = pack_half2(v.x, v.y);
      frag[r >> 1][s][(r & 1) + 2] = pack_half2(v.z, v.w);
    }
    sq += __shfl_xor_sync(0xffffffffu, sq, 1);
    sq += __shfl_xor_sync(0xffffffffu, sq, 2);
    xn2[r] = sq;
  }
}
#endif

}  // namespace mk::tf32_window
