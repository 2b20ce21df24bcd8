#pragma once
// Exact arbitration of a group's ambiguous rows: every listed candidate, and every column of a
// slice that may hide more in-window keys than it listed, gets its squared distance
// Σ(x − c)² in FP64 from the FP32 inputs (exact differences and squares, one rounding per
// addition), rounded once to FP32 and packed above the column index, so the smallest wins
// and equal distances fall to the lower index, as in the FP64 reference.
//
// A warp arbitrates its own kRowsPerWarp rows, all their distances at once: the rows' jobs
// (row, column) are numbered in one list, and each round gives every job L lanes (a power of
// two: the most that serve the whole list in one round, at most one float4 of the row each), whose partial
// sums meet in a shuffle reduction and a shared-memory atomicMin per row. Serving one
// distance at a time with the whole warp left 7 of 8 warps waiting at the next barrier on
// issue 32's 128/1024/2M row (ncu, H200: barrier the top stall, issue slots 17 % busy,
// 12.4 ms; reports/results/nvidia-h200/gemm-window-profile.txt).
//
// arbitrate=deferred (update=sorted) lists the same jobs in a global queue instead, and
// deferred_arbitration.cu settles them after the kernel, a warp a row (deferred_queue.hpp).
#include "variants/gemm_window/block.cuh"
#include "variants/gemm_window/exact_distance.cuh"

