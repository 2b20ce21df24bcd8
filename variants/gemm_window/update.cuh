#pragma once
// gemm-window's update of a group, once its labels are settled: each warp adds its own rows.
//   update=global: an FP64 RED per point and dimension into LloydState's sums (32 consecutive
//     dimensions of one point per warp instruction);
//   update=shared: the same into block-private FP32 sums of x − μ in shared memory, flushed
//     into the FP64 sums (adding count·μ back) after at most kMaxPointsPerFlush of the block's
//     points: relative to the data's spread, not its offset, the FP32 partials stay near 1e-6;
//   update=sorted: only the labels here; a radix sort by label and a pass over runs of equal
//     labels add the sums later (sorted_update.cu).
// Counts go to shared memory per slot (flushed with the sums or at the block's end; with
// update=sorted, sum_label_runs counts the runs instead); the inertia is Σ(x − c)² in FP64 from
// the same loads, per warp and group.
#include "variants/gemm_window/block.cuh"
#include "variants/gemm_window/mainloop.cuh"

namespace mk::gemm_window {

// staged: the tile's FP32 rows in shared memory (points=staged), else null: read from the data.
template <class S, bool Staged, bool Batched>
__device__ __forceinline__ void update_rows_from(const KernelArgs& a, const Smem& s, const GroupInfo& group, int g,
                                                 int64_t base, const float* staged, double& inertia) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int r0 = warp * S::kRowsPerWarp;
  const int64_t left = a.m - base - r0;
  const int rows = left <= 0 ? 0 : (left < S::kRowsPerWarp ? int(left) : S::kRowsPerWarp);
  if (lane < rows) {
    const int label = s.label[r0 + lane];
    const int64_t p = base + r0 + lane;
    if constexpr (Batched) {  // one group a point: labels one a point, and the sort's keys are slots
      if (a.labels) a.labels[p] = label;
      if (a.update == UpdateMode::Sorted)
        a.sort_labels[p] = group.slot_offset + label;
      else
        atomicAdd(&s.counts[group.slot_offset + label], 1u);
    } else {
      if (a.labels) a.labels[int64_t(g) * a.m + p] = label;
      if (a.update == UpdateMode::Sorted)
        a.sort_labels[int64_t(g) * a.m + p] = label;
      else
        atomicAdd(&s.counts[group.slot_offset + label], 1u);
    }
  }
  if (a.update == UpdateMode::Sorted || rows == 0) return;
  const int n = a.n;
  const bool shared = a.update == UpdateMode::Shared;
  const float* block_points = Staged ? staged + r0 * n : a.points + (base + r0) * n;
  if (n >= 32) {
    for (int d0 = 0; d0 < n; d0 += 32) {
      const int d = d0 + lane;
      if (d >= n) continue;  // no collective below
      const float mu = shared ? __ldg(a.center + d) : 0.f;
#pragma unroll 4
      for (int i = 0; i < rows; ++i) {
        const int slot = group.slot_offset + s.label[r0 + i];
        const float x = load_point<Staged>(block_points + i * n + d);
        const float c = __ldg(a.centroids + int64_t(slot) * n + d);
        if (shared)
          atomicAdd(&s.sums[slot * n + d], x - mu);
        else
          atomicAdd(&a.sums[int64_t(slot) * n + d], double(x));
        const double e = double(x) - c;
        inertia = fma(e, e, inertia);
      }
    }
  } else {
    // Narrow rows: lanes walk the warp's rows as one contiguous array; i = e / n by a
    // multiply (exact for e < 2^20 / n, and e < 32·n here).
    const unsigned magic = ((1u << 20) + unsigned(n) - 1) / unsigned(n);
    const int elements = rows * n;
    for (int e = lane; e < elements; e += 32) {
      const int i = int((unsigned(e) * magic) >> 20), d = e - i * n;
      const int slot = group.slot_offset + s.label[r0 + i];
      const float x = load_point<Staged>(block_points + e);
      const float c = __ldg(a.centroids + int64_t(slot) * n + d);
      if (shared)
        atomicAdd(&s.sums[slot * n + d], x - __ldg(a.center + d));
      else
        atomicAdd(&a.sums[int64_t(slot) * n + d], double(x));
      const double diff = double(x) - c;
      inertia = fma(diff, diff, inertia);
    }
  }
}

template <class S, bool Batched>
__device__ __forceinline__ void update_rows(const KernelArgs& a, const Smem& s, const GroupInfo& group, int g,
                                            int64_t base, const float* staged, double& inertia) {
  if (staged) update_rows_from<S, true, Batched>(a, s, group, g, base, staged, inertia);
  else update_rows_from<S, false, Batched>(a, s, group, g, base, nullptr, inertia);
}

// The warp's inertia of one group into its own shared slot (no atomics: one writer).
template <class S>
__device__ __forceinline__ void add_inertia(const Smem& s, int g, double inertia) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) inertia += __shfl_xor_sync(kFullWarp, inertia, offset);
  if (lane == 0) s.inertia[g * S::kWarps + warp] += inertia;
}

// update=shared: the block's FP32 sums (and the counts they need) into the FP64 sums. Every
// thread calls it, between barriers.
template <class S>
__device__ __forceinline__ void flush_shared_sums(const KernelArgs& a, const Smem& s) {
  const int n = a.n;
  const int total = a.slots * n;
  for (int i = threadIdx.x; i < total; i += S::kThreads) {
    const int slot = i / n, d = i - slot * n;
    const unsigned count = s.counts[slot];
    if (count == 0) continue;
    atomicAdd(&a.sums[i], double(s.sums[i]) + double(count) * double(__ldg(a.center + d)));
    s.sums[i] = 0.f;
  }
}

template <class S>
__device__ __forceinline__ void flush_counts(const KernelArgs& a, const Smem& s) {
  for (int i = threadIdx.x; i < a.slots; i += S::kThreads) {
    const unsigned count = s.counts[i];
    if (count == 0) continue;
    atomicAdd(&a.counts[i], static_cast<unsigned long long>(count));
    s.counts[i] = 0;
  }
}

template <class S>
__device__ __forceinline__ void flush_inertia(const KernelArgs& a, const Smem& s) {
  for (int g = threadIdx.x; g < a.group_count; g += S::kThreads) {
    double total = 0.0;
    for (int w = 0; w < S::kWarps; ++w) total += s.inertia[g * S::kWarps + w];
    if (total != 0.0) atomicAdd(&a.inertia[g], total);
  }
}

}  // namespace mk::gemm_window
