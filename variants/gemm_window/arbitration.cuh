#pragma once
// Exact arbitration of a group's ambiguous rows: every listed candidate, and every column of a
// slice that may hide more in-window keys than it listed, gets its squared distance
// Σ(x − c)² in FP64 from the FP32 inputs (exact differences and squares, one rounding per
// addition), rounded once to FP32 and packed above the column index, so the smallest wins
// and equal distances fall to the lower index, as in the FP64 reference.
//
// A warp arbitrates its own kRowsPerWarp rows. Up to 64 dimensions a lane computes a whole
// distance (a row's ≤ 32 candidates in one round); wider rows are split across the warp's
// lanes (coalesced loads, one shuffle reduction per distance), since a lane-serial distance
// over 1024 dimensions would keep the warp waiting on ~2000 dependent loads.
#include "variants/gemm_window/block.cuh"

namespace mk::gemm_window {

constexpr int kLaneDistanceMaxDims = 64;

__device__ __forceinline__ unsigned long long pack_exact(double distance2, unsigned column) {
  return (static_cast<unsigned long long>(__float_as_uint(__double2float_rn(distance2))) << 32) | column;
}

__device__ __forceinline__ double lane_distance(const float* __restrict__ x, const float* __restrict__ c, int n) {
  double sum = 0.0;
  if ((n & 3) == 0) {
    for (int d = 0; d < n; d += 4) {
      const float4 xv = __ldg(reinterpret_cast<const float4*>(x + d));
      const float4 cv = __ldg(reinterpret_cast<const float4*>(c + d));
      const double e0 = double(xv.x) - cv.x, e1 = double(xv.y) - cv.y, e2 = double(xv.z) - cv.z,
                   e3 = double(xv.w) - cv.w;
      sum = fma(e0, e0, sum);
      sum = fma(e1, e1, sum);
      sum = fma(e2, e2, sum);
      sum = fma(e3, e3, sum);
    }
  } else {
    for (int d = 0; d < n; ++d) {
      const double e = double(__ldg(x + d)) - __ldg(c + d);
      sum = fma(e, e, sum);
    }
  }
  return sum;
}

// Every lane returns the whole distance.
__device__ __forceinline__ double warp_distance(const float* __restrict__ x, const float* __restrict__ c, int n,
                                                int lane) {
  double sum = 0.0;
  if ((n & 3) == 0) {
    for (int d = lane * 4; d < n; d += 128) {
      const float4 xv = __ldg(reinterpret_cast<const float4*>(x + d));
      const float4 cv = __ldg(reinterpret_cast<const float4*>(c + d));
      const double e0 = double(xv.x) - cv.x, e1 = double(xv.y) - cv.y, e2 = double(xv.z) - cv.z,
                   e3 = double(xv.w) - cv.w;
      sum = fma(e0, e0, sum);
      sum = fma(e1, e1, sum);
      sum = fma(e2, e2, sum);
      sum = fma(e3, e3, sum);
    }
  } else {
    for (int d = lane; d < n; d += 32) {
      const double e = double(__ldg(x + d)) - __ldg(c + d);
      sum = fma(e, e, sum);
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(kFullWarp, sum, offset);
  return sum;
}

__device__ __forceinline__ unsigned long long warp_min(unsigned long long value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value = min(value, __shfl_xor_sync(kFullWarp, value, offset));
  return value;
}

// The smallest packed exact distance over `count` columns produced by column_at(i).
template <class ColumnAt>
__device__ __forceinline__ unsigned long long exact_minimum(const KernelArgs& a, const float* x, int slot_offset,
                                                            int count, ColumnAt column_at, int lane) {
  unsigned long long best = ~0ull;
  if (a.n <= kLaneDistanceMaxDims) {
    for (int i = lane; i < count; i += 32) {
      const unsigned column = column_at(i);
      if (column == 0xffffffffu) continue;
      best = min(best, pack_exact(lane_distance(x, a.centroids + int64_t(slot_offset + int(column)) * a.n, a.n), column));
    }
    return warp_min(best);
  }
  for (int i = 0; i < count; ++i) {
    const unsigned column = column_at(i);  // the same for every lane
    if (column == 0xffffffffu) continue;
    best = min(best, pack_exact(warp_distance(x, a.centroids + int64_t(slot_offset + int(column)) * a.n, a.n, lane),
                                column));
  }
  return best;
}

// Step 3 of a group's finalize (after the barrier that ends list_candidates): the warp's rows
// with more than one candidate get exact labels; the row lists are cleared for the next group.
template <class S>
__device__ __forceinline__ void arbitrate_rows(const KernelArgs& a, const Smem& s, const GroupInfo& group,
                                               int64_t base) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  unsigned long long rows = 0, ambiguous = 0, slices = 0, distances = 0;
  for (int i = 0; i < S::kRowsPerWarp; ++i) {
    const int row = warp * S::kRowsPerWarp + i;
    const int count = int(s.rowcount[row]);
    unsigned scan = s.scan[row];
    rows += base + row < a.m;
    if (count > 1 || scan != 0) {
      ++ambiguous;
      const float* x = a.points + (base + row) * a.n;
      const unsigned short* items = s.items + row * S::kItemsPerRow;
      unsigned long long best =
          exact_minimum(a, x, group.slot_offset, count, [&](int k) { return unsigned(items[k]); }, lane);
      distances += count;
      while (scan != 0) {
        const int slice = __ffs(scan) - 1;
        scan &= scan - 1;
        const int wn = slice >> 3, t = (slice >> 1) & 3, parity = slice & 1;
        const int columns = group.tiles * S::kNTiles;
        // Column i of the slice: n-tile i % kNTiles of tile i / kNTiles; padding columns skipped.
        const auto column_at = [&](int k) {
          const int tile = k / S::kNTiles, nt = k - tile * S::kNTiles;
          const int column = tile * S::BN + wn * S::kWarpColumns + nt * 8 + 2 * t + parity;
          return column < group.k ? unsigned(column) : 0xffffffffu;
        };
        best = min(best, exact_minimum(a, x, group.slot_offset, columns, column_at, lane));
        ++slices;
        distances += columns;
      }
      if (lane == 0) s.label[row] = int(best & 0xffffffffu);
    }
  }
  __syncwarp();
  if (lane < S::kRowsPerWarp) {
    s.rowcount[warp * S::kRowsPerWarp + lane] = 0;
    s.scan[warp * S::kRowsPerWarp + lane] = 0;
  }
  if (a.stats && lane == 0) {
    atomicAdd(&a.stats[0], rows);
    atomicAdd(&a.stats[1], ambiguous);
    atomicAdd(&a.stats[2], slices);
    atomicAdd(&a.stats[3], distances);
  }
  __syncwarp();
}

}  // namespace mk::gemm_window
