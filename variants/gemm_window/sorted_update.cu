#include "variants/gemm_window/sorted_update.hpp"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>

#include "core/errors.hpp"

namespace mk::gemm_window {
namespace {

// A warp owns one 32-dim slice (lanes are dimensions) of kPiece consecutive entries of the
// label-sorted order: pieces × ⌈N/32⌉ warps. About (M/kPiece + K)·N atomics a group. One warp
// a piece walking it once per 32 dims took 6.0 ms of a 24 ms iteration at 768/1000/1M (1024
// warps for 1M points, latency-bound; ncu, H200, afe839a, ab/gemm-window-sorted-slices.txt). A
// warp over 2-8 consecutive slices, reading up to 1 KB of each point contiguously, was 1.5-3.1x
// slower (5.45 ms at 768/1000/1M: fewer warps in flight; ab/gemm-window-sorted-slice-groups.txt).
constexpr int kPiece = 1024;
constexpr int kWarps = 8;

__global__ void fill_iota(int32_t* __restrict__ out, int64_t m) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < m; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = int32_t(i);
}

// PerRunInertia (a batch in one launch): each run's squares go to inertia[slot / inertia_span],
// its problem's, instead of the block's sum to inertia[0]. Its own instantiation: the branch in
// every inlined flush doubled the one-problem kernel's code (63 KB to 136 KB, sm_90).
// Offset: a point's first element as a 32-bit index where M·N < 2^32, so a gather's address is
// one IMAD.WIDE from the lane's column; the 64-bit index (sign extension, a 64-bit multiply and
// a LEA pair) was ~12 of the ~17.6 instructions an entry at 128/1024/2M (ncu source counters,
// H200, dc9e545).
template <bool PerRunInertia, typename Offset>
__global__ void __launch_bounds__(kWarps * 32)
    sum_label_runs(const int32_t* __restrict__ labels, const int32_t* __restrict__ order, const float* __restrict__ points,
                   const float* __restrict__ centroids, int64_t m, int n, int slices, int slot_offset, double* sums,
                   unsigned long long* counts, double* inertia, int inertia_span) {
  const unsigned full = 0xffffffffu;
  __shared__ double block_squares[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t task = int64_t(blockIdx.x) * kWarps + warp;
  const int64_t piece = task / slices;
  const int d0 = int(task - piece * slices) * 32;
  const int64_t begin = piece * kPiece;
  double squares = 0.0;
  if (begin < m) {  // whole warp; no return before the block's barrier
    const int64_t end = begin + kPiece < m ? begin + kPiece : m;
    const int d = d0 + lane;
    const bool inside = d < n;
    const float* column = points + (inside ? d : 0);
    int label = -1, run = 0;
    double sum = 0.0;
    float centre = 0.f;
    const auto flush = [&] {  // warp-uniform, as are label and run
      const int64_t slot = slot_offset + label;
      if (inside) atomicAdd(sums + slot * n + d, sum);
      if (d0 == 0 && lane == 0) atomicAdd(counts + slot, static_cast<unsigned long long>(run));
      if constexpr (PerRunInertia) {
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) squares += __shfl_xor_sync(full, squares, offset);
        if (lane == 0) atomicAdd(inertia + slot / inertia_span, squares);
        squares = 0.0;
      }
    };
    const auto start_run = [&](int key) {  // warp-uniform
      if (run > 0) flush();
      label = key;
      run = 0;
      sum = 0.0;
      centre = inside ? __ldg(centroids + int64_t(slot_offset + key) * n + d) : 0.f;
    };
    // A batch's 32 labels and points; lanes past the piece's end repeat its first point, so
    // every gather is in bounds and needs no guard of its own. The next batch's are loaded
    // before this one's gathers are consumed.
    const auto fetch = [&](int64_t j0, int& my_label, Offset& my_point) {
      const int64_t at = j0 + lane < end ? j0 + lane : begin;
      my_label = j0 + lane < end ? labels[at] : -1;
      my_point = Offset(order[at]) * Offset(n);
    };
    int my_label;
    Offset my_point;
    fetch(begin, my_label, my_point);
    for (int64_t j0 = begin; j0 < end; j0 += 32) {
      const int count = end - j0 < 32 ? int(end - j0) : 32;
      // The 32 gathers are issued before the walk consumes them.
      float values[32];
#pragma unroll
      for (int e = 0; e < 32; ++e) {
        const Offset point = __shfl_sync(full, my_point, e);
        values[e] = inside ? __ldg(column + point) : 0.f;
      }
      const int batch_label = my_label;
      if (j0 + 32 < end) fetch(j0 + 32, my_label, my_point);
      // A batch inside one run (most of them where runs are long: M/K entries a run on
      // average) is added by four independent FP64 chains instead of walked entry by entry.
      const int first = __shfl_sync(full, batch_label, 0), last = __shfl_sync(full, batch_label, 31);
      if (count == 32 && first == last) {  // warp-uniform
        if (first != label) start_run(first);
        double part[4] = {0.0, 0.0, 0.0, 0.0}, square[4] = {0.0, 0.0, 0.0, 0.0};
#pragma unroll
        for (int e = 0; e < 32; ++e) {
          const double v = double(values[e]);
          part[e & 3] += v;
          const double diff = v - centre;
          square[e & 3] = fma(diff, diff, square[e & 3]);
        }
        sum += (part[0] + part[1]) + (part[2] + part[3]);
        squares += (square[0] + square[1]) + (square[2] + square[3]);
        run += 32;
        continue;
      }
#pragma unroll
      for (int e = 0; e < 32; ++e) {
        const int key = __shfl_sync(full, batch_label, e);
        if (e < count) {  // warp-uniform, as is key
          if (key != label) start_run(key);
          sum += double(values[e]);
          const double diff = double(values[e]) - centre;
          squares = fma(diff, diff, squares);
          ++run;
        }
      }
    }
    if (run > 0) flush();
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) squares += __shfl_xor_sync(full, squares, offset);
  if (lane == 0) block_squares[warp] = squares;
  __syncthreads();
  if (threadIdx.x == 0) {
    double block = 0.0;
    for (int w = 0; w < kWarps; ++w) block += block_squares[w];
    if (block != 0.0) atomicAdd(inertia, block);
  }
}

}  // namespace

