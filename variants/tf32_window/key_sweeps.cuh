#pragma once
// The two sweeps of FP16 MMAs over the centroid table that find each point's in-window keys.
//
// Keeping a lane's three smallest packed keys costs six ALU-pipe instructions per key, and
// the ALU pipe bound a one-pass TF32 sweep (docs/tf32-window.md). These sweeps run the MMAs
// twice instead (FP16 m16n8k16, one MMA per 16 dims, so two passes issue as many MMAs as
// one TF32 pass):
// - pass A keeps each row's plain smallest key: one FMNMX per key;
// - from it and the window, a threshold T per row; pass B recomputes the same keys and,
//   on the FMA pipe, turns each into r = [key < T] with one saturated FFMA, then adds
//   r·(W + i) and r·i² (i the key's index among the lane's columns, W a power of two ≥ 4·that
//   count). floor(S1/W) counts the lane's in-window keys, and one or two of them are decoded
//   exactly from S1 − count·W = Σi and S2 = Σi² (arbitration.cuh). A lane with three or more
//   is scanned.
// FP16 holds TF32's 11-bit significand; the window bounds its rounding as measured
// (fp16_key_error.hpp, subnormals included); inputs are translated by μ and scaled by a power of two so
// every |value| < 2^14 (and −2c < 2^15) stays finite.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "variants/common/fp16_key_error.hpp"
#include "variants/common/near_tie_bound.hpp"
#include "variants/tf32_window/fp16_mma.cuh"
#include "variants/tf32_window/layout.hpp"

namespace mk::tf32_window {

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800

// The n-tile whose operands a sweep loads ahead of nt. Up to four steps, one past the last is
// read and unused, inside the norms, weights and μ that follow the image (layout.hpp asserts
// the room); a 96- or 128-dim image's look-ahead reaches the per-warp scratch at K = 64..96
// (racecheck at N=128 K=100 M=3001 with the norms halved, 8ac2e42, reverted), so those
// kernels load the last n-tile again instead.
template <int H>
__device__ __forceinline__ int ahead_tile(int nt, int ntiles) {
  if constexpr (H > kNarrowSteps) return nt + 1 < ntiles ? nt + 1 : nt;
  return nt + 1;
}

// Pass A: each row's smallest key. Pass A and the FMA-pipe counts load n-tile nt+1's
// operands while nt's multiply (the HMMAs had waited on the LDS issued just before them).
template <int H>
__device__ __forceinline__ void lowest_keys(const uint32_t (&frag)[2][H][4], const uint32_t* lane_image,
                                            const float4* norm_quads_s, int ntiles, int t, float (&lowest)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) lowest[r] = INFINITY;
  NTileOperands<H> tile = load_ntile<H>(lane_image, norm_quads_s, 0, t);
  for (int nt = 0; nt < ntiles; ++nt) {
    const NTileOperands<H> ahead = load_ntile<H>(lane_image, norm_quads_s, ahead_tile<H>(nt, ntiles), t);
#pragma unroll
    for (int tile_m = 0; tile_m < 2; ++tile_m) {
      float d[4];
      f16_tile_keys<H>(d, frag[tile_m], tile.b, tile.cn);
      lowest[2 * tile_m] = fminf(lowest[2 * tile_m], fminf(d[0], d[1]));
      lowest[2 * tile_m + 1] = fminf(lowest[2 * tile_m + 1], fminf(d[2], d[3]));
    }
    tile = ahead;
  }
}

// Each row's threshold T: the quad's smallest key plus the window, as the ramp
// r = sat(T·s − key·s), which with s = 4/ulp(T) is exactly [key < T]: a key within a factor
// of two of T differs from it by at least ulp(T)/2, any other by more than |T|/2.
// T is rounded up and kept ≥ 2^-100 (so s stays finite); raising T only widens the window.
//
// The window (fp16_key_error.hpp) from the row's FP16 residual res = ‖x_h − x̃‖² and the
// table's ρ in key_model; the sweep does not know the winner, so its ‖c_b‖² is bounded by
// the table's largest. Against the worst case of 2^-11 per input it halved the rows with
// several in-window keys (128/100/1M 37 % → 19 %, 64/256/4M 23 % → 11 %) and ran 128/100/1M in
// 0.942 ms against 1.323, 64/256/4M 1.765 against 2.000 (H200, 909355b,
// reports/results/nvidia-h200/ab/tf32-window-measured-window.txt).
__device__ __forceinline__ void window_ramps(const float (&lowest)[4], const float (&xn2)[4], const float (&res)[4],
                                             float largest_cnorm2, const fp16_keys::KeyErrorModel& key_model, int n,
                                             float (&ramp_slope)[4], float (&ramp_top)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    float low = lowest[r];
    low = fminf(low, __shfl_xor_sync(0xffffffffu, low, 1));
    low = fminf(low, __shfl_xor_sync(0xffffffffu, low, 2));
    const float width = fp16_keys::plain_key_window(xn2[r], res[r], n, low, largest_cnorm2, key_model);
    float top = __fadd_ru(low, width);
    if (!(fabsf(top) >= 0x1p-100f)) top = 0x1p-100f;
    const float slope = __uint_as_float((279u - ((__float_as_uint(top) >> 23) & 0xffu)) << 23);
    ramp_slope[r] = -slope;
    ramp_top[r] = top * slope;
  }
}

