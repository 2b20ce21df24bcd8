// tensor-multik, runtime-compiled: one Lloyd iteration for every K of the range, as one kernel
// launch. Each warp takes 32-point steps (grid-strided; at N=8 a dynamic tail, config.cuh):
//   fetch     points (or operands=prepared's words) into fragments: fetch.cuh, and the lambdas
//             below that keep the loads ahead of use;
//   distance  ‖c‖² + X·(−2C)ᵀ on tensor cores, transposed so each lane holds its point's row:
//             distance.cuh;
//   argmin    per K group, with the exact FP32 fix-up of near ties: argmin.cuh;
//   update    one-hot(labels)ᵀ·X on tensor cores, accumulated in fragments: update.cuh;
//   finish    fragments → FP64 sums, the last block divides: finish.inc.cuh.
// The step's parts and the finish that could not become functions without changing the machine
// code are fragments of this body (kernel/*.inc.cuh, #included where they stand; README.md).
// The host prepends the #defines of one specialisation (config.cuh lists them).
#pragma once

#include "argmin.cuh"
#include "config.cuh"
#include "distance.cuh"
#include "fetch.cuh"
#include "instructions.cuh"
#include "timeline.cuh"
#include "update.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS) tensor_multik_iteration(
    const float* __restrict__ points, long long m, float* centroids, double* sums, u64* counts_scratch,
    double* inertia_scratch, unsigned* blocks_done, u64* __restrict__ counts_out, double* __restrict__ inertia_out,
    int* __restrict__ labels, unsigned keep_mask, float x_scale, const uint4* __restrict__ frag_layout,
    const float* __restrict__ point_norms, const float* __restrict__ point_shift, float key_bias,
    unsigned long long* __restrict__ timeline) {
  extern __shared__ __align__(16) float smem[];
#if TIMELINE
  if (threadIdx.x == 0) {
    STAMP(1);
    if (timeline) {
      unsigned sm;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
      timeline[blockIdx.x * (TIMELINE_FIELDS + WARPS)] = sm;
    }
  }
#endif
  float* s_c = smem;                                   // SUMK × NDIM exact centroids
  float* s_norm = s_c + ((SUMK * NDIM + 3) & ~3);      // SUMK ‖c‖²
  float* warp_areas = s_norm + ((SUMK + 3) & ~3);     // WARPS × (stage ring + transpose buffer)
  __shared__ unsigned block_counts[SUMK];
  __shared__ double s_inertia[WARPS * KCOUNT];
  __shared__ float4 s_norm_quads[NT * 4];
  __shared__ float s_max_norm;
  __shared__ unsigned s_ticket;
#if CFRAG_SHARED && DIST_F16
  __shared__ uint4 s_bfrag[NT * KT * 32];  // lane's {c_hi0, c_hi1, c_lo0, c_lo1} of tile j, k-step kt
#elif CFRAG_SHARED
  __shared__ uint4 s_bfrag[NT * DK * 32];  // lane's {hi0, hi1, lo0, lo1} of tile j, k-step kk
#endif

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;

  float* ring = warp_areas + warp * WARP_FLOATS;
  float* tbuf = ring + RING_FLOATS;
  const unsigned stsm_base = PIN_IF_ROOM(stmatrix_base(tbuf, lane)),
                 stsm_half_base = PIN_IF_ROOM(stmatrix_half_base(tbuf, lane));
  // This lane's transposed row, and its quad of the tiles' ‖c‖² (+64 bytes per tile).
  const unsigned row_shared = PIN_IF_ROOM((unsigned)__cvta_generic_to_shared(tbuf + lane * TROW));
  const unsigned norms_shared = PIN_IF_ROOM((unsigned)__cvta_generic_to_shared(&s_norm_quads[t]));
  const unsigned ring_shared = (unsigned)__cvta_generic_to_shared(ring);
#if SWIZZLE16
  // Chunk lane + 32u lies 8u rows (512u bytes) below chunk lane, under the same swizzle: one
  // register instead of four keeps N=16 at 128 registers without spilling.
  const unsigned chunk_base = chunk_offset(lane, 0);
#define CHUNK_OFF(u) (chunk_base + 512 * (u))
#else
  unsigned chunk_off[CHUNKS_PER_LANE];
#pragma unroll
  for (int u = 0; u < CHUNKS_PER_LANE; ++u) chunk_off[u] = chunk_offset(lane, u);
#define CHUNK_OFF(u) chunk_off[u]
#endif
  const StageOffsets offsets = stage_offsets(lane);
  // Step indices fit 32 bits up to 2^36 points; only the last step can be partial.
  const int steps = (int)((m + 31) / 32);
  const int last_step_points = (int)(m - 32LL * (steps - 1));
#if LEAN_STEP
  // This lane's point is real below this step: one compare a step. (Pinned: from `steps` and
  // the lane, ptxas rebuilt the 64-bit last-step count every N=4 step, 6 instructions of 145.)
  const int lane_steps = (int)pinned(lane < last_step_points ? steps : steps - 1);
#endif
  // Pinned: otherwise ptxas reloads gridDim from the constant bank twice a step (2 % of the N=8
  // profile's stall samples on those loads).
  const int warps_total = (int)PIN_IF_ROOM(gridDim.x * WARPS);
  const int warp_global = blockIdx.x * WARPS + warp;
  // The step being fetched (one grid stride of warps apart); its source address is derived
  // from the index at each copy, which costs one wide multiply-add and no 64-bit loop state.
  int fetch = warp_global;
  const float* lane_src = pinned_pointer(points + 4 * lane);
  // Chunk u of a lane lies 512u bytes below chunk 0, swizzled or not.
  const unsigned lane_dst = PIN_IF_ROOM(ring_shared + CHUNK_OFF(0));
  int fetch_slot = 0;
  // Copies step `fetch` into ring slot fetch_slot (or commits an empty group past the end).
  // (fetch=registers has no ring, yet its kernels still compute the ring's pinned addresses
  // above: dropping them changes their machine code, which waits for a measured change.)
  [[maybe_unused]] auto fetch_next = [&]() {
    const unsigned dst = lane_dst + fetch_slot * (STEP_FLOATS * 4);
    // The device copy is padded with zero rows to whole steps (kAosPointPadding), so the
    // last step is copied like any other; its rows past M are never counted as points.
    if (fetch < steps) {
#pragma unroll
      for (int u = 0; u < CHUNKS_PER_LANE; ++u)
        if (lane + 32 * u < 8 * NDIM)
          cp_async16(dst + 512 * u, lane_src + (long long)fetch * STEP_FLOATS + 128 * u);
    }
    cp_async_commit();
    fetch += warps_total;
    fetch_slot = fetch_slot == STAGES - 1 ? 0 : fetch_slot + 1;
  };

  // The first steps' loads before the centroid prologue (EARLY_FETCH, config.cuh).
#if EARLY_FETCH
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) fetch_next();
#endif
  // operands=prepared at N=4, the same for its two steps of register loads (EARLY_PREPARED).
