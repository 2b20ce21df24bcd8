#pragma once
// arbitrate=deferred: the queue the main kernel fills (deferred_queue.hpp) and the kernel that
// settles it, between the main kernel and the sorted update, which reads the labels it fixes.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/problem.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/gemm_window/config.hpp"
#include "variants/gemm_window/deferred_queue.hpp"

namespace mk::gemm_window {

// The queue's default size: 32 columns and one row a point (whatever the number of Ks), at most
// 2^28 columns and 2^26 rows (512 MiB and 1 GiB); a warp whose jobs no longer fit arbitrates in
// the block. Measured need on uniform data (MKBENCH_GEMM_WINDOW_STATS, H200, cda2be8): 1.4
// exact distances a point at 128/1024/2M, 2.9 at 768/1000/1M, 7.5 at 256/4096/1M with
// 64x128/2x2 and 26.7 with 128x64/wgmma, whose scanned slices are twice as long (K/8 columns
// against K/16): with 16 a point about 300K of its 700K arbitrated rows did not fit, with 32
// about 85K; 64 deferred every row but was no faster (9.08-9.21 ms against 9.08-9.20, H200,
// fc57f3a against 2d402ed, ab/gemm-window-wgmma-256.txt).
constexpr int kDeferredColumnsPerPoint = 32;
constexpr int64_t kDeferredMaxColumns = int64_t(1) << 28;
constexpr int64_t kDeferredMaxRows = int64_t(1) << 26;

class DeferredArbitration {
 public:
  // column_capacity < 0: the default (kDeferredColumnsPerPoint a point, at most kDeferredMaxColumns);
  // row_capacity < 0: the default (a row a point, at most kDeferredMaxRows). The rows never exceed
  // half the columns: a queued row has at least two columns (a listed pair, or one listed and a
  // slice to scan). The overrides are for tests of the overflow paths.
  DeferredArbitration(const Problem& problem, int64_t column_capacity, int64_t row_capacity = -1);
  // The queue for one launch; reset() zeroes its counters on the stream first.
  DeferredQueue queue() const;
  void reset(cudaStream_t stream);
  // Exact labels for every queued row: labels_sorted ([group][m], the sort's input) and,
  // when not null, labels ([group][m], the caller's); batched (a batch in one launch): both
  // [m], one a point, and labels_sorted holds slots (group b's slot_offset + label).
  void resolve(const float* points, const float* centroids, const GroupInfo* groups, int n, int64_t m, bool batched,
               int32_t* labels_sorted, int32_t* labels, int sm_count, cudaStream_t stream);
  static double footprint_bytes(const Problem& problem, int64_t column_capacity = -1, int64_t row_capacity = -1);

 private:
  static int64_t columns_for(const Problem& problem, int64_t column_capacity);
  static int64_t rows_for(const Problem& problem, int64_t column_capacity, int64_t row_capacity);
  int64_t rows_capacity_ = 0, column_capacity_ = 0;
  gpu::DeviceBuffer<DeferredRow> rows_;
  gpu::DeviceBuffer<unsigned short> columns_;
  gpu::DeviceBuffer<unsigned long long> counters_{2, "gemm-window deferred counters"};
};

}  // namespace mk::gemm_window
