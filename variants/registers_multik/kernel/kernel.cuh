// registers-multik, runtime-compiled: the MultiK iteration kernel (see ../variant.cu for the
// design), after the prologue kernel that packs the centroids for __constant__ memory.
#pragma once

#include "config.cuh"
#include "prepare.cuh"

// keep_mask arrives as a kernel argument on purpose: with it in a register the index is
// packed into the mantissa by one LOP3 ((bits & keep) | c) instead of two.
//
// Each lane takes LANE_POINTS points per warp step (lane, lane+32, ...): every centroid
// operand fetched from constant memory then feeds LANE_POINTS distance chains, which halves
// the uniform-load traffic per point that the SASS of v1-v3 showed (~150 ULDC per step).
extern "C" __global__ void __launch_bounds__(BLOCK) multik_iteration(
    const float* __restrict__ points, long long m, double* __restrict__ sums,
    u64* __restrict__ counts, double* __restrict__ inertia, int* __restrict__ labels,
    unsigned keep_mask, const float* __restrict__ packed_global, u64 gen_counter) {
  // SMEM_SLOTS * NDIM floats of sums after the loop; with STAGE_ROWS, the warps' row stages during it.
  extern __shared__ __align__(16) float block_sums[];
#if GENERATED && ACCUM_MMA
  __shared__ float gen_rows[BLOCK / 32][LANE_POINTS * 32 * GEN_STRIDE];
  float* const warp_rows = gen_rows[threadIdx.x >> 5];
#endif
  __shared__ unsigned block_counts[SUMK];
#if CENTROIDS_SHARED || EXACT_FROM_SHARED
  // −2c and ‖c‖² in shared memory: the distance operands when centroids=shared, and the
  // divergent exact paths' table either way.
  __shared__ __align__(16) float s_coords[SUMK * NDIM];
  for (int j = threadIdx.x; j < SUMK * NDIM; j += BLOCK)
    s_coords[j] = c_centroids[(j / NDIM) * CSTRIDE + 1 + (j % NDIM)];
#if CENTROIDS_SHARED
  __shared__ __align__(16) float s_norms[SUMK];
  for (int j = threadIdx.x; j < SUMK; j += BLOCK) s_norms[j] = c_centroids[j * CSTRIDE];
#endif
  __syncthreads();
#endif
  const int lane = threadIdx.x & 31;
#if ACCUM_MMA
  const int g = lane >> 2, t = lane & 3;  // the lane's MMA fragment row and column
#endif
  const long long warps_total = (long long)gridDim.x * (BLOCK / 32);
  const long long warp_global = (long long)blockIdx.x * (BLOCK / 32) + (threadIdx.x >> 5);
  const long long step_points = 32LL * LANE_POINTS;
  const long long steps = (m + step_points - 1) / step_points;

  for (int s = threadIdx.x; s < SUMK; s += BLOCK) block_counts[s] = 0u;

#if ACCUM_MMA
  float acc[DCHUNKS][NTILES][4];
#pragma unroll
  for (int q = 0; q < DCHUNKS; ++q)
#pragma unroll
    for (int s = 0; s < NTILES; ++s) acc[q][s][0] = acc[q][s][1] = acc[q][s][2] = acc[q][s][3] = 0.f;
  // Lane (g,t): slot 8s+g over the points t, t+4 it feeds. Counts accumulate the one-hot
  // bit where it sits (weight 2^(8(s&3)), 2^20 for s&3==3), folded every 128 steps so a
  // 32-bit counter cannot overflow (8·LANE_POINTS·128 < 2^12 increments per fold).
#if LANE_POINTS > 3
#error "tile_scaled folds every 128 steps: more than 3 points per lane overflow the 2^20-weighted counter"
#endif
  unsigned tile_counts[NTILES], tile_scaled[NTILES];
#pragma unroll
  for (int s = 0; s < NTILES; ++s) tile_counts[s] = 0u, tile_scaled[s] = 0u;
  int steps_since_count_fold = 0;
#else
  float acc[SUMK][NDIM];
#pragma unroll
  for (int s = 0; s < SUMK; ++s)
#pragma unroll
    for (int d = 0; d < NDIM; ++d) acc[s][d] = 0.f;
  unsigned lane_counts[WORDS];
#pragma unroll
  for (int w = 0; w < WORDS; ++w) lane_counts[w] = 0u;
#endif
  // FP64 per lane: with one block a lane sums 10^5 distances, beyond FP32's 1e-5 budget.
  // FP32 partials are folded into FP64 every 16 steps: 64-bit conversions run at 1/8 rate.
  double lane_inertia[KMAX - KMIN + 1];
  float partial_inertia[KMAX - KMIN + 1];
#pragma unroll
  for (int k = 0; k <= KMAX - KMIN; ++k) lane_inertia[k] = 0.0, partial_inertia[k] = 0.f;
  int steps_since_fold = 0;

  const float max_centroid_norm = c_centroids[SUMK * CSTRIDE];

#if STAGE_ROWS
  // This warp's two stages of rows in the dynamic shared memory (the sums area after the loop):
  // the next step's rows copy in (cp.async) while this step computes from the other stage.
  float* const warp_stages = block_sums + (threadIdx.x >> 5) * 2 * STAGE_FLOATS;
  int stage = 0;
  if (warp_global < steps) stage_step_rows(warp_stages, points, m, warp_global * step_points, lane);
  cp_async_commit();
#endif
  for (long long step = warp_global; step < steps; step += warps_total) {
    const long long first = step * step_points;
#if STAGE_ROWS
    if (step + warps_total < steps)
      stage_step_rows(warp_stages + (stage ^ 1) * STAGE_FLOATS, points, m, (step + warps_total) * step_points, lane);
    cp_async_commit();
    cp_async_wait_one();  // this step's stage has landed (the next one's may still be in flight)
    __syncwarp();
    const float* const rows = warp_stages + stage * STAGE_FLOATS;
#elif ACCUM_MMA && !SOA && !GENERATED
    const bool full_step = first + step_points <= m;  // (the update's row loads skip their bounds test)
#endif
    float x[LANE_POINTS][NDIM];
    float xx[LANE_POINTS], tie_bound[LANE_POINTS];
    bool valid[LANE_POINTS];
    unsigned one_hot[LANE_POINTS][WORDS];
#if GENERATED && ACCUM_MMA
    __syncwarp();  // the previous step's accumulation has read warp_rows
#endif
#pragma unroll
    for (int p = 0; p < LANE_POINTS; ++p) {
      const long long i = first + p * 32 + lane;
      valid[p] = i < m;
#if GENERATED
      {
        const u64 row_counter = gen_counter + (u64)i * NDIM * COUNTER_INCREMENT;
        // Made for every lane, rows past m too: those are finite values whose one-hot is zero, so
        // they add nothing, and `valid ? made : 0` compiled to a branch around each value, which
        // kept the eight chains from overlapping (N=8 K=3..7 256M in 32M chunks: 10.68 against
        // 10.45 ms masked instead, one H200 at dab5629; 10.09 unmasked with the mixer's 32-bit
        // form against 10.25 masked, one H100 at 0573cfe, in core 9.40).
#pragma unroll
        for (int d = 0; d < NDIM; ++d) x[p][d] = generated_value(row_counter + (u64)d * COUNTER_INCREMENT);
#if ACCUM_MMA
#pragma unroll
        for (int d = 0; d < NDIM; ++d) warp_rows[(p * 32 + lane) * GEN_STRIDE + d] = x[p][d];
#endif
      }
#elif STAGE_ROWS
      // Rows past m were staged as zeros.
#pragma unroll
      for (int d = 0; d < NDIM; d += 4) {
        const float4 v = *reinterpret_cast<const float4*>(rows + (p * 32 + lane) * STAGE_STRIDE + d);
        x[p][d] = v.x; x[p][d + 1] = v.y; x[p][d + 2] = v.z; x[p][d + 3] = v.w;
      }
#elif !SOA && (NDIM % 4 == 0)
      // 16-byte loads: rows are 16-byte aligned when N is a multiple of 4.
#pragma unroll
      for (int d = 0; d < NDIM; d += 4) {
        const float4 v = valid[p] ? __ldg(reinterpret_cast<const float4*>(points + i * NDIM + d))
                                  : make_float4(0.f, 0.f, 0.f, 0.f);
        x[p][d] = v.x; x[p][d + 1] = v.y; x[p][d + 2] = v.z; x[p][d + 3] = v.w;
      }
#else
#pragma unroll
      for (int d = 0; d < NDIM; ++d) x[p][d] = valid[p] ? load_point(points, m, i, d) : 0.f;
#endif
      xx[p] = 0.f;
#pragma unroll
      for (int d = 0; d < NDIM; ++d) xx[p] = fmaf(x[p][d], x[p][d], xx[p]);
      // Forward error bound of the expanded distance (FMA chain of N+1 terms, each at most
      // ‖x‖²+2·max‖c‖² in magnitude) plus the index bits packed into the mantissa; twice it
      // bounds how far two computed distances can be mis-ordered.
      tie_bound[p] = TIE_SCALE * (xx[p] + 2.f * max_centroid_norm);
#pragma unroll
      for (int w = 0; w < WORDS; ++w) one_hot[p][w] = 0u;
    }

#pragma unroll
    for (int k = KMIN; k <= KMAX; ++k) {
      const int base = OFFSET(k);
      const unsigned index_mask = ~keep_mask;  // bits for KMAX indices (the tie bound assumes them)
      float best[LANE_POINTS], second[LANE_POINTS];
#pragma unroll
      for (int p = 0; p < LANE_POINTS; ++p) best[p] = second[p] = __int_as_float(0x7f7fffff);
      // Full unrolling makes every centroid operand a compile-time constant, but NVRTC time
      // grows with ΣK·N; past UNROLL_LIMIT the centroid loop stays a loop.
#if SUMK * NDIM <= UNROLL_LIMIT
#pragma unroll
#else
#pragma unroll 1
#endif
      for (int c = 0; c < k; ++c) {
#pragma unroll
        for (int p = 0; p < LANE_POINTS; ++p) {
          float dist = CEN_NORM(base + c);
#pragma unroll
          for (int d = 0; d < NDIM; ++d) dist = fmaf(x[p][d], CEN_COORD(base + c, d), dist);
#if PLANT_SLOWDOWN
#pragma unroll
          for (int d = 0; d < NDIM; ++d) dist = fmaf(x[p][d], CEN_COORD(base + c, d) * 1e-30f, dist);
#endif
          const float key = __int_as_float((__float_as_int(dist) & keep_mask) | c);
          second[p] = fminf(second[p], fmaxf(best[p], key));
          best[p] = fminf(best[p], key);
        }
      }
#pragma unroll
      for (int p = 0; p < LANE_POINTS; ++p) {
        int label = __float_as_int(best[p]) & index_mask;
        // The inertia term is base_term + expanded. An exact branch makes it its FP32 distance e
        // (EXACT_TERM): as e itself where registers allow, since going back through
        // ‖x‖² + (e − ‖x‖²) rounds e to the scale of ‖x‖² (data 500 away from the origin had 4.4e-4
        // of relative inertia error, H200, a93ebb5). With EXACT_INERTIA (the range's largest K
        // above 8) the kernel sits at its register cap at N=8 K=16 (block 1024: 64 registers),
        // where every form that adds e itself spilled 4 bytes (e beside a zeroed base_term, e
        // alone, e added inside each branch; RegistersMultiKCompile), so there the term goes
        // through ‖x‖² still.
        float expanded = best[p], base_term = xx[p];
#if EXACT_INERTIA
#define EXACT_TERM(e) (expanded = (e) - xx[p])
#else
#define EXACT_TERM(e) (expanded = (e), base_term = 0.f)
#endif
        if (k > 1 && second[p] - best[p] <= tie_bound[p]) {
          // Near-tie: decide with exact FP32 distances (rare).
          float exact_best = __int_as_float(0x7f7fffff);
          // Not unrolled: unrolling this cold path costs the hot path its registers.
#pragma unroll 1
          for (int c = 0; c < k; ++c) {
            float e = 0.f;
#pragma unroll
            for (int d = 0; d < NDIM; ++d) {
              const float diff = EXACT_DIFF(x[p][d], base + c, d);
              e = fmaf(diff, diff, e);
            }
            if (e < exact_best) {
              exact_best = e;
              label = c;
            }
          }
          EXACT_TERM(exact_best);
        } else if (EXACT_INERTIA || xx[p] + expanded < INERTIA_GUARD * (xx[p] + 2.f * max_centroid_norm)) {
          // The expansion's rounding (and the index bits in the mantissa) is absolute, of
          // order ‖x‖²·2^-20: when the winner is much nearer than that scale, or many index
          // bits are packed (large K), the inertia term is the exact FP32 distance instead.
          float e = 0.f;
#pragma unroll
          for (int d = 0; d < NDIM; ++d) {
            const float diff = EXACT_DIFF(x[p][d], base + label, d);
            e = fmaf(diff, diff, e);
          }
          EXACT_TERM(e);
        }
#undef EXACT_TERM
        if (valid[p]) {
          partial_inertia[k - KMIN] += base_term + expanded;
          const int bit = base + label;
#pragma unroll
          for (int w = 0; w < WORDS; ++w)
            if ((bit >> 5) == w) one_hot[p][w] |= 1u << (bit & 31);
          if (labels) labels[(long long)(k - KMIN) * m + first + p * 32 + lane] = label;
#if !ACCUM_MMA
#pragma unroll
          for (int c = 0; c < k; ++c) {
            const bool mine = (label == c);
#pragma unroll
            for (int d = 0; d < NDIM; ++d) acc[base + c][d] += mine ? x[p][d] : 0.f;
          }
#endif
        }
      }
    }

    if (++steps_since_fold == 16) {
      steps_since_fold = 0;
#pragma unroll
      for (int k = 0; k <= KMAX - KMIN; ++k) lane_inertia[k] += (double)partial_inertia[k], partial_inertia[k] = 0.f;
    }
#if !ACCUM_MMA
    // Counts: one ballot per slot; lane (s mod 32) keeps slot s.
#pragma unroll
    for (int p = 0; p < LANE_POINTS; ++p)
#pragma unroll
      for (int s = 0; s < SUMK; ++s) {
        const unsigned votes = __ballot_sync(FULL_MASK, (one_hot[p][s >> 5] >> (s & 31)) & 1u);
        if (lane == (s & 31)) lane_counts[s >> 5] += __popc(votes);
      }
#else
    // Sums on tensor cores: D[16 × 8 slots] += A[16 × 8 points] · B[8 points × 8 slots] with
    // A rows 0-7 = the TF32 part of dims q*8+g, rows 8-15 = the remainder, and B the one-hot
    // labels, exact in TF32. Lane (g,t) feeds points t and t+4 of each 8-point group.
    // The split truncates: hi = v with the low 13 bits cleared, lo = v − hi (exact), so a
    // pair keeps ~21 bits for 2 instructions instead of the 8 that cvt.rna.tf32 costs twice.
#if GENERATED
    __syncwarp();  // every lane's rows are in warp_rows
#endif
#pragma unroll
    for (int p = 0; p < LANE_POINTS; ++p) {
#if !GENERATED && !STAGE_ROWS
      const long long sub_first = first + p * 32;
#endif
#if !SOA && !GENERATED && !STAGE_ROWS
      // This lane's first operand: point t of the sub-step's first group, dim g.
      const float* lane_row = points + (sub_first + t) * NDIM + g;
#endif
#pragma unroll
      for (int group = 0; group < 4; ++group) {
        const int src0 = group * 8 + t, src1 = src0 + 4;
        unsigned hot0[WORDS], hot1[WORDS];
#pragma unroll
        for (int w = 0; w < WORDS; ++w) {
          hot0[w] = __shfl_sync(FULL_MASK, one_hot[p][w], src0) >> g;
          hot1[w] = __shfl_sync(FULL_MASK, one_hot[p][w], src1) >> g;
        }
#if !GENERATED && !STAGE_ROWS
        const long long p0 = sub_first + src0, p1 = sub_first + src1;
#endif
#pragma unroll
        for (int q = 0; q < DCHUNKS; ++q) {
          const int dim = q * 8 + g;
          float v0, v1;
#if GENERATED
          // Rows past m hold finite values that their zero one-hot (b0, b1) cancels.
          v0 = dim < NDIM ? warp_rows[(p * 32 + src0) * GEN_STRIDE + dim] : 0.f;
          v1 = dim < NDIM ? warp_rows[(p * 32 + src1) * GEN_STRIDE + dim] : 0.f;
#elif STAGE_ROWS
          v0 = dim < NDIM ? rows[(p * 32 + src0) * STAGE_STRIDE + dim] : 0.f;
          v1 = dim < NDIM ? rows[(p * 32 + src1) * STAGE_STRIDE + dim] : 0.f;
#else
#if !SOA
          if (full_step && (NDIM % 8 == 0)) {
            v0 = __ldg(lane_row + group * 8 * NDIM + q * 8);
            v1 = __ldg(lane_row + (group * 8 + 4) * NDIM + q * 8);
          } else
#endif
          {
            v0 = (dim < NDIM && p0 < m) ? load_point(points, m, p0, dim) : 0.f;
            v1 = (dim < NDIM && p1 < m) ? load_point(points, m, p1, dim) : 0.f;
          }
#endif
          // hi is masked explicitly: how many bits an MMA reads from a raw float is not
          // specified, and hi + lo must add up to v exactly.
          const unsigned hi0 = __float_as_uint(v0) & 0xffffe000u, hi1 = __float_as_uint(v1) & 0xffffe000u;
          const unsigned lo0 = __float_as_uint(v0 - __uint_as_float(hi0));
          const unsigned lo1 = __float_as_uint(v1 - __uint_as_float(hi1));
#pragma unroll
          for (int s = 0; s < NTILES; ++s) {
            const int word = s >> 2, j = s & 3;
            unsigned b0, b1;
            if (j < 3) {
              // 0x3f800000 (1.0f) = 0x3f8 << 20 is divisible by 2^0, 2^8 and 2^16.
              const unsigned m0 = hot0[word] & (1u << (8 * j));
              const unsigned m1 = hot1[word] & (1u << (8 * j));
              if (q == 0) tile_scaled[s] += m0 + m1;
              b0 = m0 * (0x3f800000u >> (8 * j));
              b1 = m1 * (0x3f800000u >> (8 * j));
            } else {
              const unsigned m0 = (hot0[word] >> 4) & (1u << 20);
              const unsigned m1 = (hot1[word] >> 4) & (1u << 20);
              if (q == 0) tile_scaled[s] += m0 + m1;
              b0 = m0 * 0x3f8u;
              b1 = m1 * 0x3f8u;
            }
            mma_tf32(acc[q][s][0], acc[q][s][1], acc[q][s][2], acc[q][s][3], hi0, lo0, hi1, lo1, b0, b1);
          }
        }
      }
    }
    if (++steps_since_count_fold == 128) {
      steps_since_count_fold = 0;
#pragma unroll
      for (int s = 0; s < NTILES; ++s) {
        tile_counts[s] += tile_scaled[s] >> ((s & 3) == 3 ? 20 : 8 * (s & 3));
        tile_scaled[s] = 0u;
      }
    }
#endif
#if STAGE_ROWS
    __syncwarp();  // every lane has read this stage before the next step copies into it
    stage ^= 1;
#endif
  }
#if STAGE_ROWS
  cp_async_wait_all();  // (only empty groups remain) before the stages become the sums area
#endif

  // Inertia: warp shuffle reduction in FP64, one global atomic per warp and K.
#pragma unroll
  for (int k = 0; k <= KMAX - KMIN; ++k) {
    double v = lane_inertia[k] + (double)partial_inertia[k];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(FULL_MASK, v, off);
    if (lane == 0) atomicAdd(inertia + k, v);
  }
  __syncthreads();  // block_counts zeroed before anyone adds
#if ACCUM_MMA
#pragma unroll
  for (int s = 0; s < NTILES; ++s) {
    unsigned c = tile_counts[s] + (tile_scaled[s] >> ((s & 3) == 3 ? 20 : 8 * (s & 3)));
    c += __shfl_xor_sync(FULL_MASK, c, 1);
    c += __shfl_xor_sync(FULL_MASK, c, 2);
    const int slot = s * 8 + g;
    if (t == 0 && slot < SUMK && c) atomicAdd(&block_counts[slot], c);
  }
#else
#pragma unroll
  for (int w = 0; w < WORDS; ++w) {
    const int s = w * 32 + lane;
    if (s < SUMK && lane_counts[w]) atomicAdd(&block_counts[s], lane_counts[w]);
  }
#endif

  // Sums: registers → shared memory, SMEM_SLOTS slots per pass → FP64 global atomics.
  for (int pass_begin = 0; pass_begin < SUMK; pass_begin += SMEM_SLOTS) {
    for (int j = threadIdx.x; j < SMEM_SLOTS * NDIM; j += BLOCK) block_sums[j] = 0.f;
    __syncthreads();
#if ACCUM_MMA
#pragma unroll
    for (int q = 0; q < DCHUNKS; ++q) {
      const int dim = q * 8 + g;
#pragma unroll
      for (int s = 0; s < NTILES; ++s) {
        const int slot0 = s * 8 + 2 * t, slot1 = slot0 + 1;
        if (dim < NDIM) {
          if (slot0 < SUMK && slot0 >= pass_begin && slot0 < pass_begin + SMEM_SLOTS)
            atomicAdd(&block_sums[(slot0 - pass_begin) * NDIM + dim], acc[q][s][0] + acc[q][s][2]);
          if (slot1 < SUMK && slot1 >= pass_begin && slot1 < pass_begin + SMEM_SLOTS)
            atomicAdd(&block_sums[(slot1 - pass_begin) * NDIM + dim], acc[q][s][1] + acc[q][s][3]);
        }
      }
    }
#else
#pragma unroll
    for (int s = 0; s < SUMK; ++s)
      if (s >= pass_begin && s < pass_begin + SMEM_SLOTS)
#pragma unroll
        for (int d = 0; d < NDIM; ++d)
          if (acc[s][d] != 0.f) atomicAdd(&block_sums[(s - pass_begin) * NDIM + d], acc[s][d]);
#endif
    __syncthreads();
    const int pass_slots = min(SMEM_SLOTS, SUMK - pass_begin);
    for (int j = threadIdx.x; j < pass_slots * NDIM; j += BLOCK)
      if (block_sums[j] != 0.f) atomicAdd(sums + (long long)pass_begin * NDIM + j, (double)block_sums[j]);
    __syncthreads();
  }
  for (int s = threadIdx.x; s < SUMK; s += BLOCK)
    if (block_counts[s]) atomicAdd(counts + s, (u64)block_counts[s]);
}