#if EARLY_PREPARED
  constexpr int kEarlySteps = 2;  // TWO_AHEAD's depth
  uint4 early_words[kEarlySteps][FRAG_VECS];
  float early_xx[kEarlySteps];
#pragma unroll
  for (int a = 0; a < kEarlySteps; ++a) {
    const long long first = min(warp_global + a * warps_total, steps - 1);
#pragma unroll
    for (int r = 0; r < FRAG_VECS; ++r) early_words[a][r] = __ldcg(frag_layout + lane + first * (32 * FRAG_VECS) + 32 * r);
    early_xx[a] = __ldcg(point_norms + lane + 32LL * first);
  }
#endif


#if DSCALE
  for (int j = threadIdx.x; j < SUMK * NDIM; j += BLOCK) s_c[j] = centroids[j] * x_scale;
#else
  for (int j = threadIdx.x; j < SUMK * NDIM; j += BLOCK) s_c[j] = centroids[j];
#endif
  for (int s = threadIdx.x; s < SUMK; s += BLOCK) block_counts[s] = 0u;
  if (threadIdx.x == 0) s_max_norm = 0.f;
#if PREPARED_OPERANDS
  // Prepared points are centred on the data's mean μ (their operands hold fl(x − μ)): the
  // distance product and ‖c‖² use fl(c − μ) the same way, while s_c keeps the exact centroids
  // for the fix-up. Scaling by a power of two commutes with that rounding.
  __shared__ float s_shift[NDIM];
  for (int d = threadIdx.x; d < NDIM; d += BLOCK) s_shift[d] = DSCALE ? point_shift[d] * x_scale : point_shift[d];
