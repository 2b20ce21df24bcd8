#pragma once
// gemm-window's epilogue: keys start as ‖c̃‖² + xb in the accumulators (so the MMAs leave
// finished keys; the wgmma tile adds it in its fold instead, fold_product_keys), are packed with their column index into the low mantissa bits, and fold
// into each lane's two smallest keys per row and column parity. Four instructions a key on
// the integer pipe (one LOP3, three IMNMX), against ~6 for a top-3 (tf32-window measured its
// top-3 insertion as the bound of its TF32 sweep).
//
// A lane sees columns 2t, 2t+1 of every n-tile, so each (lane, parity) is a "slice" of a row's
// columns: 4 lanes × 2 parities × WN warp columns = 8·WN slices. When a group's sweep ends, a
// row's window is set from its smallest key (finalize_candidates); every slice lists its
// first and second key if they are inside, and a slice whose second is inside may hide a
// third: it is scanned exactly (arbitration.cuh).
#include "variants/gemm_window/block.cuh"
#include "variants/gemm_window/window_bound.hpp"

namespace mk::gemm_window {

// The per-lane view of its four rows, loaded once per point tile.
struct RowData {
  float xn2[4];  // upper bound on ‖x̃‖²
  float ex[4];   // upper bound on ‖x_h − x̃‖ (not squared)
  float xb[4];   // the bias added to every key of the row
};

template <class S>
__device__ __forceinline__ RowData load_rows(const KernelArgs& a, const Smem& s, int wm, int g) {
  RowData d;
  // FP32 sums of n squares (in order, or by a shuffle tree) err by ≤ (n + 2)·2^-24 relative; the
  // centring's own rounding moves ‖x̃‖ by ≤ 2^-24 of it.
  const float widen = 1.f + float(a.n + 8) * 0x1p-23f;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int row = S::row_of(wm, r, g);
    d.xn2[r] = s.xn2[row] * widen;
    const float a_bound = sqrt_up(d.xn2[r]) * (1.f + 4.f * kUnit);
    d.ex[r] = sqrt_up(s.ex[row] * widen) * (1.f + 4.f * kUnit) + kUnit * a_bound;
    d.xn2[r] = a_bound * a_bound;
    d.xb[r] = d.xn2[r] * (1.f + kBiasMargin);
  }
  return d;
}

// The lane's norms (columns 2t, 2t + 1 of each n-tile) from one pointer and immediate offsets,
// for the mma.sync tiles' keys: indexing by nt·8 + 2t had ptxas rebuild a 64-bit address for
// each load (ncu source counters, H200, b20fd27). Measured with mma_chunk's B addresses, 768/1000/1M
// 10.575 ms against 10.891 (same call, e2dd290 against d745b69). The same loads in the wgmma
// tile's fold, with the fill's row reduction unrolled, measured no gain (128/1024/2M 3.098
// against 3.079, the batch 3.304 against 3.263, one round): left as they were.
__device__ __forceinline__ const float2* lane_norms(const float* tile_norms, int t) {
  return reinterpret_cast<const float2*>(tile_norms) + t;
}

template <class S>
__device__ __forceinline__ void init_keys(float (&acc)[2][S::kNTiles][4], const float* tile_norms, const RowData& rows,
                                          int t) {
  const float2* norms = lane_norms(tile_norms, t);
#pragma unroll
  for (int nt = 0; nt < S::kNTiles; ++nt) {
    const float2 cn = __ldg(norms + 4 * nt);
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
      acc[mt][nt][0] = cn.x + rows.xb[2 * mt];
      acc[mt][nt][1] = cn.y + rows.xb[2 * mt];
      acc[mt][nt][2] = cn.x + rows.xb[2 * mt + 1];
      acc[mt][nt][3] = cn.y + rows.xb[2 * mt + 1];
    }
  }
}

struct Top2 {
  unsigned first[4][2], second[4][2];  // [row][parity], packed keys
};

__device__ __forceinline__ void reset(Top2& top) {
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int p = 0; p < 2; ++p) top.first[r][p] = top.second[r][p] = 0xffffffffu;
}

__device__ __forceinline__ void offer(unsigned& first, unsigned& second, unsigned key) {
  second = min(second, max(first, key));
  first = min(first, key);
}

