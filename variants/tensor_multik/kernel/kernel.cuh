// tensor-multik, runtime-compiled: one Lloyd iteration for every K of the range, as one kernel
// launch. Each warp takes 32-point steps (grid-strided; at N=8 a dynamic tail, config.cuh):
//   fetch     points (or operands=prepared's words) into fragments: fetch.cuh, and the lambdas
//             below that keep the loads ahead of use;
//   distance  ‖c‖² + X·(−2C)ᵀ on tensor cores, transposed so each lane holds its point's row:
//             distance.cuh;
//   argmin    per K group, with the exact FP32 fix-up of near ties: argmin.cuh;
//   update    one-hot(labels)ᵀ·X on tensor cores, accumulated in fragments: update.cuh;
//   finish    fragments → FP64 sums, the last block divides: at the end of this file (as a
//             function of its own, ptxas assigned its registers differently).
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

    // This lane's point: ‖x‖² and the error scale of its expansion (fetch=registers: after the
    // transpose, from the partial sums the fragments' lanes left in the row).
    float xx = 0.f;
#if !FETCH_REGS
    {
      float x_own[NDIM];
#if PINNED_RING
      const unsigned slot_bytes = ring_slot * (STEP_FLOATS * 4);
#pragma unroll
      for (int c = 0; c < NDIM / 4; ++c) {
#if NDIM == 8
        const float4 v = lds128((c ? own_shared_second : own_shared) + slot_bytes);
#else
        const float4 v = lds128(own_shared + slot_bytes + 16 * c);
#endif
        x_own[4 * c] = v.x, x_own[4 * c + 1] = v.y, x_own[4 * c + 2] = v.z, x_own[4 * c + 3] = v.w;
      }
#else
      load_own_point(X, offsets.own, x_own);
#endif
#pragma unroll
      for (int d = 0; d < NDIM; ++d) {
#if DSCALE
        x_own[d] *= x_scale;
#endif
        xx = fmaf(x_own[d], x_own[d], xx);
      }
    }
#elif PREPARED_OPERANDS
    xx = next_xx;
#endif
#if INT_GROUP_MIN
    const float xx_less_bias = xx - key_bias;  // a key plus this is the point's distance
#endif
    // The window TIE_SCALE·(‖x‖² + 2·max‖c‖²) (+ FP16's absolute floor), as FMAs on xx from the
    // kernel's constant part; the guard is GUARD_OVER_TIE windows.
    float tie_bound;
#if !ARGMIN_MASK || !LEAN_STEP
    float guard_bound;
#endif
    auto set_bounds = [&]() {
#if LEAN_STEP
      tie_bound = fmaf(tie_per_xx, xx, tie_const);  // FP16's subnormal floor included (tie_per_xx)
#elif DIST_F16
      // FP16's subnormal floor adds an absolute error, ABS_SCALE·(‖x‖ + 2·max‖c‖) of the window.
      float x_norm;
      asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(x_norm) : "f"(xx));
      tie_bound = fmaf(ABS_SCALE, x_norm, fmaf(TIE_SCALE, xx, tie_base));
#else
      tie_bound = fmaf(TIE_SCALE, xx, tie_base);
#endif
#if !ARGMIN_MASK || !LEAN_STEP
      guard_bound = GUARD_OVER_TIE * tie_bound;
#endif
    };
#if !XX_IN_TILE
    set_bounds();
#endif

#if DIST_F16
    // A fragments of the distance product (rows = points 16i+g and 16i+g+8, k = features), kept
    // for the update, which reads them transposed.
    unsigned af[2][FT][4];
#if XX_IN_TILE
    float xx_partials[2][2];  // rows 16i+g, 16i+g+8: this lane's two dims of ‖x‖²
#elif PREPARED_OPERANDS
    unsigned update_a[2][4];  // the update's A operands (features × points) of each half-step
#endif
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#if PREPARED_OPERANDS
#if NDIM == 8
      af[i][0][0] = frag_words[i].x, af[i][0][1] = frag_words[i].y, af[i][0][2] = frag_words[i].z,
      af[i][0][3] = frag_words[i].w;
#else
      af[i][0][0] = af[i][0][2] = i ? frag_words[0].z : frag_words[0].x;
      af[i][0][1] = af[i][0][3] = i ? frag_words[0].w : frag_words[0].y;