#endif
  __syncthreads();
  // The centroids are in: their load is the prologue's one round trip. Not at 128 registers:
  // there this stamp (here or after the prologue's last barrier) changed the step loop's
  // allocation, 48 bytes of spill at N=8 K=3..7.
#if BLOCK * MIN_BLOCKS > 512
  if (threadIdx.x == 0) STAMP(2);
#endif
  for (int s = threadIdx.x; s < SUMK; s += BLOCK) {
    float norm = 0.f;
    for (int d = 0; d < NDIM; ++d) norm = fmaf(OPERAND_C(s * NDIM + d), OPERAND_C(s * NDIM + d), norm);
    s_norm[s] = norm;
    atomicMax((int*)&s_max_norm, __float_as_int(norm));  // norms are >= 0: int order == float order
  }
  __syncthreads();
  const float max_norm = s_max_norm;

  // Centroid operands for the whole kernel (distance.cuh).
#if DIST_F16
  const float abs_centroids = ABS_SCALE * 2.f * sqrtf(max_norm);
  unsigned c_hi[NT][KT][2], c_lo[NT][KT][2];
#if PREPARED_OPERANDS
  centroid_fragments_f16(c_hi, c_lo, s_c, s_shift, g, t);
#else
  centroid_fragments_f16(c_hi, c_lo, s_c, nullptr, g, t);
#endif
#else
  unsigned b_hi[NT][DK][2], b_lo[NT][DK][2];
  centroid_fragments_tf32(b_hi, b_lo, s_c, g, t);
#endif
#if INT_GROUP_MIN
  // The bias sits in every accumulator, so the products' alignment errors scale with it: the
  // window grows by TIE_SCALE·key_bias. Its floor keeps min + window above min for any key
  // (see INT_GROUP_MIN at the argmin).
  const float tie_base = fmaxf(fmaf(TIE_SCALE, fmaf(2.f, max_norm, key_bias), abs_centroids), 0x1p-100f);
#elif DIST_F16
  const float tie_base = fmaf(TIE_SCALE, 2.f * max_norm, abs_centroids);
#else
  const float tie_base = TIE_SCALE * 2.f * max_norm;
#endif
#if LEAN_STEP
  // The window's FP16 floor ABS_SCALE·‖x‖ without a square root a step: for any s > 0,
  // ‖x‖ ≤ (‖x‖²/s + s)/2, equal at ‖x‖ = s, so the window stays one FMA on ‖x‖². s is the
  // largest centroid norm (points' norms are of its order), floored at ABS_SCALE/TIE_SCALE:
  // below that the relative term TIE_SCALE·‖x‖² outweighs the floor anyway, and the floor caps
  // what the bound adds to ‖x‖²'s coefficient at TIE_SCALE/2. (1/s rounded up by 2^-20: the
  // bound then holds for every ‖x‖, whatever the division's and the square root's error.)
  const float norm_pivot = fmaxf(sqrtf(max_norm), ABS_SCALE / TIE_SCALE);
  const float tie_per_xx = fmaf(0.5f * ABS_SCALE, (1.f + 0x1p-20f) / norm_pivot, TIE_SCALE);
  const float tie_const = fmaf(0.5f * ABS_SCALE, norm_pivot, tie_base);
