// arbitrate=deferred's second kernel: one warp a queued row, four of its candidates a pass. Its
// lanes share each candidate's distance (coalesced loads of the point and the centroids): FP32
// sums first, which settle the row where they prove the answer (fp32_screen.hpp), else FP64
// sums as in the block, whose smallest packed exact distance is the row's label. The label is
// written over the key winner the main kernel left in the sort's labels (and the caller's).
#include "variants/gemm_window/deferred_arbitration.hpp"

#include <algorithm>
#include <cfloat>

#include "core/errors.hpp"
#include "variants/gemm_window/candidate_distances.cuh"
#include "variants/gemm_window/exact_distance.cuh"
#include "variants/gemm_window/fp32_screen.hpp"

namespace mk::gemm_window {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr unsigned kAllLanes = 0xffffffffu;
constexpr int kBatch = 4;

// Pass j's kBatch candidates of a row: their columns (kNoColumn for padding past the row's
// count, measured against x itself and dropped) and their distances in T, summed over the
// warp. The butterfly leaves the same sum in every lane (each step adds the same two values).
template <typename T>
__device__ __forceinline__ void pass_distances(const DeferredRow& row, const GroupInfo& group, const float* x,
                                               const unsigned short* __restrict__ columns, uint32_t j, int n,
                                               const float* __restrict__ centroids, int lane,
                                               unsigned (&column)[kBatch], T (&distance)[kBatch]) {
  const float* c[kBatch];
#pragma unroll
  for (int q = 0; q < kBatch; ++q) {
    column[q] = j + q < row.count ? columns[row.first + j + q] : kNoColumn;  // one address: a broadcast
    c[q] = column[q] == kNoColumn ? x : centroids + int64_t(group.slot_offset + int(column[q])) * n;
  }
  candidate_distances<T, kBatch>(x, c, n, lane, 32, distance);
#pragma unroll
  for (int q = 0; q < kBatch; ++q) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) distance[q] += __shfl_xor_sync(kAllLanes, distance[q], offset);
  }
}

// Batched (a batch in one launch): labels one a point, and the sort's keys slots (update.cuh).
template <bool Batched>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    settle_deferred_rows(const DeferredRow* __restrict__ rows, const unsigned short* __restrict__ columns,
                         const unsigned long long* __restrict__ counters, unsigned long long row_capacity,
                         const float* __restrict__ points,
                         const float* __restrict__ centroids, const GroupInfo* __restrict__ groups, int n, int64_t m,
                         int32_t* labels_sorted, int32_t* labels) {
  const int lane = threadIdx.x & 31;
  // Reservations past the capacity were refused (their warps arbitrated in the block), and the
  // records of one that straddled it were marked empty.
  const unsigned long long queued = counters[0] < row_capacity ? counters[0] : row_capacity;
  const unsigned long long warps = static_cast<unsigned long long>(gridDim.x) * kWarpsPerBlock;
  for (unsigned long long r = static_cast<unsigned long long>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); r < queued;
       r += warps) {
    const DeferredRow row = rows[r];
    const GroupInfo group = groups[row.group];
    const float* x = points + int64_t(row.point) * n;
    // Every candidate in FP32 first (fp32_screen.hpp); the FP64 distances only where the two
    // smallest FP32 sums are too close to prove which the FP64 path would pick. Every lane holds
    // the same sums, so this is warp-uniform.
    float smallest = INFINITY, runner_up = INFINITY;
    unsigned smallest_column = 0;
    bool finite = true;
    for (uint32_t j = 0; j < row.count; j += kBatch) {
      unsigned column[kBatch];
      float distance[kBatch];
      pass_distances(row, group, x, columns, j, n, centroids, lane, column, distance);
#pragma unroll
      for (int q = 0; q < kBatch; ++q) {
        if (column[q] == kNoColumn) continue;
        finite = finite && distance[q] <= FLT_MAX;
        if (distance[q] < smallest) {
          runner_up = smallest;
          smallest = distance[q];
          smallest_column = column[q];
        } else if (distance[q] < runner_up && column[q] != smallest_column) {
          runner_up = distance[q];  // a scanned slice lists its first and second keys' columns again
        }
      }
    }
    unsigned long long best = ~0ull;
    if (finite && screen_decides(smallest, runner_up, n)) {
      best = smallest_column;
    } else {
      // kBatch candidates a pass: one load of each piece of x serves them all, and their sums
      // and reductions are independent chains. A pass's padding (past the row's count, or
      // kNoColumn) measures x against itself and is dropped.
      for (uint32_t j = 0; j < row.count; j += kBatch) {
        unsigned column[kBatch];
        double distance[kBatch];
        pass_distances(row, group, x, columns, j, n, centroids, lane, column, distance);
#pragma unroll
        for (int q = 0; q < kBatch; ++q)
          if (column[q] != kNoColumn) best = min(best, pack_exact(distance[q], column[q]));  // warp-uniform
      }
    }
    if (lane == 0 && best != ~0ull) {
      const int32_t label = int32_t(best & 0xffffffffu);
      const int64_t at = Batched ? int64_t(row.point) : int64_t(row.group) * m + row.point;
      labels_sorted[at] = Batched ? group.slot_offset + label : label;
      if (labels) labels[at] = label;
    }
  }
}

}  // namespace