#endif
#elif NDIM <= 8
#if FETCH_REGS
      float2 r0 = frag_pairs[2 * i], r1 = frag_pairs[2 * i + 1];
#elif PINNED_RING
      const unsigned frag_step = frag_shared + ring_slot * (STEP_FLOATS * 4);
      float2 r0 = lds64(frag_step + 4 * (16 * i) * NDIM), r1 = lds64(frag_step + 4 * (16 * i + 8) * NDIM);
#else
      const int dim = NDIM <= 4 ? 2 * (t & 1) : 2 * t;
      float2 r0 = load_pair(X + offsets.frag[0], 16 * i, dim), r1 = load_pair(X + offsets.frag[0], 16 * i + 8, dim);
#endif
#if DSCALE
      r0.x *= x_scale, r0.y *= x_scale, r1.x *= x_scale, r1.y *= x_scale;
#endif
      unsigned hi0, lo0, hi1, lo1;
      split_half2(r0.x, r0.y, hi0, lo0);
      split_half2(r1.x, r1.y, hi1, lo1);
#if XX_IN_TILE
      xx_partials[i][0] = fmaf(r0.x, r0.x, r0.y * r0.y);
      xx_partials[i][1] = fmaf(r1.x, r1.x, r1.y * r1.y);
#endif
#if NDIM <= 4
      // (Features 8-15 as [lo | hi] instead, so that no register appears twice in the operand, with
      // the update then counting every part twice: 8 fewer moves a step, and 0.8 % slower at N=4.)
      const bool lo_lane = t >= 2;  // features 2t, 2t+1 are lo parts for t = 2, 3
      af[i][0][0] = af[i][0][2] = lo_lane ? lo0 : hi0;
      af[i][0][1] = af[i][0][3] = lo_lane ? lo1 : hi1;
#else
      af[i][0][0] = hi0, af[i][0][1] = hi1, af[i][0][2] = lo0, af[i][0][3] = lo1;
#endif
#else
#pragma unroll
      for (int kt = 0; kt < KT; ++kt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int h = 2 * kt + e;  // 8-dim block: dims 8h + 2t, +1
          unsigned hi0 = 0u, lo0 = 0u, hi1 = 0u, lo1 = 0u;
          if (h < DK) {
            float2 r0 = load_pair(X + offsets.frag[h], 16 * i, 8 * h + 2 * t);
            float2 r1 = load_pair(X + offsets.frag[h], 16 * i + 8, 8 * h + 2 * t);
#if DSCALE
            r0.x *= x_scale, r0.y *= x_scale, r1.x *= x_scale, r1.y *= x_scale;
#endif
            split_half2(r0.x, r0.y, hi0, lo0);
            split_half2(r1.x, r1.y, hi1, lo1);
          }
          af[i][kt][2 * e] = hi0, af[i][kt][2 * e + 1] = hi1;
          af[i][KT + kt][2 * e] = lo0, af[i][KT + kt][2 * e + 1] = lo1;
        }
#endif
    }
#if XX_IN_TILE
    // The pairs are split: their registers take the next step's, a whole step ahead of use.
    load_fragment_pairs(min(step + warps_total, steps - 1));
#endif
#else
    // A fragments of the distance product: rows = points 16i+g and 16i+g+8.
    unsigned a_hi[2][DK][4], a_lo[2][DK][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int kk = 0; kk < DK; ++kk) {
        const float* frag = X + offsets.frag[kk];
        const float2 r0 = load_pair(frag, 16 * i, 8 * kk + 2 * t);
        const float2 r1 = load_pair(frag, 16 * i + 8, 8 * kk + 2 * t);
        split_nearest(r0.x, a_hi[i][kk][0], a_lo[i][kk][0]);
        split_nearest(r1.x, a_hi[i][kk][1], a_lo[i][kk][1]);
        split_nearest(r0.y, a_hi[i][kk][2], a_lo[i][kk][2]);
        split_nearest(r1.y, a_hi[i][kk][3], a_lo[i][kk][3]);
      }
#endif