#endif
  // The distance tiles' initial accumulators: lane t of tile j starts rows g and g+8 at
  // (‖c‖² of slot 8j+t, of slot 8j+4+t), stored as the quad the MMA reads as its C operand.
  for (int j = threadIdx.x; j < NT * 4; j += BLOCK) {
    const int tile = j >> 2, lane_t = j & 3;
    const int s0 = 8 * tile + lane_t, s1 = s0 + 4;
#if INT_GROUP_MIN
    const float n0 = (s0 < SUMK ? s_norm[s0] : 0.f) + key_bias, n1 = (s1 < SUMK ? s_norm[s1] : 0.f) + key_bias;
#else
    const float n0 = s0 < SUMK ? s_norm[s0] : 0.f, n1 = s1 < SUMK ? s_norm[s1] : 0.f;
#endif
    s_norm_quads[j] = make_float4(n0, n1, n0, n1);
  }
#if CFRAG_SHARED && DIST_F16
  if (warp == 0) {
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int kt = 0; kt < KT; ++kt)
        s_bfrag[(j * KT + kt) * 32 + lane] = make_uint4(c_hi[j][kt][0], c_hi[j][kt][1], c_lo[j][kt][0], c_lo[j][kt][1]);
  }
#elif CFRAG_SHARED
  if (warp == 0) {
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int kk = 0; kk < DK; ++kk)
        s_bfrag[(j * DK + kk) * 32 + lane] = make_uint4(b_hi[j][kk][0], b_hi[j][kk][1], b_lo[j][kk][0], b_lo[j][kk][1]);
  }
#endif
  __syncthreads();


  // Update accumulators: acc[q][s] = D[16 × 8] with rows 0-7 the hi and 8-15 the lo parts of
  // dims 8q..8q+7 and the columns of tile s (see flush_counts for which slots).
  float acc[UPDATE_TILES][NT][4];
  unsigned tile_counts[NT];
#pragma unroll
  for (int q = 0; q < UPDATE_TILES; ++q)
#pragma unroll
    for (int s = 0; s < NT; ++s) acc[q][s][0] = acc[q][s][1] = acc[q][s][2] = acc[q][s][3] = 0.f;
#pragma unroll
  for (int s = 0; s < NT; ++s) tile_counts[s] = 0u;
  // Inertia: FP32 partials per lane, every FOLD_STEPS steps summed over the warp and added to the
  // warp's FP64 total in shared memory (FP64 registers for every K would cost occupancy).
  float partial_inertia[KCOUNT];
#pragma unroll
  for (int k = 0; k < KCOUNT; ++k) partial_inertia[k] = 0.f;
  double* warp_inertia = s_inertia + warp * KCOUNT;
  if (lane < KCOUNT) warp_inertia[lane] = 0.0;
  __syncwarp();
  int steps_since_fold = 0;

#if !EARLY_FETCH && !FETCH_REGS
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) fetch_next();
#endif
  // The update's FP16 one-hot bit (bit g of each half) and the first lane of its point pairs.
  const unsigned half_bits = PIN_IF_ROOM(0x00010001u << g);
  const int pair_lane = (int)PIN_IF_ROOM(DIST_F16 ? 2 * t : t);
#if PIN_PAIR_SOURCES
  int pair_sources[2][2];
#pragma unroll
  for (int kg = 0; kg < 2; ++kg)
#pragma unroll
    for (int h = 0; h < 2; ++h) pair_sources[kg][h] = (int)PIN_IF_ROOM(16 * kg + 8 * h + pair_lane);
  const UpdateLane lane_ops{half_bits, pair_lane, pair_sources};
#else
  const UpdateLane lane_ops{half_bits, pair_lane};
#endif
#if PREPARED_OPERANDS
  // This lane's fragment words and its point's ‖x‖², one step ahead. Word r of vector i is
  // af[i][0][r] (N=4: vector 0 holds af[0][0][0..1], then af[1][0][0..1]).
  const uint4* frag_src = reinterpret_cast<const uint4*>(pinned_pointer(reinterpret_cast<const float*>(frag_layout + lane)));
  const float* norm_src = pinned_pointer(point_norms + lane);
  uint4 frag_words[FRAG_VECS];
  float next_xx;
  const int last_step = BLOCK * MIN_BLOCKS <= 512 ? (int)PIN_IF_ROOM(steps - 1) : steps - 1;  // (pinned: else recomputed every step)
