// tensor-multik, runtime-compiled: the distance product ‖c‖² + X·(−2C)ᵀ on tensor cores and
// the transpose of its fragments through shared memory, after which each lane holds its own
// point's row of ΣK distance keys.
#pragma once

#include "config.cuh"
#include "instructions.cuh"


// Chunk h = 2·(tile in block) + e of a point's transposed row holds the fragment words
// D[.][2t+e] of lanes t = 0..3, which COLUMN_SLOT makes slots 4h..4h+3 of the block.
// stmatrix: lane 8q+rho names row rho of matrix q, i.e. point 8·(q>>1) + rho, chunk q&1 of
// tile (0, 0); the shared address of that row is computed once per kernel, so every store's
// address is that base plus a constant.
__device__ __forceinline__ unsigned stmatrix_base(const float* tbuf, int lane) {
  const int q = lane >> 3, rho = lane & 7;
  return (unsigned)__cvta_generic_to_shared(tbuf + (8 * (q >> 1) + rho) * TROW + 4 * (q & 1));
}
// For a tile whose slots 4..7 are padding only its e = 0 words are stored (x2): lanes 0-15
// name rows 0-15 of chunk 0.
__device__ __forceinline__ unsigned stmatrix_half_base(const float* tbuf, int lane) {
  return (unsigned)__cvta_generic_to_shared(tbuf + (lane & 15) * TROW);
}
// A distance tile whose columns hold fewer than 5 real slots (the last tile of a ΣK with
// ΣK mod 8 in 1..4): its words D[.][2t+1] (slots 4..7) are never read back.
// (Storing such tiles whole saves the x2 form's 4 register moves a step, but measured 2-4 %
// slower at N=8 and neutral at N=4.) fetch=registers from per-step operands stores the last
// tile whole: its free slots carry the ‖x‖² partials.
#define HALF_TILE(j) (!XX_IN_TILE && (j) == NT - 1 && SUMK - 8 * (NT - 1) <= 4)
__device__ __forceinline__ void store_fragment(float* tbuf, unsigned stsm_base, unsigned stsm_half_base, int tile_m,
                                               int tile_in_block, bool half, const float (&d)[4], int lane) {
#if USE_STMATRIX
  const unsigned offset = 4u * (16 * tile_m * TROW + 8 * tile_in_block);
  if (half) {
    asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1,%2};\n" ::"r"(stsm_half_base + offset),
                 "r"(__float_as_uint(d[0])), "r"(__float_as_uint(d[2]))
                 : "memory");
  } else {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};\n" ::"r"(stsm_base + offset),
                 "r"(__float_as_uint(d[0])), "r"(__float_as_uint(d[1])), "r"(__float_as_uint(d[2])),
                 "r"(__float_as_uint(d[3]))
                 : "memory");
  }
#else
  const int g = lane >> 2, t = lane & 3;
  float* row = tbuf + (16 * tile_m + g) * TROW + 8 * tile_in_block + t;
  row[0] = d[0];
  row[8 * TROW] = d[2];
  if (!half) {
    row[4] = d[1];
    row[8 * TROW + 4] = d[3];
  }
#endif
}

// Centroid operands for the whole kernel: B[k][n] = −2·c[slot][dim], with k index t ↔
// dim 8kk+2t and t+4 ↔ dim 8kk+2t+1 (any k order works when A uses the same), split
// hi + lo with round-to-nearest; ‖c‖² enters as the accumulator's initial value.
// Column n of tile j holds slot 8j + COLUMN_SLOT(n): the fragment word D[.][2t+e] then
// carries slot 8j + 4e + t, so each 4-word chunk of a transposed row holds 4 consecutive
// slots and a K group is a consecutive run of one lane's registers.
#define COLUMN_SLOT(n) (4 * ((n) & 1) + ((n) >> 1))

// operands=prepared centres the centroids like the points (fl(c − μ)); s_c keeps them exact.
#if PREPARED_OPERANDS
#define OPERAND_C(i) __fsub_rn(s_c[i], s_shift[(i) % NDIM])
#else
#define OPERAND_C(i) s_c[i]
#endif

