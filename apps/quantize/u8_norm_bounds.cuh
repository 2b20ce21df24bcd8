#pragma once
// gpu-u8-norm's bounded steps: exact group bounds in the manner of Yinyang k-means (Ding et
// al., ICML 2015). The centroids are split once into G ≤ 8 groups of neighbouring colours; each
// pixel keeps its label, an upper bound on its distance to that centroid and, per group, a lower
// bound on its distance to every other centroid of the group. A step is two launches:
//   u8_group_filter widens every pixel's bounds by how far the centroids moved; a pixel whose
//     upper bound stays below every group's lower bound keeps its label, which is then its exact
//     nearest centroid, at no search and no atomics; the others are queued;
//   u8_group_search searches the queued pixels over the groups whose bound failed, and only a
//     pixel whose label changes moves its bytes between the clusters' integer totals, which the
//     run keeps from step to step (exact in any order); its last block publishes the totals and
//     the inertia as the step's accumulators.
//
// The bounds are stored against cumulative moves, so a skipped pixel writes nothing: C_j sums
// centroid j's moves and D_g the largest move in group g, each step, rounded up. A pixel stores
// U = ub − C_label and L_g = lb_g + D_g; now, ub ≤ U + C_label and lb_g ≥ L_g − D_g (the moves
// since the bound was set are at most the growth of C and D, by the triangle inequality).
// Every bound is rounded outwards, and separated() adds a relative margin of 2⁻¹⁸ that covers
// the FP64 roundings behind them. docs/quantize.md ("Bounded steps") has the argument.
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "apps/quantize/u8_norm_groups.hpp"
#include "apps/quantize/u8_norm_search.cuh"
#include "variants/common/gpu_lloyd_state.cuh"