namespace mk::gemm_window {

// The index of the nth (0-based) set bit of mask; mask has more than n bits set.
__device__ __forceinline__ int nth_set_bit(unsigned mask, int n) {
  for (int i = 0; i < n; ++i) mask &= mask - 1;
  return __ffs(mask) - 1;
}

// Job `job` of the warp's list (rows r0 ..): its row and its group-local column, or
// 0xffffffff where a scanned slice runs into the group's padding.
template <class S>
__device__ __forceinline__ unsigned job_column(const Smem& s, const GroupInfo& group, int r0, int slice_columns,
                                               int job, int& row) {
  // The job's row: how many rows' job ends are at or below it (job_end rises with the row),
  // by binary search (a linear scan was 4 % of the kernel's instructions at 32/64/16M, ncu,
  // H200, 7a298a8).
  int i = 0;
#pragma unroll
  for (int step = 16; step > 0; step >>= 1)
    if (i + step <= S::kRowsPerWarp && s.job_end[r0 + i + step - 1] <= job) i += step;
  row = r0 + i;
  const int start = i == 0 ? 0 : s.job_end[r0 + i - 1];
  int local = job - start;
  const int listed = int(s.rowcount[row]);
  if (local < listed) return s.items[row * S::kItemsPerRow + local];
  local -= listed;
  const int which = local / slice_columns, k = local - which * slice_columns;
  const int slice = nth_set_bit(s.scan[row], which);
  const int wn = slice >> 3, t = (slice >> 1) & 3, parity = slice & 1;
  // Column k of the slice: n-tile k % kNTiles of tile k / kNTiles; padding skipped.
  const int tile = k / S::kNTiles, nt = k - tile * S::kNTiles;
  const int c = tile * S::BN + wn * S::kWarpColumns + nt * 8 + 2 * t + parity;
  return c < group.k ? unsigned(c) : 0xffffffffu;
}

// arbitrate=deferred: the warp's ambiguous rows and their jobs go to the queue, one reservation
// of each for the warp; false when the columns would not fit (the caller arbitrates here).
// A deferred row keeps the key winner as its label until the deferred kernel overwrites it.
template <class S>
__device__ __forceinline__ bool defer_rows(const KernelArgs& a, const Smem& s, const GroupInfo& group, int gi,
                                           int64_t base, int r0, int slice_columns, int total, bool ambiguous,
                                           int end, int jobs) {
  const int lane = threadIdx.x & 31;
  const unsigned rows_mask = __ballot_sync(kFullWarp, ambiguous);
  const unsigned long long rows = __popc(rows_mask);
  unsigned long long first = 0, first_row = 0;
  if (lane == 0) {
    first = atomicAdd(&a.deferred.counters[1], static_cast<unsigned long long>(total));
    if (first + total <= a.deferred.column_capacity)
      first_row = atomicAdd(&a.deferred.counters[0], rows);
    else
      first = first_row = ~0ull;
  }
  first = __shfl_sync(kFullWarp, first, 0);
  first_row = __shfl_sync(kFullWarp, first_row, 0);
  if (first == ~0ull) return false;
  const int rank = __popc(rows_mask & ((1u << lane) - 1u));
  if (first_row + rows > a.deferred.row_capacity) {
    // Records below the capacity would be read: mark them empty, and arbitrate here.
    if (ambiguous && first_row + rank < a.deferred.row_capacity) a.deferred.rows[first_row + rank] = DeferredRow{};
    return false;
  }
  if (ambiguous) {
    DeferredRow row;
    row.point = uint32_t(base + r0 + lane);
    row.group = uint32_t(gi);
    row.first = uint32_t(first + unsigned(end - jobs));
    row.count = uint32_t(jobs);
    a.deferred.rows[first_row + rank] = row;
  }
  for (int job = lane; job < total; job += 32) {
    int row;
    const unsigned column = job_column<S>(s, group, r0, slice_columns, job, row);
    a.deferred.columns[first + job] = column == 0xffffffffu ? kNoColumn : static_cast<unsigned short>(column);
  }
  if (a.stats && lane == 0) atomicAdd(&a.stats[4], rows);
  return true;
}

// Step 3 of a group's finalize (after the barrier that ends list_candidates): the warp's rows
// with more than one candidate, or a slice to scan, get exact labels (here, or deferred); the
// row lists are cleared for the next group.
template <class S>
__device__ __forceinline__ void arbitrate_rows(const KernelArgs& a, const Smem& s, const GroupInfo& group, int gi,
                                               int64_t base) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int r0 = warp * S::kRowsPerWarp;
  const int slice_columns = group.tiles * S::kNTiles;  // columns of one (warp column, lane, parity) slice
  // Lane i < kRowsPerWarp speaks for row r0 + i.
  int count = 0;
  unsigned scan = 0;
  bool valid = false;
  if (lane < S::kRowsPerWarp) {
    valid = base + r0 + lane < a.m;
    count = int(s.rowcount[r0 + lane]);
    scan = s.scan[r0 + lane];
  }
  const bool ambiguous = valid && (count > 1 || scan != 0);
  const int jobs = ambiguous ? count + __popc(scan) * slice_columns : 0;
  int end = jobs;
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const int before = __shfl_up_sync(kFullWarp, end, offset);
    if (lane >= offset) end += before;
  }
  const int total = __shfl_sync(kFullWarp, end, 31);
  if (lane < S::kRowsPerWarp) {
    s.job_end[r0 + lane] = end;
    s.best[r0 + lane] = ~0ull;
  }
  __syncwarp();

  const bool deferred =
      total > 0 && a.deferred.rows && defer_rows<S>(a, s, group, gi, base, r0, slice_columns, total, ambiguous, end, jobs);
  if (total > 0 && !deferred) {
    // Lanes per job: the largest power of two that still serves every job in one round
    // (total · L ≤ 32), at most one float4 each. Forcing at least 8 or 32 lanes a distance
    // (whole 128-byte lines a load) measured slower than this rule on every row (H200,
    // 768/1000/1M: 157 ms with the rule, 200 with at least 8, 260 with 32; 128/1024/2M: 6.08,
    // 6.97, 10.5; reports/results/nvidia-h200/gemm-window-sweep.txt).
    const int widest = a.n >= 128 ? 32 : ((a.n + 3) >> 2);
    int lanes = 1;
    while (lanes * 2 <= widest && total * lanes * 2 <= 32) lanes *= 2;
    const int part = lane & (lanes - 1);
    const int per_round = 32 / lanes;
    for (int first = 0; first < total; first += per_round) {
      const int job = first + lane / lanes;
      double partial = 0.0;
      int row = -1;
      unsigned column = 0xffffffffu;
      if (job < total) {
        column = job_column<S>(s, group, r0, slice_columns, job, row);
        if (column != 0xffffffffu)
          partial = partial_distance(a.points + (base + row) * a.n,
                                     a.centroids + int64_t(group.slot_offset + int(column)) * a.n, a.n, part, lanes);
      }
      for (int offset = lanes >> 1; offset > 0; offset >>= 1) partial += __shfl_xor_sync(kFullWarp, partial, offset);
      if (part == 0 && column != 0xffffffffu) atomicMin(&s.best[row], pack_exact(partial, column));
    }
    __syncwarp();
    if (ambiguous) s.label[r0 + lane] = int(s.best[r0 + lane] & 0xffffffffu);
  }
  if (a.stats) {
    const unsigned long long rows = __popc(__ballot_sync(kFullWarp, valid));
    const unsigned long long ambiguous_rows = __popc(__ballot_sync(kFullWarp, ambiguous));
    int slices = ambiguous ? __popc(scan) : 0;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) slices += __shfl_xor_sync(kFullWarp, slices, offset);
    if (lane == 0) {
      atomicAdd(&a.stats[0], rows);
      atomicAdd(&a.stats[1], ambiguous_rows);
      atomicAdd(&a.stats[2], static_cast<unsigned long long>(slices));
      atomicAdd(&a.stats[3], static_cast<unsigned long long>(total));
    }
  }
  __syncwarp();
  if (lane < S::kRowsPerWarp) {
    s.rowcount[r0 + lane] = 0;
    s.scan[r0 + lane] = 0;
  }
  __syncwarp();
}

}  // namespace mk::gemm_window