#if !(DIST_F16 && PREPARED_OPERANDS && !XX_IN_TILE)
    const unsigned update_a[2][4] = {};  // (only operands=prepared has update operands of its own)
#endif
#if DIST_F16
#define AF_ARG af
#else
#define AF_ARG update_a
#endif
#if FETCH_REGS
#define X_ARG nullptr
#else
#define X_ARG X
#endif
#if EARLY_PARTNER
#define PARTNER_ARG partner_word
#else
#define PARTNER_ARG 0u
#endif

    // Per K group: the winner goes straight into the one-hot word and the inertia term; groups
    // that need exact FP32 (a near tie, or a point so near its centroid that the expansion's
    // absolute error would show in the inertia) are flagged and fixed up after the scan, in
    // one warp-uniform branch that spread data rarely takes.
    hot_t hot = 0;
#if ARGMIN_MASK
#if NCB != 1
#error "argmin=mask needs every K group in one 32-slot column block (ΣK <= 32)"
#endif
    float nearest = 0.f;  // the smallest distance key of any group, for the near-point guard
#else
    // Flag bit k-KMIN set (as a float, so the FMA pipe builds it) when group k needs the exact
    // fix-up. The argmin's FMNMX runs on the half-rate ALU pipe, so the near-tie test counts
    // the centroids inside the window with saturating FFMAs instead of tracking a runner-up:
    // sat((best + window − key)·F) is 1 for a key inside, 0 outside, F = 2^20/window.
    float flags_f = 0.f;
    float window_scale;  // 2^20 / window; an approximate reciprocal is plenty for a scale
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(window_scale) : "f"(tie_bound * 0x1p-20f));
    const float near_scaled = (guard_bound - xx) * window_scale;
#endif
    float terms[KCOUNT];
#if !ARGMIN_MASK
    float best = 0.f, second = 0.f;  // running argmin of a K group split across column blocks
#endif
#pragma unroll
    for (int cb = 0; cb < NCB; ++cb) {
      // N ≤ 8: all of the block's products first, then the stores, so 8 independent MMA chains
      // keep the tensor pipe busy where one chain at a time would wait on each result. Wider
      // points go tile by tile (two chains), which keeps 32 fewer registers live.
      [[maybe_unused]] const int tiles = (NT - 4 * cb) < 4 ? (NT - 4 * cb) : 4;  // a constant once unrolled
#if DIST_F16
      // The small products first (x·c_lo), then x_hi·c_hi, as the TF32 path orders them.
      if (NDIM <= 8) {
        float d[2][4][4];
#if CFRAG_SHARED
        uint4 bf[4];
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj) bf[jj] = s_bfrag[(4 * cb + jj) * 32 + lane];
#endif
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj) {
          const int j = 4 * cb + jj;
          const float4 norms = tile_norms(j);
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            // N ≤ 4: [x_hi | x_lo] fills k = 0..7, so two k = 8 MMAs (c_lo, then c_hi) take the
            // lane's two words as they are. One m16n8k16 needed each word twice in an aligned
            // quad, and ptxas built a fresh quad for every MMA: 16 moves a step.
            if (NDIM <= 4)
              mma_f16_k8_from(d[i][jj], af[i][0][0], af[i][0][1], B_LO(bf[jj], j, 0, 0), norms);
            else
              mma_f16_from(d[i][jj], af[i][0], B_LO(bf[jj], j, 0, 0), B_LO(bf[jj], j, 0, 1), norms);
          }
        }
        if (NDIM > 4) {
#pragma unroll
          for (int jj = 0; jj < tiles; ++jj)
#pragma unroll
            for (int i = 0; i < 2; ++i)
              mma_f16(d[i][jj], af[i][0], B_HI(bf[jj], 4 * cb + jj, 0, 0), B_HI(bf[jj], 4 * cb + jj, 0, 1));
        } else {
#pragma unroll
          for (int jj = 0; jj < tiles; ++jj)
#pragma unroll
            for (int i = 0; i < 2; ++i) mma_f16_k8(d[i][jj], af[i][0][0], af[i][0][1], B_HI(bf[jj], 4 * cb + jj, 0, 0));
        }
#if XX_IN_TILE
        // Words D[.][2t+1] of the last tile are slots 8(NT-1)+4+t, free: they take this lane's
        // ‖x‖² partials of rows g and g+8.