namespace mk::u8norm {

// The centroids a step's moves are measured from, and the cumulative moves up to them, rounded
// up: C_j of each centroid, D_g the sum of group g's largest moves. The run keeps two, a step
// reading one and writing the other (u8_group_filter), so no block reads what another writes.
struct Moves {
  float previous[kMaxPaletteK * 3];
  float centroid[kMaxPaletteK];
  float group[kMaxGroups];
};

// The clusters' integer totals over every pixel's current label, kept by the run.
struct Totals {
  unsigned long long* sums;     // k × 3, the bytes
  unsigned long long* counts;   // k
  unsigned long long* squares;  // k, Σ ‖x‖²: the inertia without a pass (u8_publish)
};

// The per-pixel bounds, normalised as above.
struct PixelBounds {
  uint8_t* labels;
  float* upper;  // U, one a pixel
  float* lower;  // L, kMaxGroups a pixel
};

__device__ __forceinline__ bool separated(float upper, float lower) {
  return __fmul_ru(upper, 1.0f + 0x1p-18f) < __fmul_rd(lower, 1.0f - 0x1p-18f);
}

__device__ __forceinline__ float rounded_up_root(double squared) { return __fsqrt_ru(__double2float_ru(squared)); }
__device__ __forceinline__ float rounded_down_root(double squared) {
  return __fsqrt_rd(__double2float_rd(fmax(squared, 0.0)));
}

__device__ __forceinline__ double exact_squared(const float (&x)[3], const float* __restrict__ c) {
  const double d0 = double(x[0]) - double(c[0]), d1 = double(x[1]) - double(c[1]), d2 = double(x[2]) - double(c[2]);
  return d0 * d0 + d1 * d1 + d2 * d2;
}

__device__ __forceinline__ void load_pixel(const uchar4* __restrict__ pixels, int64_t i, float (&x)[3]) {
  const uchar4 px = pixels[i];
  x[0] = float(px.x);
  x[1] = float(px.y);
  x[2] = float(px.z);
}

// This step's cumulative moves, from `from` to the current centroids, into shared memory
// (every block of the filter computes the same values); block 0 also stores them, with the
// centroids, in `to` for the search and the next step.
__device__ inline void step_moves(const float* __restrict__ centroids, int k, const Groups* __restrict__ groups,
                                  const Moves* __restrict__ from, Moves* __restrict__ to, float* cumulative,
                                  float* group_cumulative, float* moved) {
  const bool writer = blockIdx.x == 0;
  for (int j = threadIdx.x; j < k; j += kBlock) {
    double squared = 0;
    for (int d = 0; d < 3; ++d) {
      const float c = centroids[3 * j + d];
      const double delta = double(c) - double(from->previous[3 * j + d]);
      squared += delta * delta;
      if (writer) to->previous[3 * j + d] = c;
    }
    moved[j] = rounded_up_root(squared);
    cumulative[j] = __fadd_ru(from->centroid[j], moved[j]);
    if (writer) to->centroid[j] = cumulative[j];
  }
  __syncthreads();
  if (threadIdx.x < kMaxGroups) {
    const int g = threadIdx.x;
    float largest = 0.0f;
    if (g < groups->count)
      for (int p = groups->start[g]; p < groups->start[g + 1]; ++p) largest = fmaxf(largest, moved[groups->order[p]]);
    group_cumulative[g] = __fadd_ru(from->group[g], largest);
    if (writer) to->group[g] = group_cumulative[g];
  }
  __syncthreads();
}

// Every pixel: its bounds against the cumulative moves; where they do not separate its centroid
// from every group, the upper bound is recomputed exactly (and stored), and where that does not
// either, the pixel joins the queue. Block-uniform trips: one queue atomic a block and trip.
__global__ void __launch_bounds__(kBlock) u8_group_filter(const uchar4* __restrict__ pixels, int64_t m,
                                                          const float* __restrict__ centroids, int k,
                                                          const Groups* __restrict__ groups,
                                                          const Moves* __restrict__ from, Moves* __restrict__ to,
                                                          PixelBounds bounds, int* __restrict__ queue,
                                                          unsigned* __restrict__ queued) {
  __shared__ float cumulative[kMaxPaletteK];
  __shared__ float group_drift[kMaxGroups];
  __shared__ float moved[kMaxPaletteK];
  __shared__ unsigned warp_first[kBlock / 32];
  __shared__ unsigned block_first;
  step_moves(centroids, k, groups, from, to, cumulative, group_drift, moved);
  const int group_count = groups->count;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t stride = int64_t(gridDim.x) * kBlock;
  for (int64_t block_base = int64_t(blockIdx.x) * kBlock; block_base < m; block_base += stride) {
    const int64_t i = block_base + threadIdx.x;
    bool search = false;
    if (i < m) {
      const int a = bounds.labels[i];
      const float c_a = cumulative[a];
      float upper = __fadd_ru(bounds.upper[i], c_a);
      const float4* stored = reinterpret_cast<const float4*>(bounds.lower + i * kMaxGroups);
      const float4 l0 = stored[0], l1 = stored[1];
      const float l[kMaxGroups] = {l0.x, l0.y, l0.z, l0.w, l1.x, l1.y, l1.z, l1.w};
      float lower = FLT_MAX;
#pragma unroll
      for (int g = 0; g < kMaxGroups; ++g)
        if (g < group_count) lower = fminf(lower, __fsub_rd(l[g], group_drift[g]));
      if (!separated(upper, lower)) {
        float x[3];
        load_pixel(pixels, i, x);
        upper = rounded_up_root(exact_squared(x, centroids + 3 * a));
        search = !separated(upper, lower);
        if (!search) bounds.upper[i] = __fsub_ru(upper, c_a);
      }
    }
    const unsigned ballot = __ballot_sync(0xffffffffu, search);
    if (lane == 0) warp_first[warp] = unsigned(__popc(ballot));
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned total = 0;
      for (int w = 0; w < kBlock / 32; ++w) {
        const unsigned n = warp_first[w];
        warp_first[w] = total;
        total += n;
      }
      block_first = total ? atomicAdd(queued, total) : 0;
    }
    __syncthreads();
    if (search) queue[block_first + warp_first[warp] + unsigned(__popc(ballot & ((1u << lane) - 1u)))] = int(i);
    __syncthreads();  // warp_first and block_first are rewritten next trip
  }
}

