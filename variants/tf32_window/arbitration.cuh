#pragma once
// Exact FP32 arbitration of the points whose forward-error window holds more than their
// key winner: exact distances for the warp's work list, column scans where a lane may hold
// more in-window keys than it reported, then the labels and the counts.
#include <cuda_runtime.h>

#include <cstdint>

#include "variants/tf32_window/fp16_mma.cuh"
#include "variants/tf32_window/steps.cuh"
#include "variants/tf32_window/window_args.hpp"

namespace mk::tf32_window {

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
// ‖x − c‖² in FP32 from the untranslated inputs: the arbiter of every candidate. The loads
// are unrolled over the padded width, 64 dims at a time at most (128 operand registers), so
// one L2 round trip serves a row of up to 64 dims and two serve 128.
template <int NPAD>
__device__ __forceinline__ float exact_distance(const float* __restrict__ x, const float* __restrict__ c, int n) {
  float acc = 0.f;
  if ((n & 3) == 0) {
    constexpr int kChunk = NPAD < 64 ? NPAD : 64;
#pragma unroll
    for (int d0 = 0; d0 < NPAD; d0 += kChunk) {
      float4 xv[kChunk / 4], cv[kChunk / 4];
#pragma unroll
      for (int q = 0; q < kChunk / 4; ++q) {
        const bool inside = d0 + 4 * q < n;
        xv[q] = inside ? __ldg(reinterpret_cast<const float4*>(x + d0) + q) : make_float4(0.f, 0.f, 0.f, 0.f);
        cv[q] = inside ? __ldg(reinterpret_cast<const float4*>(c + d0) + q) : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
      for (int q = 0; q < kChunk / 4; ++q) {
        const float e0 = xv[q].x - cv[q].x, e1 = xv[q].y - cv[q].y, e2 = xv[q].z - cv[q].z, e3 = xv[q].w - cv[q].w;
        acc = fmaf(e0, e0, acc);
        acc = fmaf(e1, e1, acc);
        acc = fmaf(e2, e2, acc);
        acc = fmaf(e3, e3, acc);
      }
    }
  } else {
    for (int d = 0; d < n; ++d) {
      const float e = __ldg(x + d) - __ldg(c + d);
      acc = fmaf(e, e, acc);
    }
  }
  return acc;
}

// (distance, index) as one ordered 64-bit word: distances are ≥ 0, so their bits order
// like the floats, and equal distances fall to the lower index.
__device__ __forceinline__ unsigned long long pack_exact(float d2, int j) {
  return (static_cast<unsigned long long>(__float_as_uint(d2)) << 32) | static_cast<unsigned>(j);
}

// The second sweep's sums decoded, per row: each lane's count of in-window keys is
// floor(S1/W), and one or two of them are S1 − count·W = Σi and S2 = Σi² solved for i. One
// in-window key in the quad settles the row. Otherwise every decoded key goes on the work
// list, and lanes with three or more (or, never expected, a quad with none) are scanned.
// Returns how many (row, centroid) items the work list holds; with MKBENCH_WINDOW_STATS the
// rows, ambiguous rows and scans are counted into a.stats.
__device__ __forceinline__ int list_candidates(const WindowArgs& a, const WarpScratch& scratch, const float (&sums)[4],
                                               const float (&squares)[4], const bool (&valid)[4], float weight,
                                               float inverse_weight, int lane, int g, int t) {
  int listed = 0;
  const unsigned below = (1u << lane) - 1u;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const float count_f = floorf(sums[r] * inverse_weight);
    const int count = valid[r] ? int(fminf(count_f, 3.f)) : 0;
    const int index_sum = int(sums[r] - count_f * weight);  // exact while count ≤ 2
    int first = index_sum, second = 0;
    if (count == 2) {
      const int spread = __float2int_rn(sqrtf(float(2 * int(squares[r]) - index_sum * index_sum)));
      first = (index_sum - spread) >> 1;
      second = (index_sum + spread) >> 1;
    }
    int quad_count = count + __shfl_xor_sync(0xffffffffu, count, 1);
    quad_count += __shfl_xor_sync(0xffffffffu, quad_count, 2);
    int settled = count == 1 ? lane_column(first, t) : 0;
    settled += __shfl_xor_sync(0xffffffffu, settled, 1);
    settled += __shfl_xor_sync(0xffffffffu, settled, 2);
    const bool ambiguous = valid[r] && quad_count != 1;
    const int items = ambiguous && count <= 2 ? count : 0;
    const unsigned ones = __ballot_sync(0xffffffffu, items == 1);
    const unsigned twos = __ballot_sync(0xffffffffu, items == 2);
    const unsigned hidden = __ballot_sync(0xffffffffu, ambiguous && (count >= 3 || quad_count == 0));
    const int local_row = row_in_step(r, g);
    const int slot = listed + __popc(ones & below) + 2 * __popc(twos & below);
    if (items >= 1) scratch.work[slot] = (local_row << 16) | lane_column(first, t);
    if (items == 2) scratch.work[slot + 1] = (local_row << 16) | lane_column(second, t);
    listed += __popc(ones) + 2 * __popc(twos);
    if (t == 0) {
      scratch.label[local_row] = settled;
      scratch.scan[local_row] = (hidden >> (g * 4)) & 0xfu;
      scratch.exact[local_row] = ~0ull;
      scratch.ambiguous[local_row] = ambiguous;
    }
    if (a.stats) {
      const unsigned row_owners = __ballot_sync(0xffffffffu, valid[r] && t == 0);
      const unsigned ambiguous_rows = __ballot_sync(0xffffffffu, ambiguous && t == 0);
      if (lane == 0) {
        unsigned scans = 0;
        for (int quad = 0; quad < 8; ++quad) scans += ((hidden >> (4 * quad)) & 0xfu) != 0;
        atomicAdd(&a.stats[0], static_cast<unsigned long long>(__popc(row_owners)));
        atomicAdd(&a.stats[1], static_cast<unsigned long long>(__popc(ambiguous_rows)));
        atomicAdd(&a.stats[2], static_cast<unsigned long long>(scans));
      }
    }
  }
  return listed;
}

// What both sweeps share once every row has its label or its candidates: exact distances
// for the work list, column scans where a lane may hide more candidates than it reported,
// then the labels and the counts.
template <int NPAD>
__device__ __forceinline__ void settle_labels(const WindowArgs& a, const WarpScratch& s, int listed, int64_t base,
                                              int rows, int ntiles, unsigned* counts_s) {
  const int lane = threadIdx.x & 31;
  __syncwarp();

  // The work list in one round: each lane takes an (row, centroid) item and keeps the
  // row's smallest (distance, index) with a shared-memory atomicMin.
  for (int item = lane; item < listed; item += 32) {
    const int row = s.work[item] >> 16, j = s.work[item] & 0xffff;
    const float d2 = exact_distance<NPAD>(a.points + (base + row) * a.n, a.centroids + int64_t(j) * a.n, a.n);
    atomicMin(&s.exact[row], pack_exact(d2, j));
  }
  // Columns of lanes that may hold more in-window keys than they reported (rare): the warp
  // splits them.
  unsigned scans = __ballot_sync(0xffffffffu, lane < rows && s.scan[lane] != 0);
  while (scans) {
    const int row = __ffs(scans) - 1;
    scans &= scans - 1;
    const float* x = a.points + (base + row) * a.n;
    const unsigned columns = s.scan[row];
    unsigned long long best = ~0ull;
    for (int col = 0; col < 4; ++col) {
      if (!((columns >> col) & 1u)) continue;
      for (int i = lane; i < 2 * ntiles; i += 32) {
        const int j = (i >> 1) * 8 + 2 * col + (i & 1);
        if (j < a.k)
          best = min(best, pack_exact(exact_distance<NPAD>(x, a.centroids + int64_t(j) * a.n, a.n), j));
      }
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) best = min(best, __shfl_xor_sync(0xffffffffu, best, offset));
    if (lane == 0) atomicMin(&s.exact[row], best);
  }
  __syncwarp();
  if (lane < rows && s.ambiguous[lane]) s.label[lane] = int(s.exact[lane] & 0xffffffffu);
  __syncwarp();

  if (lane < rows) {
    const int label = s.label[lane];
    atomicAdd(&counts_s[label], 1u);
    if (a.labels) a.labels[base + lane] = label;
  }
}

#endif

}  // namespace mk::tf32_window
