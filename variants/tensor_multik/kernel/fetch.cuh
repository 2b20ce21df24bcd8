// tensor-multik, runtime-compiled: where the points of a step sit in a warp's cp.async ring
// (fetch=ring) and the loads that read them back: a lane's own point, the distance product's
// A fragments and the update's operands.
#pragma once

#include "config.cuh"

// Where (row, dim) of a staged step lives. For N=16 a row is 4 chunks of 16 bytes and two
// rows fill the 32 banks, so unswizzled the 8 rows of a quarter-warp's LDS.128 (a lane's own
// point) meet in 2 bank groups, and the fragment loads of rows r and r+2 in the same banks.
// Chunk c of row r sits at c ^ ROW_SWIZZLE(r), ROW_SWIZZLE(r) = ((r>>1)&1)·2 + ((r>>2)&1):
// rows r..r+7 of one parity then take 4 different chunk positions (own-row loads and the
// cp.async stores conflict-free), rows r and r+2 differ in bit 1 (fragment pairs), and
// rows 8 apart share a swizzle (the fragment rows g, g+8, 16+g, 24+g).
#define ROW_SWIZZLE(row) (((((row) >> 1) & 1) << 1) | (((row) >> 2) & 1))
__host__ __device__ constexpr int stage_index(int row, int dim) {
#if SWIZZLE16
  return row * NDIM + (dim ^ (ROW_SWIZZLE(row) << 2));
#else
  return row * NDIM + dim;
#endif
}

// Byte offset in a stage of the u-th 16-byte chunk a lane copies (chunk lane + 32u).
__device__ __forceinline__ unsigned chunk_offset(int lane, int u) {
  const int chunk = lane + 32 * u;
#if SWIZZLE16
  const int row = chunk >> 2, c = chunk & 3;
  return (unsigned)(row * 64 + ((c ^ ROW_SWIZZLE(row)) << 4));
#else
  return (unsigned)(16 * chunk);
#endif
}

// A lane's fixed element offsets (in floats) into a staged step, for the three patterns it
// reads every step: its own point (row lane), the distance product's A fragments (rows g,
// g+8, 16+g, 24+g; dims 8kk+2t, 8kk+2t+1) and the update's A operands (rows t + 4u, plus
// 8·group or 16·kg; dim 8q+g). Computed once, so a step's loads cost one add per pattern
// instead of per-load address arithmetic. Under the N=16 swizzle a row's offset has zero
// low 4 bits, so chunk c of the own row is one XOR away (own ^ 4c), and row t+4 differs
// from row t in swizzle bit 0 only (update ^ 4). Other N keep one own offset per 8 dims
// and plain element reads: a single offset with vector loads measured ~1 % slower at N=8.
struct StageOffsets {
  int own[DK], frag[DK], update[DK];
};
__device__ __forceinline__ StageOffsets stage_offsets(int lane) {
  const int g = lane >> 2, t = lane & 3;
  StageOffsets o;
#pragma unroll
  for (int h = 0; h < DK; ++h) {
    o.own[h] = stage_index(lane, 8 * h);
#if DIST_F16 && NDIM <= 4
    o.frag[h] = stage_index(g, 2 * (t & 1));  // lanes t and t+2 read the same dims (hi and lo features)
#else
    o.frag[h] = stage_index(g, 8 * h + 2 * t);
#endif
    o.update[h] = stage_index(t, 8 * h + g);
  }
  return o;
}
// The update's value of row t + 4u, dim 8q + g, `step_offset` floats into the stage. Other N
// than 16 keep the pointer form (X + offset + step_offset)[4u·N]: adding the lane offset and
// 4u·N as integers first cost N=4 K=3..5 two registers and 5 % of its time under NVRTC, whose
// SASS differs from nvcc's on this.
#if SWIZZLE16
#define UPDATE_VALUE(q, u, step_offset) (*(X + ((offsets.update[q] ^ (((u) & 1) << 2)) + 4 * (u) * NDIM) + (step_offset)))
#else
#define UPDATE_VALUE(q, u, step_offset) ((X + offsets.update[q] + (step_offset))[4 * (u) * NDIM])
#endif

// This lane's point from a staged step. N=16: whole 16-byte chunks (LDS.128), so the
// swizzle's XOR cannot hide the alignment from the compiler.
__device__ __forceinline__ void load_own_point(const float* X, const int (&own)[DK], float (&x)[NDIM]) {
#if SWIZZLE16
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const float4 v = *reinterpret_cast<const float4*>(X + (own[0] ^ (4 * c)));
    x[4 * c] = v.x, x[4 * c + 1] = v.y, x[4 * c + 2] = v.z, x[4 * c + 3] = v.w;
  }
#else
#pragma unroll
  for (int d = 0; d < NDIM; ++d) x[d] = X[own[d >> 3] + (d & 7)];
#endif
}

// Dimensions dim and dim+1 of the row `rows_down` rows below a fragment pattern's base row
// (frag already points at dim there), zero past N.
__device__ __forceinline__ float2 load_pair(const float* frag, int rows_down, int dim) {
#if NDIM % 2 == 0
  if (NDIM % 8 == 0 || dim < NDIM) return *reinterpret_cast<const float2*>(frag + rows_down * NDIM);
  return make_float2(0.f, 0.f);
#else
  return make_float2(dim < NDIM ? frag[rows_down * NDIM] : 0.f, dim + 1 < NDIM ? frag[rows_down * NDIM + 1] : 0.f);
#endif
}