// The totals as the step's accumulators, and the inertia of the labels against the centroids
// they were chosen for, Σ_j (Σ‖x‖² − 2c_j·Σx + n_j‖c_j‖²) in FP64 from exact integers. The
// whole block; the totals are read through L2 (__ldcg), where the other blocks' atomics landed.
__device__ inline void publish(const float* __restrict__ centroids, int k, const Totals& totals,
                               const gpu::AccumulatorView& acc) {
  __shared__ double partial[kBlock / 32];
  double inertia = 0;
  for (int j = threadIdx.x; j < k; j += kBlock) {
    const unsigned long long n = __ldcg(&totals.counts[j]);
    acc.counts[j] = n;
    double cross = 0, norm = 0;
    for (int d = 0; d < 3; ++d) {
      const double sum = double(__ldcg(&totals.sums[3 * j + d])), c = double(centroids[3 * j + d]);
      acc.sums[3 * j + d] = sum;
      cross += c * sum;
      norm += c * c;
    }
    inertia += double(__ldcg(&totals.squares[j])) - 2.0 * cross + double(n) * norm;
  }
  for (int offset = 16; offset > 0; offset >>= 1) inertia += __shfl_xor_sync(0xffffffffu, inertia, offset);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = inertia;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0;
    for (int w = 0; w < kBlock / 32; ++w) total += partial[w];
    *acc.inertia = total;
  }
}

// The end of a search block: the last block to finish (a ticket after a fence, so every other
// block's totals are in) publishes the step and resets the ticket and the queue for the next.
__device__ inline void finish_step(const float* __restrict__ centroids, int k, const Totals& totals,
                                   unsigned* blocks_done, unsigned* queued, const gpu::AccumulatorView& acc) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(blocks_done, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  publish(centroids, k, totals, acc);
  if (threadIdx.x == 0) {
    *blocks_done = 0;
    *queued = 0;
  }
}

