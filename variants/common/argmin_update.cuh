#pragma once
// Device pieces shared by the GEMM-distance variants (gemm-cublas, gemm-tf32x3): the
// running best/second-best of the expanded distance, the exact FP64 re-check of near ties
// (see near_tie_bound.hpp for why it is needed and when it triggers), and the update into
// either block-private shared accumulators or the global FP64 ones.
#include <cuda_runtime.h>

#include <cfloat>
#include <climits>
#include <cstdint>

#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/common/near_tie_bound.hpp"

namespace mk::gemm {

// ---------------------------------------------------------------------------------------
// Host-side sizing shared by can_implement, the param-space restrictions and prepare().

inline int64_t k_slot_sum(const KRange& k) {
  return (int64_t(k.kmin) + k.kmax) * (int64_t(k.kmax) - k.kmin + 1) / 2;
}

// Block-private accumulators: inertia per K always; sums and counts per slot when the
// update is "smem". Counts are 64-bit so smem and global share one atomicAdd code path.
inline int64_t block_accumulator_bytes(const Problem& problem, bool private_sums) {
  int64_t bytes = int64_t(problem.k.count()) * 8;
  if (private_sums) bytes += k_slot_sum(problem.k) * (int64_t(problem.n) * 8 + 8);
  return bytes;
}

// ---------------------------------------------------------------------------------------
// Device helpers.

// Running best and runner-up of e = ‖c‖² − 2x·c for one point and one K. Offers must come in
// increasing centroid order within one thread so equal values keep the lowest index, as
// the FP64 reference does.
struct Top2 {
  float best;
  float second;
  int index;
};

__device__ __forceinline__ Top2 top2_empty() { return {INFINITY, INFINITY, 0}; }

__device__ __forceinline__ void top2_offer(Top2& s, float e, int centroid) {
  if (e < s.best) {
    s.second = s.best;
    s.best = e;
    s.index = centroid;
  } else if (e < s.second) {
    s.second = e;
  }
}

// Merge a disjoint candidate set; (value, index) order makes the result independent of
// the merge order, so every lane of a butterfly ends with the same answer.
__device__ __forceinline__ void top2_merge(Top2& s, float other_best, int other_index, float other_second) {
  if (other_best < s.best || (other_best == s.best && other_index < s.index)) {
    s.second = fminf(s.best, other_second);
    s.best = other_best;
    s.index = other_index;
  } else {
    s.second = fminf(s.second, other_best);
  }
}

__device__ __forceinline__ void top2_merge_lanes(Top2& s, int lane_mask) {
  const float ob = __shfl_xor_sync(0xffffffffu, s.best, lane_mask);
  const int oi = __shfl_xor_sync(0xffffffffu, s.index, lane_mask);
  const float os = __shfl_xor_sync(0xffffffffu, s.second, lane_mask);
  top2_merge(s, ob, oi, os);
}

// True when the computed winner might not be the exact one. A NaN gap counts as a tie so
// that the exact path, not garbage, decides.
__device__ __forceinline__ bool is_near_tie(const Top2& s, float x_norm2, float best_cnorm2,
                                            ExpansionErrorModel model) {
  const float gap = s.second - s.best;
  return !(gap > near_tie_window(x_norm2, s.best, best_cnorm2, model));
}

__device__ __forceinline__ double warp_sum(double value) {
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

__device__ __forceinline__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

// Σ (x_d − c_d)² with the FP32 inputs widened to FP64: exact to ~1e-16 relative, which is
// what the reference compares against.
__device__ __forceinline__ double exact_squared_distance(const gpu::PointsView& points, int64_t i,
                                                         const float* __restrict__ centroid, int n) {
  double total = 0;
  for (int d = 0; d < n; ++d) {
    const double diff = double(points.at(i, d)) - double(centroid[d]);
    total = fma(diff, diff, total);
  }
  return total;
}

// Same, with the lanes of a warp splitting the dimensions. Whole warp must call.
__device__ __forceinline__ double warp_exact_squared_distance(const gpu::PointsView& points, int64_t i,
                                                              const float* __restrict__ centroid, int n) {
  const int lane = threadIdx.x & 31;
  double total = 0;
  for (int d = lane; d < n; d += 32) {
    const double diff = double(points.at(i, d)) - double(centroid[d]);
    total = fma(diff, diff, total);
  }
  return warp_sum(total);
}

struct ExactChoice {
  int index;
  double distance;
};

// The near-tie path: exact distance to every centroid of one K, lanes over centroids,
// lowest index among exact ties. Whole warp must call.
__device__ __forceinline__ ExactChoice warp_exact_argmin(const gpu::PointsView& points, int64_t i,
                                               const float* __restrict__ centroids_of_k, int k, int n) {
  const int lane = threadIdx.x & 31;
  double best = INFINITY;
  int best_index = INT_MAX;
  for (int c = lane; c < k; c += 32) {
    const double dist = exact_squared_distance(points, i, centroids_of_k + int64_t(c) * n, n);
    if (dist < best) {
      best = dist;
      best_index = c;
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    const double other = __shfl_xor_sync(0xffffffffu, best, offset);
    const int other_index = __shfl_xor_sync(0xffffffffu, best_index, offset);
    if (other < best || (other == best && other_index < best_index)) {
      best = other;
      best_index = other_index;
    }
  }
  if (best_index == INT_MAX) best_index = 0;  // every distance NaN: any label is as wrong
  return {best_index, best};
}

// Where a block adds its points: block-private shared arrays (flushed at block end) or the
// global FP64 accumulators directly. Generic pointers let one atomicAdd serve both.
struct UpdateTargets {
  double* sums;                 // slots*n
  unsigned long long* counts;   // slots
  double* inertia;              // one per K, always block-private
};

// One thread adds one point.
__device__ __forceinline__ void add_point(const gpu::PointsView& points, int64_t i, int slot, int n,
                                          const UpdateTargets& targets) {
  double* sums = targets.sums + int64_t(slot) * n;
  for (int d = 0; d < n; ++d) atomicAdd(sums + d, double(points.at(i, d)));
  atomicAdd(targets.counts + slot, 1ull);
}

// A warp adds one point, lanes over dimensions. Whole warp must call.
__device__ __forceinline__ void warp_add_point(const gpu::PointsView& points, int64_t i, int slot, int n,
                                               const UpdateTargets& targets) {
  const int lane = threadIdx.x & 31;
  double* sums = targets.sums + int64_t(slot) * n;
  for (int d = lane; d < n; d += 32) atomicAdd(sums + d, double(points.at(i, d)));
  if (lane == 0) atomicAdd(targets.counts + slot, 1ull);
}

// Bytes of block-private accumulators at the start of dynamic shared memory; equals
// block_accumulator_bytes() on the host.
__host__ __device__ inline int64_t update_target_bytes(const gpu::KRangeView& ks, int n, bool private_sums) {
  int64_t words = ks.count();
  if (private_sums) words += int64_t(ks.slots) * n + ks.slots;
  return words * 8;
}

// Carve the block-private accumulators from the start of dynamic shared memory (8-byte
// aligned) and zero them. Must be followed by a __syncthreads() before use.
__device__ __forceinline__ UpdateTargets carve_update_targets(unsigned char* smem, const gpu::KRangeView& ks, int n,
                                                     bool private_sums, const gpu::AccumulatorView& acc) {
  const int nk = ks.count();
  double* inertia = reinterpret_cast<double*>(smem);
  UpdateTargets targets{acc.sums, acc.counts, inertia};
  if (private_sums) {
    targets.sums = inertia + nk;
    targets.counts = reinterpret_cast<unsigned long long*>(targets.sums + int64_t(ks.slots) * n);
  }
  const int64_t words = update_target_bytes(ks, n, private_sums) / 8;
  for (int64_t w = threadIdx.x; w < words; w += blockDim.x) inertia[w] = 0.0;  // 0.0 and 0ull share bits
  return targets;
}

// Add the block's private totals to the global accumulators. Call after a __syncthreads().
__device__ __forceinline__ void flush_update_targets(const UpdateTargets& targets, const gpu::KRangeView& ks, int n,
                                            bool private_sums, const gpu::AccumulatorView& acc) {
  for (int k = threadIdx.x; k < ks.count(); k += blockDim.x)
    if (targets.inertia[k] != 0.0) atomicAdd(acc.inertia + k, targets.inertia[k]);
  if (!private_sums) return;
  for (int s = threadIdx.x; s < ks.slots; s += blockDim.x)
    if (targets.counts[s] != 0) atomicAdd(acc.counts + s, targets.counts[s]);
  const int64_t values = int64_t(ks.slots) * n;
  for (int64_t v = threadIdx.x; v < values; v += blockDim.x)
    if (targets.counts[v / n] != 0) atomicAdd(acc.sums + v, targets.sums[v]);
}

// ‖c‖² per slot, summed in FP64 and rounded once (ε_norm = u in the error model). Async.
void launch_centroid_squared_norms(const float* centroids, int slots, int n, float* norms,
                                   cudaStream_t stream);

}  // namespace mk::gemm
