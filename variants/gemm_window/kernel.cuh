#pragma once
// The gemm-window kernel: a persistent grid of blocks, each taking point tiles of BM points
// from a counter (tile_scheduler), converting them into a resident FP16 A tile, and sweeping
// the whole FP16 centroid table (every K of the range, one group after another; in a batch's
// instantiation, its problem's group alone) through
// m16n8k16 MMAs whose accumulators start at ‖c̃‖² + xb, so they end as keys (the wgmma tile:
// products from zero, ‖c̃‖² + xb added in the fold, epilogue.cuh). After a
// group's last tile its labels are settled (epilogue.cuh: window and candidates;
// arbitration.cuh: exact distances) and its points added (update.cuh).
//
// Barriers: the end of a point tile (A is free again, the next tile number landed, and with
// points=staged the next tile's rows), after the
// fill (A visible), one per ring stage with table=stream (the ring slot is free; wgmma: one a
// centroid tile, after its wgmmas), and two per group (row minima, then candidate lists, are
// complete). Rows are owned by one warp for arbitration and update, so
// those need only warp synchronisation.
#include "variants/gemm_window/arbitration.cuh"
#include "variants/gemm_window/bulk_copy.cuh"
#include "variants/gemm_window/epilogue.cuh"
#include "variants/gemm_window/mainloop.cuh"
#include "variants/gemm_window/update.cuh"