#if DIST_F16
// The lane's centroid operands for the whole kernel, distance=f16x2.
__device__ __forceinline__ void centroid_fragments_f16(unsigned (&c_hi)[NT][KT][2], unsigned (&c_lo)[NT][KT][2],
                                                       const float* s_c, const float* s_shift, int g, int t) {
  (void)s_shift;
  // FP16 pairs: c_hi[j][kt][e] holds −2c of dims (16kt + 8e + 2t, +1) of the lane's slot, split
  // hi + lo to nearest like the points (N ≤ 4: dims 2(t&1), +1, e = 0 only). N ≤ 8 keeps the B
  // pairs of its two MMAs instead: c_hi = {hi, lo}, c_lo = {lo, hi} of dims 2t, 2t+1.
#pragma unroll
  for (int j = 0; j < NT; ++j) {
#pragma unroll
    for (int kt = 0; kt < KT; ++kt)
#pragma unroll
      for (int e = 0; e < (NDIM <= 8 ? 1 : 2); ++e) {
        const int slot = 8 * j + COLUMN_SLOT(g);
        const int dim = NDIM <= 4 ? 2 * (t & 1) : 16 * kt + 8 * e + 2 * t;
        const float v0 = (slot < SUMK && dim < NDIM) ? -2.f * OPERAND_C(slot * NDIM + dim) : 0.f;
        const float v1 = (slot < SUMK && dim + 1 < NDIM) ? -2.f * OPERAND_C(slot * NDIM + dim + 1) : 0.f;
        split_half2(v0, v1, c_hi[j][kt][e], c_lo[j][kt][e]);
        if (NDIM > 4 && NDIM <= 8) {
          c_hi[j][kt][1] = PIN_IF_ROOM(c_lo[j][kt][0]);
          c_lo[j][kt][1] = PIN_IF_ROOM(c_hi[j][kt][0]);
        }
      }
  }
}
#else
// The lane's centroid operands for the whole kernel, distance=tf32x3: −2c split hi + lo in TF32.
__device__ __forceinline__ void centroid_fragments_tf32(unsigned (&b_hi)[NT][DK][2], unsigned (&b_lo)[NT][DK][2],
                                                        const float* s_c, int g, int t) {
#pragma unroll
  for (int j = 0; j < NT; ++j) {
#pragma unroll
    for (int kk = 0; kk < DK; ++kk)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int slot = 8 * j + COLUMN_SLOT(g), dim = 8 * kk + 2 * t + e;
        const float v = (slot < SUMK && dim < NDIM) ? -2.f * s_c[slot * NDIM + dim] : 0.f;
        const unsigned hi = tf32_rna(v);
        b_hi[j][kk][e] = hi;
        b_lo[j][kk][e] = tf32_rna(v - __uint_as_float(hi));
      }
  }
}
#endif

// One tile's centroid operands: from the registers filled above, or (CFRAG_SHARED) one
// conflict-free LDS.128 per tile and k-step, which frees 4·NT·DK registers for the whole
// kernel at the price of that load every step.
// Register mode names the arrays directly (the parameters below are called so).
#if CFRAG_SHARED
#define B_HI(bf, j, kk, e) ((e) ? bf.y : bf.x)
#define B_LO(bf, j, kk, e) ((e) ? bf.w : bf.z)
#elif DIST_F16
#define B_HI(bf, j, kk, e) c_hi[j][kk][e]
#define B_LO(bf, j, kk, e) c_lo[j][kk][e]
#else
#define B_HI(bf, j, kk, e) b_hi[j][kk][e]
#define B_LO(bf, j, kk, e) b_lo[j][kk][e]
#endif