SortedUpdate::SortedUpdate(const Problem& problem, cudaStream_t stream, bool wide_gathers)
    : m_(problem.m), wide_gathers_(wide_gathers) {
  if (problem.m > INT32_MAX) throw UnsupportedError("gemm-window: update=sorted needs M < 2^31");
  const size_t m = size_t(problem.m);
  labels_.allocate(size_t(problem.k.count()) * m, "gemm-window sorted update: labels");
  iota_.allocate(m, "gemm-window sorted update: point indices");
  sorted_labels_.allocate(m, "gemm-window sorted update: sorted labels");
  order_.allocate(m, "gemm-window sorted update: sorted point indices");
  // CUB's scratch depends on the key bits: the largest over the range's Ks.
  for (int k = problem.k.kmin; k <= problem.k.kmax; ++k) {
    size_t bytes = 0;
    gpu::check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, labels_.get(), sorted_labels_.get(), iota_.get(),
                                               order_.get(), int(problem.m), 0, bits_for(k), stream),
               "gemm-window sorted update: radix sort size query");
    scratch_bytes_ = std::max(scratch_bytes_, bytes);
  }
  scratch_.allocate(std::max<size_t>(scratch_bytes_, 1), "gemm-window sorted update: radix sort scratch");
  fill_iota<<<1024, 256, 0, stream>>>(iota_.get(), problem.m);
  gpu::check_launch("gemm-window fill_iota");
}

SortedUpdate::~SortedUpdate() = default;

double SortedUpdate::footprint_bytes(const Problem& problem) {
  // Labels per K, point indices, sorted labels and indices, and CUB's scratch (about the
  // size of one more key-value pair array).
  return (double(problem.k.count()) + 5.0) * double(problem.m) * 4.0;
}

void SortedUpdate::accumulate(const gpu::PointsView& points, const float* centroids, const KRange& k,
                              const gpu::AccumulatorView& acc, cudaStream_t stream, int inertia_span) {
  const int64_t pieces = (m_ + kPiece - 1) / kPiece;
  const int slices = (points.n + 31) / 32;
  const int grid = int((pieces * slices + kWarps - 1) / kWarps);
  for (int kk = k.kmin; kk <= k.kmax; ++kk) {
    const int g = kk - k.kmin;
    size_t bytes = scratch_bytes_;
    gpu::check(cub::DeviceRadixSort::SortPairs(scratch_.get(), bytes, labels_.get() + size_t(g) * m_,
                                               sorted_labels_.get(), iota_.get(), order_.get(), int(m_), 0,
                                               bits_for(kk), stream),
               "gemm-window sorted update: radix sort");
    const bool narrow = !wide_gathers_ && double(m_) * double(points.n) < 0x1p32;
    const auto kernel = inertia_span > 0 ? (narrow ? sum_label_runs<true, uint32_t> : sum_label_runs<true, int64_t>)
                                         : (narrow ? sum_label_runs<false, uint32_t> : sum_label_runs<false, int64_t>);
    kernel<<<grid, kWarps * 32, 0, stream>>>(sorted_labels_.get(), order_.get(), points.data, centroids, m_, points.n,
                                             slices, k.slot_offset(kk), acc.sums, acc.counts,
                                             inertia_span > 0 ? acc.inertia : acc.inertia + g, inertia_span);
    gpu::check_launch("gemm-window sum_label_runs");
  }
}

}  // namespace mk::gemm_window