int64_t DeferredArbitration::columns_for(const Problem& problem, int64_t column_capacity) {
  const int64_t capacity =
      column_capacity >= 0 ? column_capacity : std::min(problem.m * kDeferredColumnsPerPoint, kDeferredMaxColumns);
  return std::min<int64_t>(capacity, 0xffffffffll);  // DeferredRow::first is 32 bits
}

// A queued row has at least two columns (a listed pair, or one listed and a slice to scan), so
// more rows than half the columns could never be reserved.
int64_t DeferredArbitration::rows_for(const Problem& problem, int64_t column_capacity, int64_t row_capacity) {
  const int64_t rows = row_capacity >= 0 ? row_capacity : std::min(problem.m, kDeferredMaxRows);
  return std::min(rows, columns_for(problem, column_capacity) / 2);
}

DeferredArbitration::DeferredArbitration(const Problem& problem, int64_t column_capacity, int64_t row_capacity)
    : rows_capacity_(rows_for(problem, column_capacity, row_capacity)),
      column_capacity_(columns_for(problem, column_capacity)) {
  if (problem.m > INT32_MAX) throw UnsupportedError("gemm-window: arbitrate=deferred needs M < 2^31");
  rows_.allocate(size_t(std::max<int64_t>(rows_capacity_, 1)), "gemm-window deferred rows");
  columns_.allocate(size_t(std::max<int64_t>(column_capacity_, 1)), "gemm-window deferred columns");
}

DeferredQueue DeferredArbitration::queue() const {
  DeferredQueue q;
  q.rows = rows_.get();
  q.columns = columns_.get();
  q.counters = counters_.get();
  q.row_capacity = static_cast<unsigned long long>(rows_capacity_);
  q.column_capacity = static_cast<unsigned long long>(column_capacity_);
  return q;
}

void DeferredArbitration::reset(cudaStream_t stream) {
  gpu::check(cudaMemsetAsync(counters_.get(), 0, counters_.bytes(), stream), "gemm-window deferred counters");
}

void DeferredArbitration::resolve(const float* points, const float* centroids, const GroupInfo* groups, int n,
                                  int64_t m, bool batched, int32_t* labels_sorted, int32_t* labels, int sm_count,
                                  cudaStream_t stream) {
  // A persistent grid: the queue's length is only known on the device. 8 blocks of 8 warps an
  // SM keep enough loads in flight for one row at a time a warp.
  const int grid = std::max(1, sm_count) * 8;
  (batched ? settle_deferred_rows<true> : settle_deferred_rows<false>)<<<grid, kWarpsPerBlock * 32, 0, stream>>>(rows_.get(), columns_.get(), counters_.get(),
                                                                 static_cast<unsigned long long>(rows_capacity_),
                                                                 points, centroids, groups, n, m, labels_sorted, labels);
  gpu::check_launch("gemm-window settle_deferred_rows");
}

double DeferredArbitration::footprint_bytes(const Problem& problem, int64_t column_capacity, int64_t row_capacity) {
  return double(std::max<int64_t>(rows_for(problem, column_capacity, row_capacity), 1)) * sizeof(DeferredRow) +
         double(std::max<int64_t>(columns_for(problem, column_capacity), 1)) * sizeof(unsigned short) + 16.0;
}

}  // namespace mk::gemm_window