#pragma unroll
        for (int i = 0; i < 2; ++i) d[i][NT - 1][1] = xx_partials[i][0], d[i][NT - 1][3] = xx_partials[i][1];
#elif PREPARED_OPERANDS
        // The update's operands are transposed now, so the loaded words are dead and their
        // registers take the next step's straight away: transposed at the update instead, the
        // loop would have to copy every word into the register the next load overwrites.
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          update_a[i][0] = transpose8x8(af[i][0][0]);  // features 0-7, points 0-7
          update_a[i][2] = transpose8x8(af[i][0][1]);  // features 0-7, points 8-15
          update_a[i][1] = NDIM <= 4 ? 0u : transpose8x8(af[i][0][2]);  // features 8-15 (N=4: repeats, zero)
          update_a[i][3] = NDIM <= 4 ? 0u : transpose8x8(af[i][0][3]);
        }
#if TWO_AHEAD
        load_fragment_pairs((int)min((unsigned)load_step, (unsigned)last_step));
#else
        // (The signed form: the unsigned one above measured 0.5 % slower at N=8.)
        load_fragment_pairs(min(load_step, last_step));
#endif
#if PREFETCH_AHEAD
        // (Unsigned: no overflow near 2^31 steps.)
        if (prefetch)
          prefetch_to_l2((int)min((unsigned)step + (FETCH_DEPTH + PREFETCH_AHEAD) * (unsigned)warps_total, (unsigned)last_step));
#endif
#endif
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj)
#pragma unroll
          for (int i = 0; i < 2; ++i)
            store_fragment(tbuf, stsm_base, stsm_half_base, i, jj, HALF_TILE(4 * cb + jj), d[i][jj], lane);
      } else {
#if CFRAG_SHARED
        f16_wide_distance_block(cb, af, s_bfrag, norms_shared, tbuf, stsm_base, stsm_half_base, lane);
#else
        f16_wide_distance_block(cb, af, c_hi, c_lo, norms_shared, tbuf, stsm_base, stsm_half_base, lane);
#endif
      }
#else
#if CFRAG_SHARED
      tf32_distance_block(cb, a_hi, a_lo, s_bfrag, norms_shared, tbuf, stsm_base, stsm_half_base, lane);
#else
      tf32_distance_block(cb, a_hi, a_lo, b_hi, b_lo, norms_shared, tbuf, stsm_base, stsm_half_base, lane);
#endif
#endif
      __syncwarp();
      // This lane's point: slots 32cb + 4h + u sit in chunk h, word u.
      float v[8][4];
#pragma unroll
      for (int h = 0; h < 8; ++h)
        if (32 * cb + 4 * h < SUMK) {
          const float4 chunk = lds128(row_shared + 16 * h);
          v[h][0] = chunk.x, v[h][1] = chunk.y, v[h][2] = chunk.z, v[h][3] = chunk.w;
        }
#if XX_IN_TILE
      {
        // ‖x‖² from the partials of the lanes t = 0..3 (N=4: t = 0, 1; lanes 2, 3 repeat their dims).
        const float4 partials = lds128(row_shared + 16 * (2 * NT - 1));
        xx = NDIM <= 4 ? partials.x + partials.y : (partials.x + partials.y) + (partials.z + partials.w);
        set_bounds();
      }
#endif
#if DEFERRED
      if (defer && cb == 0) update_step(pending_hot, pending_partner, pending_a, no_af, nullptr, tile_counts, acc, lane_ops, offsets, x_scale, g, t);
#endif
      __syncwarp();  // tbuf is rewritten by the next block or step

#if ARGMIN_MASK
      float edges[KCOUNT];
