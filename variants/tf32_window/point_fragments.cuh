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
// centred[r][b]: lane (g, t)'s four dims 16(s0 + b) + 4t .. +3 of row r (tile r/2, row g,
// +8 for odd r), 0 past the data. Registers 0/1 of step s take k = 2t, 2t+1, registers 2/3
// take 2t+8, 2t+9. A batch of B steps starting at s0 is packed at a time (wide rows load in
// two batches, so their FP32 values never all sit in registers beside the fragments), and
// each row's squared norm accumulates in sq and its squared FP16 rounding ‖x_h − x̃‖² (for
// the window) in res.
template <int H, int B>  // m16n8k16 steps of 16 dims; steps in this batch
__device__ __forceinline__ void pack_point_batch(int s0, const float4 (&centred)[4][B], uint32_t (&frag)[2][H][4],
                                                 float (&sq)[4], float (&res)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int b = 0; b < B; ++b) {
      const float4 v = centred[r][b];
      sq[r] = fmaf(v.x, v.x, sq[r]), sq[r] = fmaf(v.y, v.y, sq[r]), sq[r] = fmaf(v.z, v.z, sq[r]),
      sq[r] = fmaf(v.w, v.w, sq[r]);
      const uint32_t low = pack_half2(v.x, v.y), high = pack_half2(v.z, v.w);
      frag[r >> 1][s0 + b][r & 1] = low;
      frag[r >> 1][s0 + b][(r & 1) + 2] = high;
      res[r] += half2_residual2(v.x, v.y, low) + half2_residual2(v.z, v.w, high);
    }
  }
}

// Each row's ‖(x − μ)·scale‖² and ‖x_h − x̃‖² over the quad's lanes, and whether the row is
// in the data.
__device__ __forceinline__ void finish_point_rows(const WindowArgs& a, int64_t base, int g, const float (&sq)[4],
                                                  float (&xn2)[4], float (&res)[4], bool (&valid)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    valid[r] = base + row_in_step(r, g) < a.m;
    float total = sq[r];
    total += __shfl_xor_sync(0xffffffffu, total, 1);
    total += __shfl_xor_sync(0xffffffffu, total, 2);
    xn2[r] = total;
    res[r] += __shfl_xor_sync(0xffffffffu, res[r], 1);
    res[r] += __shfl_xor_sync(0xffffffffu, res[r], 2);
  }
}
#endif

}  // namespace mk::tf32_window
