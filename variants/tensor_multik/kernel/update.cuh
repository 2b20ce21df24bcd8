// tensor-multik, runtime-compiled: the update, one-hot(labels)ᵀ·X on tensor cores into
// accumulators that stay in MMA fragments for the whole kernel, and the one-hot counts.
#pragma once

#include "config.cuh"
#include "fetch.cuh"
#include "instructions.cuh"

#define TILE_WORD(s) ((s) >> 2)
#define TILE_SUB(s) ((s) & 3)
#if UPDATE_F16
// Update columns: column g of tile s is slot 8s + g, i.e. bit g of byte TILE_SUB(s) of one-hot
// word TILE_WORD(s). Its one-hot value is the FP16 subnormal 2^(g-24) (the bit itself, moved to
// bit g of a half), so lane g's count registers hold per-half sums in units of 2^g.
#define TILE_SLOT(s, column) (8 * (s) + (column))

// Counts in units of 2^g per 16-bit half, at most 4·2^7 per step: flushed every FOLD_STEPS (64:
// at most 2^15 per half).
__device__ __forceinline__ void flush_counts(unsigned (&tile_counts)[NT], unsigned* block_counts, int g, int t) {
#pragma unroll
  for (int s = 0; s < NT; ++s) {
    unsigned c = ((tile_counts[s] & 0xffffu) + (tile_counts[s] >> 16)) >> g;
    tile_counts[s] = 0u;
#else
// Update columns. Tile s belongs to one-hot word TILE_WORD(s), which feeds WORD_TILES(w) tiles
// (its slots over 8, rounded up); column g of tile s holds slot 32w + WORD_TILES(w)·g +
// TILE_SUB(s), so lane g reads the WORD_TILES(w) adjacent bits at WORD_TILES(w)·g of the word.
#define WORD_TILES(w) ((((SUMK - 32 * (w)) < 32 ? (SUMK - 32 * (w)) : 32) + 7) / 8)
#define TILE_SLOT(s, column) (32 * TILE_WORD(s) + WORD_TILES(TILE_WORD(s)) * (column) + TILE_SUB(s))

// Per-lane one-hot bit sums are weighted 2^TILE_SUB(s) (8 points per lane per step, so they
// fit 32 bits for thousands of steps; the kernel flushes them every FOLD_STEPS).
__device__ __forceinline__ void flush_counts(unsigned (&tile_counts)[NT], unsigned* block_counts, int g, int t) {
#pragma unroll
  for (int s = 0; s < NT; ++s) {
    unsigned c = tile_counts[s] >> TILE_SUB(s);
    tile_counts[s] = 0u;
#endif
    c += __shfl_xor_sync(FULL_MASK, c, 1);
    c += __shfl_xor_sync(FULL_MASK, c, 2);
    const int slot = TILE_SLOT(s, g);
    if (t == 0 && slot < SUMK && c) atomicAdd(&block_counts[slot], c);
  }
}


// The distance product's A fragments of a step, which the FP16 update reads transposed
// (distance=tf32x3 passes its update operands in their place).
#if DIST_F16
typedef unsigned AfArray[2][FT][4];
#else
typedef unsigned AfArray[2][4];
#endif

// A lane's fixed operands of the update, set once per kernel (references to the kernel's
// registers, as a lambda would capture them: ptxas then sees the operands in the same order).
struct UpdateLane {
  const unsigned& half_bits;  // the FP16 one-hot bit: bit g of each half
  const int& pair_lane;       // the first lane of its point pairs
#if PIN_PAIR_SOURCES
  const int (&sources)[2][2];  // its pair words' source lanes, pinned (PIN_PAIR_SOURCES)
#endif
};

// One step's update from its one-hot word (and, EARLY_PARTNER, its partner's), its update
// operands (operands=prepared), its distance A fragments (f16x2, per-step operands) or its
// staged rows X (the others).
__device__ __forceinline__ void update_step(hot_t hot, unsigned partner_word, const unsigned (&update_a)[2][4],
                                            const AfArray& af, const float* X, unsigned (&tile_counts)[NT],
                                            float (&acc)[UPDATE_TILES][NT][4], const UpdateLane& lane_ops,
                                            const StageOffsets& offsets, const float& x_scale, const int& g,
                                            const int& t) {
  (void)partner_word, (void)update_a, (void)af, (void)X, (void)offsets, (void)x_scale, (void)t;
#if UPDATE_F16
  // Update: D[dims hi|lo × slots] += Xᵀ[16 × 16 points] · onehot[16 points × 8 slots] in
  // FP16 for each half-step kg of 16 points. The MMA's k index 2t, 2t+1, 2t+8, 2t+9 stands
  // for points t, t+4, t+8, t+12 of the half-step, so lane (g,t) reads dim 8q+g of those
  // four rows (bank-conflict free) and the one-hot bits of two point pairs (t, t+4) and
  // (t+8, t+12).
  // Pair words: lane p (p & 4 == 0) interleaves its one-hot bytes with those of point p+4,
  // so one shuffle brings a receiver both points' bytes and one AND (after a byte shift
  // for tiles 2 and 3 of a word) leaves bit g of each in its own half: an FP16 operand.
#if DIST_F16
  // The transposed point operands put points 2t, 2t+1 at k = 2t, 2t+1: pairs are adjacent lanes.
#define PARTNER_LANE 1
#else
#define PARTNER_LANE 4
#endif
#if PIN_PAIR_SOURCES
#define PAIR_SOURCE(kg, h) lane_ops.sources[kg][h]
#else
#define PAIR_SOURCE(kg, h) (16 * (kg) + 8 * (h) + lane_ops.pair_lane)
#endif
  // Up to 2 tiles (ΣK ≤ 16) a point's one-hot bits fill 2 bytes, so one word carries both
  // tiles of the pair (own.b0, own.b1, partner.b0, partner.b1): half the broadcast shuffles.
  // N=4 K=3..5 spent 82 % of its L1 pipe's cycles (ncu), 9.4 shuffles a step of it.
#define ONE_PAIR_WORD (NT <= 2)
  unsigned pair_even[WORDS], pair_odd[WORDS];
#pragma unroll
  for (int w = 0; w < WORDS; ++w) {
    const unsigned own = (unsigned)(hot >> (32 * w));
#if EARLY_PARTNER
    const unsigned partner = partner_word;
#else
    const unsigned partner = __shfl_xor_sync(FULL_MASK, own, PARTNER_LANE);
#endif
    // Selector nibble n (from the low end) names result byte n; bytes 0-3 are own, 4-7 partner.
    if (ONE_PAIR_WORD) {
      pair_even[w] = __byte_perm(own, partner, 0x5410);  // own.b0, own.b1, partner.b0, partner.b1
      pair_odd[w] = 0u;
    } else {
      pair_even[w] = __byte_perm(own, partner, 0x6420);  // own.b0, own.b2, partner.b0, partner.b2
      pair_odd[w] = __byte_perm(own, partner, 0x7531);   // own.b1, own.b3, partner.b1, partner.b3
    }
  }
  // (half_bits and pair_lane are pinned before the loop.)
#pragma unroll
  for (int kg = 0; kg < 2; ++kg) {
    unsigned b[NT][2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int src = PAIR_SOURCE(kg, h);
#pragma unroll
      for (int w = 0; w < WORDS; ++w) {
        const unsigned even = __shfl_sync(FULL_MASK, pair_even[w], src);
        const unsigned odd = !ONE_PAIR_WORD && 4 * w + 1 < NT ? __shfl_sync(FULL_MASK, pair_odd[w], src) : 0u;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int s = 4 * w + i;
          if (s < NT) {
            // Tile i's byte: i & 1 picks the word, i & 2 its upper byte (one word: tile 1 is there).
            const unsigned word = ONE_PAIR_WORD || !(i & 1) ? even : odd;
            b[s][h] = ((ONE_PAIR_WORD ? i : i & 2) ? word >> 8 : word) & lane_ops.half_bits;
          }
        }
      }
    }
#pragma unroll
    for (int s = 0; s < NT; ++s) tile_counts[s] += b[s][0] + b[s][1];
#if DIST_F16
    // Features × points of this half-step: the distance fragments of m-tile kg, transposed.
#if UPDATE_T
    // N ≤ 4 has 8 features: slots × features instead (one-hot as A, tiles 2p and 2p+1 as its
    // rows; the transposed points as B), one MMA per tile pair and no zero rows.
    {
#if PREPARED_OPERANDS
      const unsigned b0 = update_a[kg][0], b1 = update_a[kg][2];
#else
      const unsigned b0 = transpose8x8(af[kg][0][0]), b1 = transpose8x8(af[kg][0][1]);  // points 0-7, 8-15
#endif
#pragma unroll
      for (int p = 0; p < PAIRS; ++p) {
        const unsigned a[4] = {b[2 * p][0], 2 * p + 1 < NT ? b[2 * p + 1][0] : 0u, b[2 * p][1],
                               2 * p + 1 < NT ? b[2 * p + 1][1] : 0u};
        mma_f16(acc[0][p], a, b0, b1);
      }
    }
#elif PREPARED_OPERANDS
#pragma unroll
    for (int s = 0; s < NT; ++s) mma_f16(acc[0][s], update_a[kg], b[s][0], b[s][1]);
#else
#pragma unroll
    for (int ft = 0; ft < FT; ++ft) {
      unsigned a[4];
      a[0] = transpose8x8(af[kg][ft][0]);  // features 0-7 (of the tile), points 0-7
      a[2] = transpose8x8(af[kg][ft][1]);  // features 0-7, points 8-15
      if (NDIM <= 4) {
        a[1] = a[3] = 0u;  // features 8-15 repeat 0-7
      } else {
        a[1] = transpose8x8(af[kg][ft][2]);  // features 8-15, points 0-7
        a[3] = transpose8x8(af[kg][ft][3]);
      }
#pragma unroll
      for (int s = 0; s < NT; ++s) mma_f16(acc[ft][s], a, b[s][0], b[s][1]);
    }
#endif
#else
#pragma unroll
    for (int q = 0; q < DK; ++q) {
      const int dim = 8 * q + g;
      float v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        v[u] = (NDIM % 8 == 0 || dim < NDIM) ? UPDATE_VALUE(q, u, 16 * kg * NDIM) : 0.f;
#if SCALE_X
        v[u] *= x_scale;
#endif
      }
      unsigned a[4];
      split_half2(v[0], v[1], a[0], a[1]);
      split_half2(v[2], v[3], a[2], a[3]);
#pragma unroll
      for (int s = 0; s < NT; ++s) mma_f16(acc[q][s], a, b[s][0], b[s][1]);
    }
#endif
  }
#else
  // Update: D[dims hi|lo × slots] += Xᵀ[16 × 8 points] · onehot[8 points × 8 slots] for
  // each group of 8 points; lane (g,t) feeds points t and t+4 of the group, dim 8q+g, and
  // WORD_TILES(w) adjacent bits of each one-hot word w.
#pragma unroll
  for (int group = 0; group < 4; ++group) {
    const int src0 = 8 * group + t, src1 = src0 + 4;
    unsigned nib0[WORDS], nib1[WORDS];
    {
      const hot_t h0 = __shfl_sync(FULL_MASK, hot, src0), h1 = __shfl_sync(FULL_MASK, hot, src1);
#pragma unroll
      for (int w = 0; w < WORDS; ++w) {
        nib0[w] = (unsigned)(h0 >> (32 * w)) >> (WORD_TILES(w) * g);
        nib1[w] = (unsigned)(h1 >> (32 * w)) >> (WORD_TILES(w) * g);
      }
    }
    unsigned b0[NT], b1[NT];
#pragma unroll
    for (int s = 0; s < NT; ++s) {
      // 1.0f = 0x3f8 << 20 is divisible by 2^0..2^3.
      const unsigned bit = 1u << TILE_SUB(s);
      const unsigned m0 = nib0[TILE_WORD(s)] & bit, m1 = nib1[TILE_WORD(s)] & bit;
      tile_counts[s] += m0 + m1;
      b0[s] = m0 * (0x3f800000u >> TILE_SUB(s));
      b1[s] = m1 * (0x3f800000u >> TILE_SUB(s));
    }
#pragma unroll
    for (int q = 0; q < DK; ++q) {
      const int dim = 8 * q + g;
      const float v0 = (NDIM % 8 == 0 || dim < NDIM) ? UPDATE_VALUE(q, 0, 8 * group * NDIM) : 0.f;
      const float v1 = (NDIM % 8 == 0 || dim < NDIM) ? UPDATE_VALUE(q, 1, 8 * group * NDIM) : 0.f;
      unsigned a[4];
      split_truncate(v0, a[0], a[1]);
      split_truncate(v1, a[2], a[3]);
#pragma unroll
      for (int s = 0; s < NT; ++s) mma_tf32(acc[q][s], a, b0[s], b1[s]);
    }
  }
#endif
}