#pragma unroll
      for (int k = KMIN; k <= KMAX; ++k) {
        float scratch[KMAX];
#pragma unroll
        for (int c = 0; c < k; ++c) {
          const int col = OFFSET(k) + c;
          scratch[c] = v[col >> 2][col & 3];
        }
#if INT_GROUP_MIN
        // group_min=int: keys carry +key_bias from their accumulators, so the keys of most points
        // are positive and their bits order as integers; sm_90 ptxas fuses integer mins into a
        // three-input min (up to two keys an instruction where FMNMX takes one). Where two or
        // more keys of a group are negative the integer min returns the negative key nearest
        // zero, above the true minimum; every negative key then lies below min + window (the
        // window > 0 and wider than an ulp of the key) and gets its bit, so the group has at
        // least two bits and goes to the exact fix-up like a near tie. The min is exact otherwise.
        // (A pairwise tree: chains through __vimin3_s32 fuse more but spilled 4-16 bytes at N=8
        // under the 128-register cap, NVRTC.)
        int key_bits[KMAX];
#pragma unroll
        for (int c = 0; c < k; ++c) key_bits[c] = __float_as_int(scratch[c]);
#pragma unroll
        for (int stride = 1; stride < KMAX; stride *= 2)
#pragma unroll
          for (int i = 0; i + stride < KMAX; i += 2 * stride)
            if (i + stride < k) key_bits[i] = min(key_bits[i], key_bits[i + stride]);
        const float group_best = __int_as_float(key_bits[0]);
        terms[k - KMIN] = xx_less_bias + group_best;
#else
        const float group_best = tree_reduce(scratch, k, [](float a, float b) { return fminf(a, b); });
        terms[k - KMIN] = xx + group_best;
#endif
        edges[k - KMIN] = group_best + tie_bound;
        nearest = k == KMIN ? group_best : fminf(nearest, group_best);
      }
      // Slots from the highest down, each appending its bit below the ones before; eight slots
      // per chain, so NT independent chains instead of one dependent SHF per slot.
      unsigned chains[NT];
#pragma unroll
      for (int j = 0; j < NT; ++j) chains[j] = 0u;
#pragma unroll
      for (int k = KMAX; k >= KMIN; --k)
#pragma unroll
        for (int c = k - 1; c >= 0; --c) {
          const int s = OFFSET(k) + c;
          const float below = v[s >> 2][s & 3] - edges[k - KMIN];
          chains[s >> 3] = __funnelshift_l(__float_as_uint(below), chains[s >> 3], 1);  // (chain << 1) | sign
        }
      // Each chain holds at most 8 bits, so the adds never carry: one IMAD or LEA per chain where
      // shift-and-or took two.
      hot = chains[0];
#pragma unroll
      for (int j = 1; j < NT; ++j) hot += chains[j] << (8 * j);
#else
      packed_argmin(cb, v, xx, tie_bound, guard_bound, window_scale, near_scaled, keep_mask, best, second, hot, flags_f,
                    terms);
#endif
    }
#if ARGMIN_MASK
    // A group with no bit (a zero window: all-zero data) or with several needs the fix-up, as
    // does a point nearer to any centroid than the guard.
#if INT_GROUP_MIN
#define GUARD_KEY fmaf(GUARD_OVER_TIE, tie_bound, -xx_less_bias)
#else
#define GUARD_KEY fmaf(GUARD_OVER_TIE, tie_bound, -xx)
#endif
    // (LEAN_STEP: without short-circuits, no branch and reconvergence a step: N=4 and N=8 K=16
    // 1 % faster.)
#if LEAN_STEP
    const bool needs_exact = valid & ((__popc((unsigned)hot) != KCOUNT) | (nearest < GUARD_KEY));
#else
    const bool needs_exact = valid && (__popc((unsigned)hot) != KCOUNT || nearest < GUARD_KEY);
#endif
#undef GUARD_KEY
    if (!valid) hot = 0;
    // The update's partner word is shuffled before the fix-up branch (and again inside it, where
    // the word may change): after it, its PRMT was the step's largest single stall, 3 % of the
    // samples at N=8, waiting on this shuffle.
#if EARLY_PARTNER
    unsigned partner_word = __shfl_xor_sync(FULL_MASK, (unsigned)hot, DIST_F16 ? 1 : 4);