#if DIST_F16
// distance=f16x2 wider than 8 dimensions, column block cb: tile by tile (two MMA chains, which
// keeps 32 fewer registers live than all tiles at once), KT k-steps of hi·c_hi, lo·c_hi and
// hi·c_lo each, then the transpose of the tile into the lane rows.
#if CFRAG_SHARED
__device__ __forceinline__ void f16_wide_distance_block(const int cb, const unsigned (&af)[2][FT][4],
                                                        const uint4* s_bfrag, const unsigned& norms_shared,
                                                        float* const& tbuf, const unsigned& stsm_base,
                                                        const unsigned& stsm_half_base, const int& lane) {
#else
__device__ __forceinline__ void f16_wide_distance_block(const int cb, const unsigned (&af)[2][FT][4],
                                                        const unsigned (&c_hi)[NT][KT][2],
                                                        const unsigned (&c_lo)[NT][KT][2], const unsigned& norms_shared,
                                                        float* const& tbuf, const unsigned& stsm_base,
                                                        const unsigned& stsm_half_base, const int& lane) {
#endif
  const int tiles = (NT - 4 * cb) < 4 ? (NT - 4 * cb) : 4;  // a constant once unrolled
#pragma unroll
  for (int jj = 0; jj < tiles; ++jj) {
    const int j = 4 * cb + jj;
    const float4 norms = lds128(norms_shared + 64 * j);
    float d[2][4];
#if CFRAG_SHARED
    uint4 bf[KT];
#pragma unroll
    for (int kt = 0; kt < KT; ++kt) bf[kt] = s_bfrag[(j * KT + kt) * 32 + lane];
#endif
#pragma unroll
    for (int i = 0; i < 2; ++i) mma_f16_from(d[i], af[i][0], B_LO(bf[0], j, 0, 0), B_LO(bf[0], j, 0, 1), norms);
#pragma unroll
    for (int kt = 0; kt < KT; ++kt)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        if (kt > 0) mma_f16(d[i], af[i][kt], B_LO(bf[kt], j, kt, 0), B_LO(bf[kt], j, kt, 1));
        mma_f16(d[i], af[i][KT + kt], B_HI(bf[kt], j, kt, 0), B_HI(bf[kt], j, kt, 1));
        mma_f16(d[i], af[i][kt], B_HI(bf[kt], j, kt, 0), B_HI(bf[kt], j, kt, 1));
      }
#pragma unroll
    for (int i = 0; i < 2; ++i) store_fragment(tbuf, stsm_base, stsm_half_base, i, jj, HALF_TILE(j), d[i], lane);
  }
}
#else
// distance=tf32x3, column block cb: x_hi·c_lo + x_lo·c_hi + x_hi·c_hi per 8 dimensions, from
// ‖c‖² as the first accumulator, then the transpose into the lane rows. One k-step (N ≤ 8): all
// of the block's products first, so 8 independent MMA chains keep the tensor pipe busy.
#if CFRAG_SHARED
__device__ __forceinline__ void tf32_distance_block(const int cb, const unsigned (&a_hi)[2][DK][4],
                                                    const unsigned (&a_lo)[2][DK][4], const uint4* s_bfrag,
                                                    const unsigned& norms_shared, float* const& tbuf,
                                                    const unsigned& stsm_base, const unsigned& stsm_half_base,
                                                    const int& lane) {
#else
__device__ __forceinline__ void tf32_distance_block(const int cb, const unsigned (&a_hi)[2][DK][4],
                                                    const unsigned (&a_lo)[2][DK][4], const unsigned (&b_hi)[NT][DK][2],
                                                    const unsigned (&b_lo)[NT][DK][2], const unsigned& norms_shared,
                                                    float* const& tbuf, const unsigned& stsm_base,
                                                    const unsigned& stsm_half_base, const int& lane) {
#endif
  const int tiles = (NT - 4 * cb) < 4 ? (NT - 4 * cb) : 4;  // a constant once unrolled
  if (DK == 1) {
    float d[2][4][4];
#if CFRAG_SHARED
    uint4 bf[4];
#pragma unroll
    for (int jj = 0; jj < tiles; ++jj) bf[jj] = s_bfrag[(4 * cb + jj) * DK * 32 + lane];
#endif
#pragma unroll
    for (int jj = 0; jj < tiles; ++jj) {
      const float4 norms = lds128(norms_shared + 64 * (4 * cb + jj));
#pragma unroll
      for (int i = 0; i < 2; ++i)
        mma_tf32_from(d[i][jj], a_hi[i][0], B_LO(bf[jj], 4 * cb + jj, 0, 0), B_LO(bf[jj], 4 * cb + jj, 0, 1), norms);
    }
#pragma unroll
    for (int jj = 0; jj < tiles; ++jj)
#pragma unroll
      for (int i = 0; i < 2; ++i)
        mma_tf32(d[i][jj], a_lo[i][0], B_HI(bf[jj], 4 * cb + jj, 0, 0), B_HI(bf[jj], 4 * cb + jj, 0, 1));
#pragma unroll
    for (int jj = 0; jj < tiles; ++jj)
#pragma unroll
      for (int i = 0; i < 2; ++i)
        mma_tf32(d[i][jj], a_hi[i][0], B_HI(bf[jj], 4 * cb + jj, 0, 0), B_HI(bf[jj], 4 * cb + jj, 0, 1));
#pragma unroll
    for (int jj = 0; jj < tiles; ++jj)
#pragma unroll
      for (int i = 0; i < 2; ++i)
        store_fragment(tbuf, stsm_base, stsm_half_base, i, jj, HALF_TILE(4 * cb + jj), d[i][jj], lane);
  } else {
#pragma unroll
    for (int jj = 0; jj < tiles; ++jj) {
      const int j = 4 * cb + jj;
      const float4 norms = lds128(norms_shared + 64 * j);
      float d[2][4];
#if CFRAG_SHARED
      uint4 bf[DK];
#pragma unroll
      for (int kk = 0; kk < DK; ++kk) bf[kk] = s_bfrag[(j * DK + kk) * 32 + lane];
#endif
#pragma unroll
      for (int i = 0; i < 2; ++i) mma_tf32_from(d[i], a_hi[i][0], B_LO(bf[0], j, 0, 0), B_LO(bf[0], j, 0, 1), norms);
#pragma unroll
      for (int kk = 0; kk < DK; ++kk)
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          if (kk > 0) mma_tf32(d[i], a_hi[i][kk], B_LO(bf[kk], j, kk, 0), B_LO(bf[kk], j, kk, 1));
          mma_tf32(d[i], a_lo[i][kk], B_HI(bf[kk], j, kk, 0), B_HI(bf[kk], j, kk, 1));
          mma_tf32(d[i], a_hi[i][kk], B_HI(bf[kk], j, kk, 0), B_HI(bf[kk], j, kk, 1));
        }
#pragma unroll
      for (int i = 0; i < 2; ++i) store_fragment(tbuf, stsm_base, stsm_half_base, i, jj, HALF_TILE(j), d[i], lane);
    }
  }
}
#endif