// column_base: the group-local index of the lane's column 2t in n-tile 0 of this tile.
template <class S>
__device__ __forceinline__ void fold_keys(const float (&acc)[2][S::kNTiles][4], unsigned column_base,
                                          unsigned index_mask, Top2& top) {
#pragma unroll
  for (int nt = 0; nt < S::kNTiles; ++nt) {
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const unsigned column = column_base + nt * 8 + p;
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const unsigned key = (__float_as_uint(acc[r >> 1][nt][(r & 1) * 2 + p]) & ~index_mask) | column;
        offer(top.first[r][p], top.second[r][p], key);
      }
    }
  }
}

// wgmma's fold: its accumulators hold the products alone (wgmma.cuh), so each key is
// fl32(S + C), S the FP32 sum of the products from zero and C = fl32(‖c̃_j‖² + xb): one
// rounding more than mma.sync's keys, whose sums start at C. In fp16_key_error.hpp's model
// (wgmma taken to accumulate as mma.sync does on the same tensor cores; the device tests check
// the labels) S's chain is the bound's at C = 0, which leaves acc_running·C of its budget,
// acc_running = (npad/8 + 2)·2^-22 ≥ 24u (npad ≥ 32, u = 2^-24), for the extra addition's
// error u·|S + C| ≤ u·(C + P'), P' = Σ|x_h c_h| with S's own error. That holds while P' ≤ 23·C;
// P' ≤ 2(a + ex)(‖c̃_j‖ + ‖δc_j‖)(1 + small) (the bound's `products`), which is ≤ about 4C
// even where FP16 subnormals bring ex near a, since C ≥ xb + ‖c̃_j‖² ≥ a² + ‖c̃_j‖².
template <class S>
__device__ __forceinline__ void fold_product_keys(const float (&acc)[2][S::kNTiles][4], const float* tile_norms,
                                                  const RowData& rows, unsigned column_base, unsigned index_mask,
                                                  Top2& top, int t) {
#pragma unroll
  for (int nt = 0; nt < S::kNTiles; ++nt) {
    const float2 cn = __ldg(reinterpret_cast<const float2*>(tile_norms + nt * 8 + 2 * t));
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const unsigned column = column_base + nt * 8 + p;
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const float start = (p == 0 ? cn.x : cn.y) + rows.xb[r];
        const float key = acc[r >> 1][nt][(r & 1) * 2 + p] + start;
        offer(top.first[r][p], top.second[r][p], (__float_as_uint(key) & ~index_mask) | column);
      }
    }
  }
}

// Step 1 of a group's finalize: each quad's smallest key per row, for the row's warps.
template <class S>
__device__ __forceinline__ void publish_row_minima(const Smem& s, const Top2& top, int wm, int wn, int g, int t) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    unsigned m = min(top.first[r][0], top.first[r][1]);
    m = min(m, __shfl_xor_sync(kFullWarp, m, 1));
    m = min(m, __shfl_xor_sync(kFullWarp, m, 2));
    if (t == 0) s.rowbest[S::row_of(wm, r, g) * S::WN + wn] = m;
  }
}

// Step 2 (after a barrier): the row's winner and window; every in-window first and second key
// of the lane's slices goes on the row's list, and a slice whose second is inside is marked
// for a scan. The winner's index becomes the row's label unless arbitration changes it.
template <class S>
__device__ __forceinline__ void list_candidates(const KernelArgs& a, const Smem& s, const Top2& top, const RowData& rows,
                                                const KeyErrorModel& model, const float* group_norms, int64_t base,
                                                int wm, int wn, int g, int t) {
  const unsigned index_mask = a.index_mask;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int row = S::row_of(wm, r, g);
    if (base + row >= a.m) continue;
    unsigned best = s.rowbest[row * S::WN];
#pragma unroll
    for (int w = 1; w < S::WN; ++w) best = min(best, s.rowbest[row * S::WN + w]);
    const unsigned winner = best & index_mask;
    const float best_key = __uint_as_float(best);
    const float width = key_window(rows.xn2[r], rows.ex[r], rows.xb[r], best_key, __ldg(group_norms + winner), model);
    const unsigned threshold = __float_as_uint(best_key + width) | index_mask;
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      if (top.first[r][p] <= threshold)
        s.items[row * S::kItemsPerRow + atomicAdd(&s.rowcount[row], 1u)] =
            static_cast<unsigned short>(top.first[r][p] & index_mask);
      if (top.second[r][p] <= threshold) {
        s.items[row * S::kItemsPerRow + atomicAdd(&s.rowcount[row], 1u)] =
            static_cast<unsigned short>(top.second[r][p] & index_mask);
        atomicOr(&s.scan[row], 1u << (wn * 8 + t * 2 + p));
      }
    }
    if (wn == 0 && t == 0) s.label[row] = int(winner);
  }
}

}  // namespace mk::gemm_window