#endif
    if (__any_sync(FULL_MASK, EXACT_INERTIA || needs_exact)) {
      // (Deriving the flags under `if (needs_exact)` instead saves N=16 a 4-byte spill and N=8
      // 14 registers, but measured 6 % slower at N=8 and 1.5 % at N=16.)
      unsigned flags = 0u;
#if LEAN_STEP
      const float guard_bound = GUARD_OVER_TIE * tie_bound;
#endif
#pragma unroll
      for (int k = KMIN; k <= KMAX; ++k) {
        const unsigned field = (unsigned)(hot >> OFFSET(k)) & (k >= 32 ? ~0u : (1u << k) - 1u);
        if (valid && (field == 0u || (field & (field - 1u)) != 0u || terms[k - KMIN] < guard_bound))
          flags |= 1u << (k - KMIN);
      }
#else
    if (!valid) hot = 0, flags_f = 0.f;
    if (__any_sync(FULL_MASK, EXACT_INERTIA || flags_f != 0.f)) {
      // flags: groups needing a full exact argmin (near tie or near point). EXACT_INERTIA
      // also takes every other group's term as the exact distance to its winner.
      const unsigned flags = valid ? (unsigned)flags_f : 0u;
#endif
      float x_exact[NDIM];
#if FETCH_REGS
      {
        const float4* own_row = reinterpret_cast<const float4*>(points + (32LL * step + lane) * NDIM);
#pragma unroll
        for (int c = 0; c < NDIM / 4; ++c) {
          const float4 q = __ldcg(own_row + c);
          x_exact[4 * c] = q.x, x_exact[4 * c + 1] = q.y, x_exact[4 * c + 2] = q.z, x_exact[4 * c + 3] = q.w;
        }
      }
#else
      load_own_point(X, offsets.own, x_exact);
#endif
#if DSCALE
#pragma unroll
      for (int d = 0; d < NDIM; ++d) x_exact[d] *= x_scale;
#endif
#pragma unroll
      for (int k = KMIN; k <= KMAX; ++k) {
        const unsigned bit = 1u << (k - KMIN);
        const float* group = s_c + OFFSET(k) * NDIM;
        const int approx = group_label(hot, k);
        if (flags & bit) {
          int label = approx < 0 ? 0 : approx;  // argmin=mask: an empty field has no approximate winner
          float exact_best = __int_as_float(0x7f7fffff);
#if NCB == 1
          // The step's transposed row is still in tbuf (one column block: nothing rewrote it),
          // so only the centroids whose expanded distance lies within two windows of the
          // group's best get an exact distance — usually two — not all k. The true winner is
          // among them: its expanded distance is within one window of the best. Ascending
          // order keeps the lowest index on an exact tie, as the full scan did.
          const float* row = tbuf + lane * TROW + OFFSET(k);
          float expanded[KMAX];
          float group_min = __int_as_float(0x7f7fffff);
#pragma unroll
          for (int c = 0; c < k; ++c) expanded[c] = row[c], group_min = fminf(group_min, expanded[c]);
          const float reach = group_min + 2.f * tie_bound;
          unsigned candidates = 0u;
#pragma unroll
          for (int c = 0; c < k; ++c) candidates |= (expanded[c] <= reach ? 1u : 0u) << c;
#pragma unroll 1
          while (candidates) {
            const int cc = __ffs(candidates) - 1;
            candidates &= candidates - 1u;
            const float e = exact_distance(x_exact, group + cc * NDIM);
            if (e < exact_best) exact_best = e, label = cc;
          }
#else
#pragma unroll 1
          for (int cc = 0; cc < k; ++cc) {
            const float e = exact_distance(x_exact, group + cc * NDIM);
            if (e < exact_best) exact_best = e, label = cc;
          }
#endif
          terms[k - KMIN] = exact_best;
#if ARGMIN_MASK
          // The field may hold several bits (or none): it becomes exactly the exact winner's.
          hot = (hot & ~((k >= 32 ? ~0u : (1u << k) - 1u) << OFFSET(k))) | (1u << (OFFSET(k) + label));
#else
          hot ^= (((hot_t)1 << approx) ^ ((hot_t)1 << label)) << OFFSET(k);
#endif
        } else if (EXACT_INERTIA && valid) {
          terms[k - KMIN] = exact_distance(x_exact, group + approx * NDIM);
        }
      }
#if EARLY_PARTNER
      partner_word = __shfl_xor_sync(FULL_MASK, (unsigned)hot, DIST_F16 ? 1 : 4);
#endif
    }
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

  // Inertia: warp totals meet in shared memory and each block adds one FP64 atomic per K.
  // (An atomic per warp put every warp of the grid on the same KCOUNT addresses at the end of
  // the kernel, where they serialise.)
#pragma unroll
  for (int k = 0; k < KCOUNT; ++k) {
    double value = (double)partial_inertia[k];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) value += __shfl_xor_sync(FULL_MASK, value, off);
    if (lane == 0) warp_inertia[k] += value;
  }
  __syncthreads();  // every warp is done with its ring: the area holds the block's sums now
  if (threadIdx.x == 0) STAMP(3);
  for (int k = threadIdx.x; k < KCOUNT; k += BLOCK) {
    double value = 0.0;
    for (int w = 0; w < WARPS; ++w) value += s_inertia[w * KCOUNT + k];
#if DSCALE
    value *= 1.0 / ((double)x_scale * (double)x_scale);  // distances were ×x_scale² (a power of two)
#endif
    if (value != 0.0) atomicAdd(inertia_scratch + k, value);
  }
  // Each warp's sums go to its own (now idle) ring as plain stores: every (slot, dim) is one
  // lane's, so no shared atomics (float ones are CAS loops, contended by every warp of the
  // block). The ring holds ≥ 64·NDIM floats ≥ SUMK·NDIM.
  flush_counts(tile_counts, block_counts, g, t);