#if TWO_AHEAD
  uint4 words_ahead[FRAG_VECS];
  float xx_ahead;
#endif
  auto load_fragment_pairs = [&](int fetch_step) {
    const uint4* src = frag_src + (long long)fetch_step * (32 * FRAG_VECS);
#if TWO_AHEAD
#pragma unroll
    for (int r = 0; r < FRAG_VECS; ++r) frag_words[r] = words_ahead[r];
    next_xx = xx_ahead;
#pragma unroll
    for (int r = 0; r < FRAG_VECS; ++r) words_ahead[r] = __ldcg(src + 32 * r);
    xx_ahead = __ldcg(norm_src + 32LL * fetch_step);
#else
#pragma unroll
    for (int r = 0; r < FRAG_VECS; ++r) frag_words[r] = __ldcg(src + 32 * r);
    next_xx = __ldcg(norm_src + 32LL * fetch_step);
#endif
  };
#if TWO_AHEAD
#pragma unroll
  for (int r = 0; r < FRAG_VECS; ++r) frag_words[r] = early_words[0][r], words_ahead[r] = early_words[1][r];
  next_xx = early_xx[0], xx_ahead = early_xx[1];
#define FETCH_DEPTH 2
#else
  load_fragment_pairs(min(warp_global, steps - 1));
#define FETCH_DEPTH 1
#endif
  // The loads above reach FETCH_DEPTH steps ahead; one covers a DRAM round trip only partly:
  // with the step shortened, N=4 stalled 2 cycles per instruction on them. The step
  // PREFETCH_AHEAD beyond the furthest fetched is asked into L2 meanwhile, so those loads hit L2.
#if PREFETCH_AHEAD
  auto prefetch_to_l2 = [&](int fetch_step) {
    const uint4* src = frag_src + (long long)fetch_step * (32 * FRAG_VECS);
#pragma unroll
    for (int r = 0; r < FRAG_VECS; ++r) asm volatile("prefetch.global.L2 [%0];" ::"l"(src + 32 * r));
    asm volatile("prefetch.global.L2 [%0];" ::"l"(norm_src + 32LL * fetch_step));
  };
#endif
#elif FETCH_REGS
  // Lane (g, t)'s fragment pairs of a step: rows g + 8r, dims 2t, 2t+1 (N=4: 2(t&1), +1, so lanes
  // t and t+2 read the same pair, their hi and lo features). The first step's go out now.
  const float* frag_src = pinned_pointer(points + g * NDIM + (NDIM <= 4 ? 2 * (t & 1) : 2 * t));
  float2 frag_pairs[4];
  auto load_fragment_pairs = [&](int fetch_step) {
    const float* src = frag_src + (long long)fetch_step * STEP_FLOATS;
#pragma unroll
    for (int r = 0; r < 4; ++r) frag_pairs[r] = __ldcg(reinterpret_cast<const float2*>(src + 8 * r * NDIM));
  };
  load_fragment_pairs(min(warp_global, steps - 1));
#endif
#if PINNED_RING
  // A lane's fragment pair and own point in ring slot 0; a step adds its slot's bytes.
  const unsigned frag_shared = PIN_IF_ROOM(ring_shared + 4 * offsets.frag[0]);
  // N=8: a quarter-warp's 8 own rows span 256 bytes, so reading chunk 0 of all of them and
  // then chunk 1 meets every bank twice (2 wavefronts per 8 lanes, ncu: 16 per step where 8
  // are ideal). Lanes 4-7 of each quarter read chunk 1 first: ‖x‖² does not care about order.
  const unsigned own_shared = PIN_IF_ROOM(ring_shared + 4 * offsets.own[0] + (NDIM == 8 ? 16 * ((lane >> 2) & 1) : 0));
#if NDIM == 8
  const unsigned own_shared_second = PIN_IF_ROOM(ring_shared + 4 * offsets.own[0] + 16 - 16 * ((lane >> 2) & 1));