// Pass B on the FMA pipe: every key's ramp r = [key < T] adds r·(W + i) to its row's sum and
// r·i² to its squares. SkipEmptyTiles: most n-tiles hold no key inside any of the warp's 32
// windows once K is large (a row has ~1.15 at K=1024), so one compare per key and a vote
// skip their counting; a skipped tile's ramps would all be 0 (key ≥ T makes T·s − key·s ≤ 0
// exactly). Where many tiles hold one (K ≤ 512 at N=32), the vote costs more than it saves.
template <int H, bool SkipEmptyTiles>
__device__ __forceinline__ void count_inside_keys(const uint32_t (&frag)[2][H][4], const uint32_t* lane_image,
                                                  const float4* norm_quads_s, const float4* weights_s, int ntiles,
                                                  int t, const float (&ramp_slope)[4], const float (&ramp_top)[4],
                                                  float (&sums)[4], float (&squares)[4]) {
  auto count = [&](float key, int r, float weight_sum, float weight_square) {
    const float inside = __saturatef(fmaf(key, ramp_slope[r], ramp_top[r]));
    sums[r] = fmaf(inside, weight_sum, sums[r]);
    squares[r] = fmaf(inside, weight_square, squares[r]);
  };
  NTileOperands<H> tile = load_ntile<H>(lane_image, norm_quads_s, 0, t);
  if constexpr (SkipEmptyTiles) {
    // T = ramp_top / s, exactly: s is a power of two whose reciprocal is a normal float (|T| ≥ 2^-100).
    float threshold[4];
#pragma unroll
    for (int r = 0; r < 4; ++r)
      threshold[r] = ramp_top[r] * __uint_as_float((254u << 23) - __float_as_uint(-ramp_slope[r]));
    for (int nt = 0; nt < ntiles; ++nt) {
      const NTileOperands<H> ahead = load_ntile<H>(lane_image, norm_quads_s, ahead_tile<H>(nt, ntiles), t);
      float d[2][4];
#pragma unroll
      for (int tile_m = 0; tile_m < 2; ++tile_m) f16_tile_keys<H>(d[tile_m], frag[tile_m], tile.b, tile.cn);
      // Four short compare chains, not one of eight: the vote waits on the longest.
      bool row_inside[4];
#pragma unroll
      for (int r = 0; r < 4; ++r)
        row_inside[r] = (d[r >> 1][2 * (r & 1)] < threshold[r]) | (d[r >> 1][2 * (r & 1) + 1] < threshold[r]);
      if (__any_sync(0xffffffffu, (row_inside[0] | row_inside[1]) | (row_inside[2] | row_inside[3]))) {
        const float4 w = weights_s[nt];
#pragma unroll
        for (int q = 0; q < 8; ++q) count(d[q >> 2][q & 3], 2 * (q >> 2) + ((q >> 1) & 1), q & 1 ? w.y : w.x,
                                          q & 1 ? w.w : w.z);
      }
      tile = ahead;
    }
  } else {
    for (int nt = 0; nt < ntiles; ++nt) {
      const NTileOperands<H> ahead = load_ntile<H>(lane_image, norm_quads_s, ahead_tile<H>(nt, ntiles), t);
      const float4 w = weights_s[nt];
#pragma unroll
      for (int tile_m = 0; tile_m < 2; ++tile_m) {
        float d[4];
        f16_tile_keys<H>(d, frag[tile_m], tile.b, tile.cn);
#pragma unroll
        for (int q = 0; q < 4; ++q) count(d[q], 2 * tile_m + (q >> 1), q & 1 ? w.y : w.x, q & 1 ? w.w : w.z);
      }
      tile = ahead;
    }
  }
}

#endif

}  // namespace mk::tf32_window