#if UPDATE_F16
  // Column c's one-hot value was 2^(c-24) and the points were scaled by x_scale (a power of
  // two): both come off exactly here.
  const float unscale0 = __int_as_float((127 + 24 - 2 * t) << 23) / x_scale, unscale1 = 0.5f * unscale0;
#else
  const float unscale0 = 1.f, unscale1 = 1.f;
#endif
#if UPDATE_T
  (void)unscale1;  // (slots × features: each row has its own unscale, below)
#endif
#if DIST_F16
  static_assert(SUMK * FEATS <= WARP_FLOATS, "a warp's ring holds its slots × features");
#endif
#if UPDATE_T
  // Rows are slots (16p + g and 16p + 8 + g, one-hot value 2^(g-24) for both), columns the
  // features 2t, 2t+1.
  {
    const float unscale_row = __int_as_float((127 + 24 - g) << 23) / x_scale;
#pragma unroll
    for (int p = 0; p < PAIRS; ++p) {
      const int slot0 = 16 * p + g, slot1 = slot0 + 8;
      if (slot0 < SUMK) {
        ring[slot0 * FEATS + 2 * t] = acc[0][p][0] * unscale_row;
        ring[slot0 * FEATS + 2 * t + 1] = acc[0][p][1] * unscale_row;
      }
      if (slot1 < SUMK) {
        ring[slot1 * FEATS + 2 * t] = acc[0][p][2] * unscale_row;
        ring[slot1 * FEATS + 2 * t + 1] = acc[0][p][3] * unscale_row;
      }
    }
  }
#elif DIST_F16
  // Rows are features: each (slot, feature) to the ring.
#pragma unroll
  for (int ft = 0; ft < FT; ++ft)
#pragma unroll
    for (int s = 0; s < NT; ++s) {
      const int slot0 = TILE_SLOT(s, 2 * t), slot1 = TILE_SLOT(s, 2 * t + 1), feature = 16 * ft + g;
      if (slot0 < SUMK) {
        ring[slot0 * FEATS + feature] = acc[ft][s][0] * unscale0;
        ring[slot0 * FEATS + feature + 8] = acc[ft][s][2] * unscale0;
      }
      if (slot1 < SUMK) {
        ring[slot1 * FEATS + feature] = acc[ft][s][1] * unscale1;
        ring[slot1 * FEATS + feature + 8] = acc[ft][s][3] * unscale1;
      }
    }
#endif
#if DIST_F16
  // A dimension sums its hi and lo features over the block's warps.
  __syncthreads();
  for (int j = threadIdx.x; j < SUMK * NDIM; j += BLOCK) {
    const int slot = j / NDIM, dim = j - slot * NDIM;
    const int hi = slot * FEATS + dim, lo = slot * FEATS + LO_FEATURE(dim);
    float value = 0.f;
#pragma unroll 4
    for (int w = 0; w < WARPS; ++w) value += warp_areas[w * WARP_FLOATS + hi] + warp_areas[w * WARP_FLOATS + lo];
    if (value != 0.f) atomicAdd(sums + j, (double)value);
  }