namespace mk::gemm_window {

// Point tiles come from a counter, one ahead: thread 0 asks for tile i + 1 as tile i starts,
// into the other of two shared slots, so the atomic's round trip is hidden behind a tile's
// work instead of waited for at every tile's barrier.
__device__ __forceinline__ void request_point_tile(const KernelArgs& a, const Smem& s, int slot) {
  if (threadIdx.x == 0) s.tile[slot] = int(atomicAdd(a.tile_counter, 1u));
}

// Batched: a batch in one launch (a.batch_tiles > 0). Its own instantiation: the batch's state
// (the fetched group's end, the tile's group) held in the one-problem kernel cost it 4.4 % at
// 128/1024/2M, 3.665 against 3.509 ms (H200, 51dec03 against 82a7a63, same call,
// ab/gemm-window-batch-one-problem-rows.txt), its wgmma form being at its 168-register cap;
// with Batched false the kernel compiles to 82a7a63's machine code (scripts/cubin-text-compare.py).
template <int BM, int BN, int WM, int WN, int MinBlocks, bool Wgmma, bool Batched>
__global__ void __launch_bounds__(32 * WM * WN, MinBlocks) gemm_window_kernel(KernelArgs a) {
#if MK_GW_SM80
  using S = Shape<BM, BN, WM, WN, Wgmma>;
  if constexpr (Wgmma) {
    // Built for sm_90a only (wgmma.cuh); the swizzle pattern needs the 1 KiB-aligned base.
    if (!MK_GW_SM90A || (smem_address(gemm_window_smem) & 1023u) != 0) __trap();
  }
  const Smem s = carve(a.smem);
  constexpr bool batched = Batched;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int wm = warp / WN, wn = warp - wm * WN;
  const int pieces = a.npad / 8;
  const float scale = scale_for(fmaxf(a.largest_point_norm2, __uint_as_float(a.table_scalars[0])));
  KeyErrorModel model = a.model;
  // The table's residual ratio was measured against the FP32-centred centroids; their own
  // rounding adds ≤ 2^-24 of ‖c̃‖.
  model.rho = __uint_as_float(a.table_scalars[1]) * (1.f + 4.f * kUnit) + kUnit;
  model.tau = residual_floor(a.npad);
  // table_scalars[0] is the largest unscaled ‖c − μ‖² rounded up; scale is a power of two.
  model.largest_cnorm = fp16_keys::largest_centroid_norm(__uint_as_float(a.table_scalars[0])) * scale;

  // update=sorted counts in its own pass (sum_label_runs), and its layout gives it no shared counts.
  const bool shared_counts = a.update != UpdateMode::Sorted;
  if (shared_counts)
    for (int i = threadIdx.x; i < a.slots; i += S::kThreads) s.counts[i] = 0;
  if (a.update == UpdateMode::Shared)
    for (int i = threadIdx.x; i < a.slots * a.n; i += S::kThreads) s.sums[i] = 0.f;
  for (int i = threadIdx.x; i < a.group_count * S::kWarps; i += S::kThreads) s.inertia[i] = 0.0;
  for (int i = threadIdx.x; i < BM; i += S::kThreads) s.rowcount[i] = s.scan[i] = 0;
  // table=stream: the ring runs on across point tiles, since every tile sweeps the same table
  // in the same order (a batch's tiles: their own problem's group, below): the fetches cycle
  // through the table, so the next tile's first stages are already in flight while this one
  // finishes. mma.sync: every thread's cp.async pieces, a barrier a stage. wgmma: a stage is a
  // whole centroid tile (the host's stage_chunks = chunks), two slots, each one bulk copy by
  // thread 0 counted by the slot's mbarrier; a tile's wgmmas wait for its slot's phase, and the
  // slot is refilled once they have completed. The cp.async ring spent 141 instructions a warp
  // per 32-dim chunk at 128/1024/2M, half the kernel's 1.27G (ncu source counters, H200, b20fd27).
  const int sc = a.stage_chunks;
  const int stage_elements = sc * BN * kChunkDims;
  const auto ring_bar = [&](int slot) { return smem_address(gemm_window_smem + a.smem.ring_full) + 8u * unsigned(slot); };
  int tile_slot = 0;  // s.tile[tile_slot]: the point tile being worked on; the other slot, the next
  int consumed = 0;  // wgmma ring: tiles taken from it, so slot consumed % 2 with phase parity consumed / 2 % 2
  // The next stage to fetch: its centroid tile and first chunk.
  int next_tile = 0, next_chunk = 0, stage_slot = 0, in_stage = 0;
  // A batch: a point tile sweeps its own problem's group alone, and the fetches follow the
  // point tiles' groups. Once a group's last stage is fetched the next fetch goes to the group
  // of the point tile after the current one: with at least two stages a group (the host's
  // condition) that fetch is made while the current tile is swept, when the next tile's number
  // has landed (requested as the current tile starts, before its fill's barrier).
  const auto group_of = [&](int point_tile) {
    return point_tile < a.point_tiles ? int(point_tile / a.batch_tiles) : 0;
  };
  int fetch_end = a.total_tiles;  // one past the fetched group's last centroid tile
  const auto follow_group = [&](int point_tile) {
    const GroupInfo next = a.groups[group_of(point_tile)];
    next_tile = next.first_tile;
    fetch_end = next.first_tile + next.tiles;
  };
  const auto advance = [&] {
    next_chunk += sc;
    if (next_chunk == a.chunks) {
      next_chunk = 0;
      if constexpr (batched)
        ++next_tile;  // the next group: at its first fetch
      else
        next_tile = next_tile + 1 == a.total_tiles ? 0 : next_tile + 1;
    }
  };
  if constexpr (batched) {  // the first fetches are the first tile's group
    request_point_tile(a, s, 0);
    __syncthreads();
    follow_group(s.tile[0]);
  }
  // The wgmma ring's next fetch into `slot` (thread 0 alone).
  const auto fetch_tile = [&](int slot) {
    if constexpr (batched)
      if (next_tile == fetch_end) follow_group(s.tile[tile_slot ^ 1]);
    const __half* source = a.table + (int64_t(next_tile) * a.chunks + next_chunk) * BN * kChunkDims;
    bulk_copy(smem_address(s.b + slot * stage_elements), source, unsigned(stage_elements) * 2u, ring_bar(slot));
    advance();
  };
  if (a.table_resident) {
    for (int tile = 0; tile < a.total_tiles; ++tile)
      for (int c = 0; c < a.chunks; ++c) copy_chunk<S>(a, s.b + (tile * a.chunks + c) * BN * kChunkDims, tile, c);
    cp_async_commit();
    cp_async_wait<0>();
    if constexpr (S::kWgmma) fence_shared_for_wgmma();
  } else if constexpr (S::kWgmma) {
    if (threadIdx.x == 0) {
      for (int slot = 0; slot < ring_stages(true); ++slot) mbarrier_init(ring_bar(slot));
      mbarrier_init_fence();
      for (int slot = 0; slot < ring_stages(true); ++slot) fetch_tile(slot);
    }
  } else {
#pragma unroll
    for (int slot = 0; slot < 2; ++slot) {  // two stages ahead (take_slot)
      copy_stage<S>(a, s.b + slot * stage_elements, next_tile, next_chunk);
      cp_async_commit();
      advance();
    }
  }
  if (!batched) request_point_tile(a, s, 0);
  __syncthreads();
  // points=staged: tile i + 1's rows are copied into the other buffer while tile i is worked
  // on (its number has landed by the barrier after tile i's fill), so the fill and the update
  // read shared memory instead of waiting on global loads; the copies are waited for before
  // the barrier that ends a tile.
  const int staged_floats = S::BM * a.n;
  if (a.staged_points) {
    if (s.tile[0] < a.point_tiles) stage_points<S>(a, s.staged, s.tile[0]);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
  }

  int tiles_since_flush = 0, buffer = 0;
  for (int tile = s.tile[0]; tile < a.point_tiles; tile = s.tile[tile_slot]) {
    request_point_tile(a, s, tile_slot ^ 1);
    if (a.update == UpdateMode::Shared && tiles_since_flush == a.flush_tiles) {
      flush_shared_sums<S>(a, s);
      __syncthreads();
      flush_counts<S>(a, s);
      __syncthreads();
      tiles_since_flush = 0;
    }
    ++tiles_since_flush;
    const int64_t base = int64_t(tile) * BM;
    const float* staged = a.staged_points ? s.staged + buffer * staged_floats : nullptr;
    fill_points<S>(a, s, base, scale, staged);
    if constexpr (S::kWgmma) fence_shared_for_wgmma();
    __syncthreads();
    if (a.staged_points) {
      const int next = s.tile[tile_slot ^ 1];
      if (next < a.point_tiles) stage_points<S>(a, s.staged + (buffer ^ 1) * staged_floats, next);
      cp_async_commit();
    } else if (S::kFillAhead && s.tile[tile_slot ^ 1] < a.point_tiles) {
      prefetch_point_tile<S>(a, s.tile[tile_slot ^ 1]);
    }
    const RowData rows = load_rows<S>(a, s, wm, g);

    Top2 top;
    reset(top);
    int q = 0;
    // mma.sync: the next chunk's slot, the resident table's, or the ring's, whose stage
    // boundary waits for the stage to land and, after the barrier, refills the slot two stages
    // back (three slots: the previous stage's).
    const auto take_slot = [&]() -> const __half* {
      if (a.table_resident) return s.b + (q++) * BN * kChunkDims;
      ++q;
      if (in_stage == 0) {
        cp_async_wait<1>();
        __syncthreads();
        const int refill = stage_slot + 2 < S::kRingStages ? stage_slot + 2 : stage_slot + 2 - S::kRingStages;
        if constexpr (batched)
          if (next_tile == fetch_end) follow_group(s.tile[tile_slot ^ 1]);
        copy_stage<S>(a, s.b + refill * stage_elements, next_tile, next_chunk);
        cp_async_commit();
        advance();
      }
      const __half* slot = s.b + stage_slot * stage_elements + in_stage * BN * kChunkDims;
      if (++in_stage == sc) {
        in_stage = 0;
        stage_slot = stage_slot + 1 == S::kRingStages ? 0 : stage_slot + 1;
      }
      return slot;
    };
    // A batch's tile: its problem's group alone.
    for (int gi = batched ? group_of(tile) : 0; gi < (batched ? group_of(tile) + 1 : a.group_count); ++gi) {
      const GroupInfo group = a.groups[gi];
      if constexpr (batched)
        if (a.table_resident) q = group.first_tile * a.chunks;
      if constexpr (S::kWgmma) {
        // A tile's wgmmas are issued back to back from its ring slot (or the resident table)
        // and waited for once before its keys fold. Two accumulator sets, so one tile's keys
        // fold under the next tile's wgmmas, took 251 registers and two blocks an SM against
        // this one's three, and ran 128/1024/2M in 4.427 ms against the mma.sync tile's 4.196
        // (H200, de38fad; ab/gemm-window-wgmma.txt).
        float acc[2][S::kNTiles][4];
        const float* norms = a.norms + group.first_tile * BN;
        for (int lt = 0; lt < group.tiles; ++lt) {
          const __half* tile_b = s.b + (group.first_tile + lt) * a.chunks * BN * kChunkDims;
          const int slot = consumed & 1;
          if (!a.table_resident) {
            mbarrier_wait(ring_bar(slot), unsigned(consumed >> 1) & 1u);
            tile_b = s.b + slot * stage_elements;
          }
          wgmma_fence();  // the last fold's reads of acc come before the wgmmas that overwrite it
          wgmma_tile<S>(s, tile_b, a.chunks, acc);
          wgmma_commit();
          wgmma_wait<0>();
          if (!a.table_resident) {
            __syncthreads();  // every warp's wgmmas have read the slot
            if (threadIdx.x == 0) fetch_tile(slot);
            ++consumed;
          }
          fold_product_keys<S>(acc, norms + lt * BN, rows, unsigned(lt * BN + 2 * t), a.index_mask, top, t);
        }
      } else {
        for (int lt = 0; lt < group.tiles; ++lt) {
          const int column0 = (group.first_tile + lt) * BN + wn * S::kWarpColumns;
          float acc[2][S::kNTiles][4];
          init_keys<S>(acc, a.norms + column0, rows, t);
          for (int kchunk = 0; kchunk < a.chunks; ++kchunk) mma_chunk<S>(s, take_slot(), kchunk, pieces, acc);
          fold_keys<S>(acc, unsigned(lt * BN + wn * S::kWarpColumns + 2 * t), a.index_mask, top);
        }
      }
      // The group's labels: row minima, then windows and candidate lists, then exact
      // arbitration of the ambiguous rows, then the update.
      publish_row_minima<S>(s, top, wm, wn, g, t);
      __syncthreads();
      list_candidates<S>(a, s, top, rows, model, a.norms + group.first_tile * BN, base, wm, wn, g, t);
      __syncthreads();
      arbitrate_rows<S>(a, s, group, gi, base);
      double inertia = 0.0;
      update_rows<S, Batched>(a, s, group, gi, base, staged, inertia);
      if (a.update != UpdateMode::Sorted) add_inertia<S>(s, gi, inertia);
      reset(top);
    }
    if (a.staged_points) cp_async_wait<0>();  // this thread's copies of the next tile
    __syncthreads();  // A is free again, and the next tile's number (and staged rows) have landed
    tile_slot ^= 1;
    buffer ^= 1;
  }
  cp_async_wait<0>();
  if constexpr (S::kWgmma)  // the ring's last two fetches land before the block's memory is released
    if (!a.table_resident && threadIdx.x == 0)
      for (int i = 0; i < ring_stages(true); ++i)
        mbarrier_wait(ring_bar((consumed + i) & 1), unsigned((consumed + i) >> 1) & 1u);
  if (a.update == UpdateMode::Shared) {
    flush_shared_sums<S>(a, s);
    __syncthreads();
  }
  if (shared_counts) flush_counts<S>(a, s);
  flush_inertia<S>(a, s);
#else
  __trap();  // unreachable: can_implement refuses devices below sm_80
#endif
}

// The instantiations of one tile config (one problem, and a batch in one launch), for
// kernel_*.cu.
#define MK_GEMM_WINDOW_KERNEL(BM, BN, WM, WN, MIN_BLOCKS)                                                   \
  KernelHandle kernel_##BM##x##BN##_##WM##x##WN(bool batched) {                                              \
    const void* function =                                                                                  \
        batched ? reinterpret_cast<const void*>(&gemm_window_kernel<BM, BN, WM, WN, MIN_BLOCKS, false, true>) \
                : reinterpret_cast<const void*>(&gemm_window_kernel<BM, BN, WM, WN, MIN_BLOCKS, false, false>); \
    return {function, 32 * (WM) * (WN), MIN_BLOCKS};                                                        \
  }
// A wgmma tile's (one warpgroup of 4 warp rows), for kernel_*_wgmma.cu, built for sm_90a.
#define MK_GEMM_WINDOW_WGMMA_KERNEL(BM, BN, MIN_BLOCKS)                                                 \
  KernelHandle kernel_##BM##x##BN##_wgmma(bool batched) {                                               \
    const void* function = batched ? reinterpret_cast<const void*>(&gemm_window_kernel<BM, BN, 4, 1, MIN_BLOCKS, true, true>) \
                                   : reinterpret_cast<const void*>(&gemm_window_kernel<BM, BN, 4, 1, MIN_BLOCKS, true, false>); \
    return {function, 128, MIN_BLOCKS};                                                                 \
  }

}  // namespace mk::gemm_window