#endif
#endif
  // The tiles' ‖c‖² quads held in registers (NORM_REG_TILES, config.cuh).
  float4 norm_quads[NORM_REG_TILES > 0 ? NORM_REG_TILES : 1];
#pragma unroll
  for (int j = 0; j < NORM_REG_TILES; ++j) norm_quads[j] = lds128(norms_shared + 64 * j);
  // (The clamped index keeps the unrolled, never-taken register branch of later tiles in range.)
  [[maybe_unused]] auto tile_norms = [&](int j) {  // (N ≤ 8 with f16x2 only)
    return j < NORM_REG_TILES ? norm_quads[j < NORM_REG_TILES ? j : 0] : lds128(norms_shared + 64 * j);
  };
#if DEFERRED
  hot_t pending_hot = 0;  // all zero: the first step's call adds nothing
  unsigned pending_partner = 0u, pending_a[2][4];
  const AfArray no_af = {};  // (the prepared update reads no distance fragments)
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int r = 0; r < 4; ++r) pending_a[i][r] = 0u;
#endif
  int ring_slot = 0;
#if DYNAMIC
  static_assert((TAIL_CHUNK & (TAIL_CHUNK - 1)) == 0 && TAIL_CHUNK >= 2, "TAIL_CHUNK: a power of two, 2 or more");
  // Every warp has `strided` grid-strided steps below tail_start; the counter hands out the
  // rest. Too few steps for a tail: all grid-strided.
  // (Only fast_end lives through the first loop: at N=8's 128 registers, tail_start beside it spilled.)
  const int strided = (steps - (steps >> TAIL_SHIFT)) / warps_total;
  const int fast_end = strided >= TAIL_STRIDED ? (strided - TAIL_STRIDED) * warps_total : steps;
#endif
  // One step of the warp: `step` is computed; operands=prepared loads `load_step`'s words (the
  // step FETCH_DEPTH ahead in this warp's order) and, with `prefetch`, asks a later one into L2.
  // `defer` (DEFERRED only): this step's update waits for the next step's first block.
  auto step_body = [&](const int step, const int load_step, const bool prefetch, const bool defer) {
#if !FETCH_REGS
    fetch_next();  // into the slot the previous step consumed (its readers passed the last __syncwarp)
    cp_async_wait<STAGES - 1>();
    __syncwarp();
    const float* X = ring + ring_slot * STEP_FLOATS;
#endif
#if LEAN_STEP
    const bool valid = step < lane_steps;
#else
    const bool valid = step < steps - 1 || lane < last_step_points;
#endif

    // The step's operands: ‖x‖², the window, the distance product's A fragments (a fragment of
    // this body, as are the two after it: see their first lines).
#include "step_operands.inc.cuh"

    // Per column block the distance products, the transpose and the argmin of every K group.
#include "step_distance_argmin.inc.cuh"
    // Which groups need the exact FP32 argmin, and that fix-up.
#include "step_fixup.inc.cuh"
    if (valid) {
#pragma unroll
      for (int k = 0; k < KCOUNT; ++k) partial_inertia[k] += terms[k];
#if STORE_LABELS
      if (labels) {
#pragma unroll
        for (int k = KMIN; k <= KMAX; ++k)
          labels[(long long)(k - KMIN) * m + 32LL * step + lane] = group_label(hot, k);
      }
#endif
    }

    // Every FOLD_STEPS steps: inertia partials to the warp's FP64 total (FP32 partials stay
    // short sums) and one-hot counts to the block's counters. 64 rather than 32 halves the fold's
    // share (6 % of the stall samples at N=8).
#if LEAN_STEP
    // As a vote, ptxas knows the branch is uniform: no reconvergence barrier around the fold and
    // no divergence check before the update's shuffles (N=4 1.3 % faster; alone at N=8 K=3..7 it
    // spilled 4 bytes for 0.2 %). (The steps in chunks of FOLD_STEPS with the fold after each, no
    // per-step test at all: N=4 0.5 % faster, N=8 K=16 3 % slower.)
    if (__all_sync(FULL_MASK, ++steps_since_fold == FOLD_STEPS)) {
#else
    if (++steps_since_fold == FOLD_STEPS) {
#endif
      steps_since_fold = 0;
      flush_counts(tile_counts, block_counts, g, t);
#pragma unroll
      for (int k = 0; k < KCOUNT; ++k) {
        float value = partial_inertia[k];
        partial_inertia[k] = 0.f;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) value += __shfl_xor_sync(FULL_MASK, value, off);
        if (lane == 0) warp_inertia[k] += (double)value;
      }
    }

#if DEFERRED
    if (defer) {
      // This step's update runs in the next step's first block (or after the loop).
      pending_hot = hot;
#if EARLY_PARTNER
      pending_partner = partner_word;
#endif
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int r = 0; r < 4; ++r) pending_a[i][r] = update_a[i][r];
    } else {
      update_step(hot, PARTNER_ARG, update_a, AF_ARG, X_ARG, tile_counts, acc, lane_ops, offsets, x_scale, g, t);
    }