#else
#pragma unroll
  for (int q = 0; q < DK; ++q) {
    const int dim = 8 * q + g;
#pragma unroll
    for (int s = 0; s < NT; ++s) {
      const int slot0 = TILE_SLOT(s, 2 * t), slot1 = TILE_SLOT(s, 2 * t + 1);
      if (dim < NDIM) {
        if (slot0 < SUMK) ring[slot0 * NDIM + dim] = (acc[q][s][0] + acc[q][s][2]) * unscale0;
        if (slot1 < SUMK) ring[slot1 * NDIM + dim] = (acc[q][s][1] + acc[q][s][3]) * unscale1;
      }
    }
  }
  __syncthreads();
  for (int j = threadIdx.x; j < SUMK * NDIM; j += BLOCK) {
    float value = 0.f;
#pragma unroll 4
    for (int w = 0; w < WARPS; ++w) value += warp_areas[w * WARP_FLOATS + j];
    if (value != 0.f) atomicAdd(sums + j, (double)value);
  }
#endif
  for (int s = threadIdx.x; s < SUMK; s += BLOCK)
    if (block_counts[s]) atomicAdd(counts_scratch + s, (u64)block_counts[s]);
  // The last block to arrive turns the sums into centroids. Every other block has read the
  // old centroids (at its start) before it arrived, so they can be overwritten in place.
  // Ticket: thread 0 releases the block's atomics (ordered before it by the barrier) and, in
  // the last block, acquires everyone's. Only one thread pays the fence, and acq_rel is
  // lighter than the sequentially consistent __threadfence.
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned ticket;
    asm volatile("fence.acq_rel.gpu;\n atom.relaxed.gpu.global.add.u32 %0, [%1], 1;" : "=r"(ticket) : "l"(blocks_done)
                 : "memory");
    if (ticket == gridDim.x - 1) asm volatile("fence.acq_rel.gpu;" ::: "memory");
    s_ticket = ticket;
    STAMP(4);
  }
  __syncthreads();
  if (s_ticket != gridDim.x - 1) return;
  // One L2 round trip for the whole division: each thread loads its (slot, dim) sum and the
  // slot's count together (a loop over dims per slot made NDIM+1 dependent round trips, at
  // the end of the kernel's critical path).
  for (int j = threadIdx.x; j < SUMK * NDIM; j += BLOCK) {
    const int s = j / NDIM;
    const u64 count = (u64)__ldcg((const long long*)(counts_scratch + s));
    const double sum = __ldcg(sums + j);
#if SUMS_OUT
    // A split step's accumulate phase: the sums stay, in data units, for the application's update
    // (variants/step.hpp); the host clears them before the next launch.
#if PREPARED_OPERANDS
    sums[j] = sum + (double)count * (double)point_shift[j - s * NDIM];  // the sums were of centred points
#endif
#else
    // An empty cluster keeps its previous centroid (the documented policy).
#if PREPARED_OPERANDS
    // The sums are of the centred points.
    if (count) centroids[j] = (float)((double)point_shift[j - s * NDIM] + sum * (1.0 / (double)count));
#else
    if (count) centroids[j] = (float)(sum * (1.0 / (double)count));
#endif
    sums[j] = 0.0;
#endif
    if (j - s * NDIM == 0) counts_out[s] = count;
  }
  for (int k = threadIdx.x; k < KCOUNT; k += BLOCK) {
    inertia_out[k] = __ldcg(inertia_scratch + k);
    inertia_scratch[k] = 0.0;
  }
  __syncthreads();  // every count is read before it is cleared
  for (int s = threadIdx.x; s < SUMK; s += BLOCK) counts_scratch[s] = 0ull;
  if (threadIdx.x == 0) *blocks_done = 0u;
#if DYNAMIC
  if (threadIdx.x == 0) blocks_done[1] = 0u;  // every claim was made before its block's ticket
#endif
#if TIMELINE
  if (threadIdx.x == 0 && timeline) {
    unsigned long long now_ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now_ns)::"memory");
    timeline[gridDim.x * (TIMELINE_FIELDS + WARPS)] = now_ns;
  }
#endif
}