// The search of every pixel (kAll: the first step, totals zeroed, every group searched) or of
// the queued ones (the groups whose lower bound does not clear the exact upper bound). One
// thread a pixel; a warp walks the union of its lanes' groups.
template <bool kAll>
__global__ void __launch_bounds__(kBlock) u8_group_search(const uchar4* __restrict__ pixels, int64_t m,
                                                          const float* __restrict__ centroids, int k,
                                                          const Groups* __restrict__ groups_in,
                                                          const Moves* __restrict__ moves,
                                                          const int* __restrict__ queue,
                                                          unsigned* __restrict__ queued, PixelBounds bounds,
                                                          Totals totals, unsigned* __restrict__ blocks_done,
                                                          gpu::AccumulatorView acc) {
  const int64_t count = kAll ? m : int64_t(*queued);
  if (int64_t(blockIdx.x) * kBlock >= count) {  // the whole block: nothing queued for it
    finish_step(centroids, k, totals, blocks_done, queued, acc);
    return;
  }

  __shared__ float4 table[kMaxPaletteK];  // in group order
  __shared__ float scratch[kBlock / 32];
  __shared__ Groups groups;
  __shared__ float cumulative[kMaxPaletteK];
  __shared__ float group_drift[kMaxGroups];
  __shared__ unsigned long long block_sums[kMaxPaletteK * 3];
  __shared__ unsigned long long block_counts[kMaxPaletteK];
  __shared__ unsigned long long block_squares[kMaxPaletteK];
  if (threadIdx.x == 0) groups.count = groups_in->count;
  if (threadIdx.x <= kMaxGroups) groups.start[threadIdx.x] = groups_in->start[threadIdx.x];
  for (int j = threadIdx.x; j < kMaxPaletteK; j += kBlock) {
    block_counts[j] = block_squares[j] = 0;
    block_sums[3 * j] = block_sums[3 * j + 1] = block_sums[3 * j + 2] = 0;
    groups.order[j] = groups_in->order[j];
    groups.group_of[j] = groups_in->group_of[j];
    cumulative[j] = j < k ? moves->centroid[j] : 0.0f;
  }
  if (threadIdx.x < kMaxGroups) group_drift[threadIdx.x] = moves->group[threadIdx.x];
  __syncthreads();
  // The table in group order: build_table over the permuted centroids.
  float window;
  {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float bound = 0.0f;
    for (int p = threadIdx.x; p < k; p += kBlock) {
      const float* c = centroids + 3 * groups.order[p];
      const float w = __fmaf_rn(c[2], c[2], __fmaf_rn(c[1], c[1], __fmul_rn(c[0], c[0])));
      table[p] = make_float4(-2.0f * c[0], -2.0f * c[1], -2.0f * c[2], w);
      bound = fmaxf(bound, 1.01f * (w + 510.0f * (fabsf(c[0]) + fabsf(c[1]) + fabsf(c[2]))));
    }
    for (int offset = 16; offset > 0; offset >>= 1) bound = fmaxf(bound, __shfl_xor_sync(0xffffffffu, bound, offset));
    if (lane == 0) scratch[warp] = bound;
    __syncthreads();
    window = 0.0f;
    for (int w = 0; w < kBlock / 32; ++w) window = fmaxf(window, scratch[w]);
    window *= 0x1p-20f;  // 16 · 2⁻²⁴ · S, as build_table
  }
  const int group_count = groups.count;

  auto move = [&](int j, const float (&x)[3], unsigned long long sign) {
    const unsigned r = unsigned(x[0]), g = unsigned(x[1]), b = unsigned(x[2]);
    atomicAdd(&block_sums[3 * j], sign * r);
    atomicAdd(&block_sums[3 * j + 1], sign * g);
    atomicAdd(&block_sums[3 * j + 2], sign * b);
    atomicAdd(&block_counts[j], sign);
    atomicAdd(&block_squares[j], sign * (unsigned long long)(r * r + g * g + b * b));
  };

  for (int64_t e = int64_t(blockIdx.x) * kBlock + threadIdx.x; e < count; e += int64_t(gridDim.x) * kBlock) {
    const int64_t i = kAll ? e : int64_t(queue[e]);
    float x[3];
    load_pixel(pixels, i, x);
    const double norm = double(x[0]) * x[0] + double(x[1]) * x[1] + double(x[2]) * x[2];
    const int a = kAll ? -1 : bounds.labels[i];
    double a_squared = 0;
    float upper = FLT_MAX;
    float stored[kMaxGroups];
    bool searched[kMaxGroups];
    if (!kAll) {
      a_squared = exact_squared(x, centroids + 3 * a);
      upper = rounded_up_root(a_squared);
      const float4* l = reinterpret_cast<const float4*>(bounds.lower + i * kMaxGroups);
      const float4 l0 = l[0], l1 = l[1];
      stored[0] = l0.x, stored[1] = l0.y, stored[2] = l0.z, stored[3] = l0.w;
      stored[4] = l1.x, stored[5] = l1.y, stored[6] = l1.z, stored[7] = l1.w;
    }
    // Per searched group, its smallest and second smallest float score and the position of
    // the smallest.
    float low[kMaxGroups], second[kMaxGroups];
    int low_position[kMaxGroups];
    bool a_searched = kAll;
#pragma unroll
    for (int g = 0; g < kMaxGroups; ++g) {
      low[g] = second[g] = FLT_MAX;
      low_position[g] = -1;
      searched[g] = g < group_count && (kAll || !separated(upper, fmaxf(__fsub_rd(stored[g], group_drift[g]), 0.0f)));
      if (!searched[g]) continue;
      if (!kAll && groups.group_of[a] == g) a_searched = true;
      for (int p = groups.start[g]; p < groups.start[g + 1]; ++p) {
        const float4 t = table[p];
        const float s = __fmaf_rn(x[2], t.z, __fmaf_rn(x[1], t.y, __fmaf_rn(x[0], t.x, t.w)));
        second[g] = fminf(second[g], fmaxf(low[g], s));
        low_position[g] = s < low[g] ? p : low_position[g];
        low[g] = fminf(low[g], s);
      }
    }
    // The candidates: every searched centroid, and the current one if its group was not searched
    // (the other groups' centroids are all farther than the upper bound: none can be nearest).
    float best = FLT_MAX, runner_up = FLT_MAX;
    int best_position = -1;
#pragma unroll
    for (int g = 0; g < kMaxGroups; ++g) {
      if (!searched[g]) continue;
      runner_up = fminf(runner_up, fmaxf(best, low[g]));
      runner_up = fminf(runner_up, second[g]);
      best_position = low[g] < best ? low_position[g] : best_position;
      best = fminf(best, low[g]);
    }
    int j = best_position >= 0 ? groups.order[best_position] : a;
    if (!a_searched) {
      const float* c = centroids + 3 * a;
      const float w = __fmaf_rn(c[2], c[2], __fmaf_rn(c[1], c[1], __fmul_rn(c[0], c[0])));
      const float s = __fmaf_rn(x[2], -2.0f * c[2], __fmaf_rn(x[1], -2.0f * c[1], __fmaf_rn(x[0], -2.0f * c[0], w)));
      runner_up = fminf(runner_up, fmaxf(best, s));
      if (s < best) best = s, j = a;
    }
    if (!(runner_up - best > window)) {  // a near tie: FP64 over the candidates, lowest index first
      double nearest = a_searched ? DBL_MAX : a_squared;
      j = a_searched ? 0 : a;
#pragma unroll
      for (int g = 0; g < kMaxGroups; ++g) {
        if (!searched[g]) continue;
        for (int p = groups.start[g]; p < groups.start[g + 1]; ++p) {
          const int c = groups.order[p];
          const double d = exact_squared(x, centroids + 3 * c);
          if (d < nearest || (d == nearest && c < j)) nearest = d, j = c;
        }
      }
    }
    const float upper_j = rounded_up_root(exact_squared(x, centroids + 3 * j));
    bounds.upper[i] = __fsub_ru(upper_j, cumulative[j]);
    // New lower bounds of the searched groups: the smallest score of a member other than j,
    // less the window (each score is within 6·2⁻²⁴·S of exact; the window is 16·2⁻²⁴·S).
    float* lower_out = bounds.lower + i * kMaxGroups;
#pragma unroll
    for (int g = 0; g < kMaxGroups; ++g) {
      if (searched[g]) {
        const bool low_is_j = low_position[g] >= 0 && groups.order[low_position[g]] == j;
        const float other = low_is_j ? second[g] : low[g];
        const float lower = other == FLT_MAX ? FLT_MAX : rounded_down_root(double(other) - double(window) + norm);
        lower_out[g] = lower == FLT_MAX ? FLT_MAX : __fadd_rd(lower, group_drift[g]);
      } else if (!kAll && g < group_count && j != a && groups.group_of[a] == g) {
        // The old centroid joins its unsearched group's "others" now that j is the label.
        const float lower_a = __fadd_rd(rounded_down_root(a_squared), group_drift[g]);
        lower_out[g] = fminf(stored[g], lower_a);
      } else if (kAll) {
        lower_out[g] = FLT_MAX;  // no such group
      }
    }
    if (kAll) {
      move(j, x, 1ULL);
    } else if (j != a) {
      move(a, x, ~0ULL);  // −1
      move(j, x, 1ULL);
    }
    bounds.labels[i] = uint8_t(j);
  }
  __syncthreads();
  for (int j = threadIdx.x; j < k; j += kBlock) {
    if (block_counts[j]) atomicAdd(&totals.counts[j], block_counts[j]);
    if (block_squares[j]) atomicAdd(&totals.squares[j], block_squares[j]);
    for (int d = 0; d < 3; ++d)
      if (block_sums[3 * j + d]) atomicAdd(&totals.sums[3 * j + d], block_sums[3 * j + d]);
  }
  finish_step(centroids, k, totals, blocks_done, queued, acc);
}

}  // namespace mk::u8norm