#else
    update_step(hot, PARTNER_ARG, update_a, AF_ARG, X_ARG, tile_counts, acc, lane_ops, offsets, x_scale, g, t);
#endif
    // Every lane is done with this stage (and, fetch=registers, with its transposed row, which the
    // fix-up reads after the argmin) before the next step refills it.
    __syncwarp();
    ring_slot = ring_slot == STAGES - 1 ? 0 : ring_slot + 1;
  };

#if DYNAMIC
  // Grid-strided up to fast_end, as without the tail; then this warp's last TAIL_STRIDED
  // grid-strided steps (their loads already out), then chunks of the tail in claim order.
  int step = warp_global;
  for (; step < fast_end; step += warps_total) step_body(step, step + warps_total, true, true);
#if DEFERRED
  // The tail's steps update in place: the loop-1 step still pending goes now.
  update_step(pending_hot, pending_partner, pending_a, no_af, nullptr, tile_counts, acc, lane_ops, offsets, x_scale, g, t);
#endif
  const int tail_start = fast_end < steps ? fast_end + TAIL_STRIDED * warps_total : steps;
  // Lane 0's claim on the tail: asked now, read TAIL_STRIDED - FETCH_DEPTH steps later. It holds
  // the counter's raw answer: an instruction reading it would wait there for the atomic.
  unsigned claimed = 0u;
  if (lane == 0 && step < steps) claimed = atomicAdd(blocks_done + 1, 1u);
  // The step after x in this warp's order (x itself past the end: the loop is over).
  // (The claim's branch as a vote: ptxas then knows it is uniform.)
  auto successor = [&](const int x) {
    const bool strided_next = x + warps_total < tail_start;
    const bool in_chunk = x >= tail_start && ((x + 1 - tail_start) & (TAIL_CHUNK - 1)) != 0;
    int next = x >= steps ? x : strided_next ? x + warps_total : x + 1;
    if (__any_sync(FULL_MASK, x < steps && !strided_next && !in_chunk)) {
      next = tail_start + TAIL_CHUNK * (int)__shfl_sync(FULL_MASK, claimed, 0);
      if (lane == 0) claimed = atomicAdd(blocks_done + 1, 1u);
    }
    return next;
  };
  while (step < steps) {
    const int next = successor(step);
    step_body(step, next, false, false);
    step = next;
  }
#else
#if TWO_AHEAD
#pragma unroll 2
#endif
  for (int step = warp_global; step < steps; step += warps_total)
    step_body(step, TWO_AHEAD ? (int)((unsigned)step + 2u * (unsigned)warps_total) : step + warps_total, true, true);
#endif
#if DEFERRED && !DYNAMIC
  update_step(pending_hot, pending_partner, pending_a, no_af, nullptr, tile_counts, acc, lane_ops, offsets, x_scale, g, t);
#endif
  cp_async_wait<0>();
  if (lane == 0) STAMP(TIMELINE_FIELDS + warp);

  // The block's sums and inertia out; the last block divides (a fragment of this body).
#include "finish.inc.cuh"
}
