// csr-sparse (seed 004): the points are converted once, on the device, to CSR (count the
// non-zeros of every row, exclusive scan with cub::DeviceScan, scatter), and every
// iteration works on the non-zeros only:
//   d(x,c) = ‖x‖² + ‖c‖² − 2·x·c,   x·c summed over the row's non-zeros,
// with ‖x‖² computed once at prepare and ‖c‖² by a small kernel at the start of every
// iteration. The update adds only the non-zeros (zeros add nothing to a sum). The sparsity
// is measured again on the device while building the CSR (non-zeros / M·N), independently
// of the value the dataset loader recorded, which is what `auto` reads.
//
// Accuracy. The expansion can mis-rank near-ties in FP32, so each row keeps its best and
// second-best distance and, when
//     second − best ≤ w·(‖x‖² + best),   w = max(1e-4, 6·2⁻²⁴·(nnz + 8)),
// re-ranks every centroid of that K in FP64 (float products are exact in FP64, so that
// ranking is as good as an exact distance). w is twice a first-order bound on the FP32
// error of the expansion (each term within (nnz+8)·2⁻²⁴·(‖x‖²+‖c‖²), and ‖c‖² ≤ 2‖x‖² +
// 2·d(x,c)), so any pair the FP32 ranking could have swapped is re-checked. The winner's
// distance (for the inertia) is then evaluated in FP64 too: the FP32 expansion loses
// ~1e-6·‖x‖² to cancellation, more than the 1e-5 inertia tolerance allows when points sit
// far from the origin. That costs one FP64 dot product over the non-zeros per K per row —
// cheap on H100/A100, noticeable on GPUs with 1/32-rate FP64.
//
// Parameters:
//   block          threads per block.
//   rows_per_warp  1: 32 lanes split a row's non-zeros (long rows); 4: 8 lanes per row;
//                  32: one thread per row (the seed's kernel; short rows).
//   centroids      shared (staged per block: the column gathers hit shared memory) or global.
//   accumulate     shared (block-private FP32 sums, flushed by FP64 atomics) or global.
//
// The dense copy LloydState uploads stays allocated (LloydState owns it); iterations never
// read it.
#include <cub/cub.cuh>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "core/errors.hpp"
#include "variants/variant.hpp"
#include "variants/common/block_accumulators.cuh"
#include "variants/common/centroid_source.cuh"
#include "variants/common/gpu_lloyd_state.cuh"

namespace mk {
namespace {

constexpr float kTieWindowFloor = 1e-4f;
constexpr float kTieWindowPerTerm = 6.0f * 5.9604645e-8f;  // 6·2⁻²⁴

struct CsrView {
  const int64_t* row_ptr;  // m+1
  const int* cols;         // nnz, ascending within a row
  const float* values;     // nnz
  const float* norm_f;     // ‖x‖² per row, FP32 (ranking)
  const double* norm_d;    // ‖x‖² per row, FP64 (re-checks, inertia)
  int64_t m;
  int n;
};

// Non-zeros per row into row_ptr[0..m-1]; the scan turns them into offsets in place.
__global__ void count_row_nonzeros(gpu::PointsView points, int64_t* row_ptr) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < points.m;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t count = 0;
    for (int d = 0; d < points.n; ++d) count += points.at(i, d) != 0.f;
    row_ptr[i] = count;
  }
}

__global__ void scatter_rows(gpu::PointsView points, const int64_t* __restrict__ row_ptr, int* __restrict__ cols,
                             float* __restrict__ values, float* __restrict__ norm_f, double* __restrict__ norm_d) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < points.m;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t position = row_ptr[i];
    double norm = 0.0;
    for (int d = 0; d < points.n; ++d) {
      const float value = points.at(i, d);
      if (value == 0.f) continue;
      cols[position] = d;
      values[position] = value;
      ++position;
      norm += double(value) * double(value);
    }
    norm_f[i] = float(norm);
    norm_d[i] = norm;
  }
}

__global__ void centroid_norms(const float* __restrict__ centroids, int slots, int n, float* __restrict__ norm_f,
                               double* __restrict__ norm_d) {
  for (int s = blockIdx.x * blockDim.x + threadIdx.x; s < slots; s += gridDim.x * blockDim.x) {
    double norm = 0.0;
    for (int d = 0; d < n; ++d) {
      const double value = centroids[int64_t(s) * n + d];
      norm += value * value;
    }
    norm_f[s] = float(norm);
    norm_d[s] = norm;
  }
}

// x·c in FP64 over the row's non-zeros, summed over the row's lane group.
template <class Source>
__device__ __forceinline__ double dot_fp64(const CsrView& csr, const Source& source, int centroid_base, int64_t begin,
                                           int64_t end, int member, int width, unsigned mask) {
  double dot = 0.0;
  for (int64_t j = begin + member; j < end; j += width)
    dot = fma(double(csr.values[j]), double(source[centroid_base + csr.cols[j]]), dot);
  return gpu::group_sum(dot, width, mask);
}

template <class Source>
__global__ void __launch_bounds__(512, 1)
    csr_step(CsrView csr, const float* __restrict__ centroids, const float* __restrict__ centroid_norm_f,
             const double* __restrict__ centroid_norm_d, gpu::KRangeView ks, gpu::AccumulatorView acc,
             gpu::SharedLayout layout, int group_width, int iterations_per_flush) {
  const gpu::BlockAccumulators block_acc = gpu::BlockAccumulators::carve(layout);
  const Source source = block_acc.begin<Source>(centroids, ks.slots, csr.n);

  const int n = csr.n;
  const int64_t m = csr.m;
  const int lane = threadIdx.x & 31;
  const int width = group_width;  // lanes per row
  const int member = lane & (width - 1);
  const unsigned mask = gpu::group_mask(lane, width);
  const int rows_per_block_iteration = blockDim.x / width;
  int since_flush = 0;
  // Block-uniform trip count, so the flush barriers are reached by every thread. Groups of
  // one warp work on different rows and diverge; their shuffles name only the group's lanes.
  for (int64_t block_base = int64_t(blockIdx.x) * rows_per_block_iteration; block_base < m;
       block_base += int64_t(gridDim.x) * rows_per_block_iteration) {
    const int64_t row = block_base + threadIdx.x / width;
    const bool valid = row < m;
    const int64_t begin = valid ? csr.row_ptr[row] : 0;
    const int64_t end = valid ? csr.row_ptr[row + 1] : 0;
    const float x_norm = valid ? csr.norm_f[row] : 0.f;
    const double x_norm_d = valid ? csr.norm_d[row] : 0.0;
    const float window = fmaxf(kTieWindowFloor, kTieWindowPerTerm * float(end - begin + 8));
    for (int k = ks.kmin; k <= ks.kmax; ++k) {
      const int first = ks.offset(k);
      float best = FLT_MAX, second = FLT_MAX;
      int best_c = 0;
      for (int c = 0; c < k; ++c) {
        const int centroid_base = (first + c) * n;
        float dot = 0.f;
        for (int64_t j = begin + member; j < end; j += width)
          dot = fmaf(csr.values[j], source[centroid_base + csr.cols[j]], dot);
        // Identical in every lane of the group, so the decisions below are group-uniform.
        dot = gpu::group_sum(dot, width, mask);
        const float dist = x_norm + centroid_norm_f[first + c] - 2.f * dot;
        if (dist < best) {  // strict: the lowest index wins ties, like the reference
          second = best;
          best = dist;
          best_c = c;
        } else if (dist < second) {
          second = dist;
        }
      }
      double best_d;
      if (k > 1 && second - best <= window * (x_norm + fmaxf(best, 0.f))) {
        best_d = DBL_MAX;
        for (int c = 0; c < k; ++c) {
          const double dot = dot_fp64(csr, source, (first + c) * n, begin, end, member, width, mask);
          const double dist = x_norm_d + centroid_norm_d[first + c] - 2.0 * dot;
          if (dist < best_d) {
            best_d = dist;
            best_c = c;
          }
        }
      } else {
        const double dot = dot_fp64(csr, source, (first + best_c) * n, begin, end, member, width, mask);
        best_d = x_norm_d + centroid_norm_d[first + best_c] - 2.0 * dot;
      }
      best_d = fmax(best_d, 0.0);
      if (valid) {
        const int slot = first + best_c;
        for (int64_t j = begin + member; j < end; j += width)
          block_acc.add_value(acc, int64_t(slot) * n + csr.cols[j], csr.values[j]);
        if (member == 0) {
          block_acc.add_count(acc, slot, 1u);
          atomicAdd(&block_acc.inertia[k - ks.kmin], best_d);
          if (acc.labels) acc.labels[int64_t(k - ks.kmin) * m + row] = best_c;
        }
      }
    }
    block_acc.flush_every(since_flush, iterations_per_flush, acc);
  }
  block_acc.flush_last(acc);
}

using StepKernel = void(CsrView, const float*, const float*, const double*, gpu::KRangeView, gpu::AccumulatorView,
                        gpu::SharedLayout, int, int);

StepKernel* pick_kernel(bool centroids_in_shared) {
  return centroids_in_shared ? csr_step<gpu::SharedCentroids> : csr_step<gpu::GlobalCentroids>;
}

// Device bytes besides LloydState: row offsets, FP32+FP64 row norms, and 8 bytes
// (column + value) per non-zero, estimated from the known sparsity (0 = assume dense).
double csr_bytes(const Problem& problem) {
  const double density = std::min(1.0, std::max(0.0, 1.0 - problem.sparsity));
  return double(problem.m + 1) * 8.0 + double(problem.m) * 12.0 + density * double(problem.m) * problem.n * 8.0 +
         double(problem.k.sum()) * 12.0;
}

class CsrSparseRun : public gpu::BlockAccumulatorRun<StepKernel> {
 public:
  CsrSparseRun(const Problem& problem, const Dataset& data, const Params& params, const DeviceInfo& device)
      : BlockAccumulatorRun(problem, data, Layout::AoS, params.at("block").get<int>(),
                            gpu::shared_layout_from_params(problem, params)),
        group_width_(32 / params.at("rows_per_warp").get<int>()) {
    if (group_width_ < 1 || 32 % group_width_ != 0 || group_width_ * params.at("rows_per_warp").get<int>() != 32)
      throw UnsupportedError("csr-sparse: rows_per_warp must divide 32 into power-of-two lane groups, got " +
                             params.at("rows_per_warp").dump());
    build_csr();
    const int slots = problem.k.sum();
    centroid_norm_f_.allocate(slots, "centroid norms (FP32)");
    centroid_norm_d_.allocate(slots, "centroid norms (FP64)");

    use_kernel(pick_kernel(layout_.centroids_in_shared), "csr_step", "csr-sparse", device);
    plan_resident_grid(device, block_ / group_width_);  // rows per block iteration
  }

  void iterate(bool store_labels) override {
    state_.zero_accumulators();
    const gpu::KRangeView ks = state_.k_range();
    const int n = state_.problem().n;
    centroid_norms<<<(ks.slots + 127) / 128, 128, 0, state_.stream()>>>(state_.centroids(), ks.slots, n,
                                                                         centroid_norm_f_.get(), centroid_norm_d_.get());
    gpu::check_launch("centroid_norms");
    launch(csr_view(), state_.centroids(), centroid_norm_f_.get(), centroid_norm_d_.get(), ks,
           state_.accumulators(store_labels), layout_, group_width_, iterations_per_flush_);
    state_.finalize();
  }

 private:
  void build_csr() {
    const gpu::PointsView points = state_.points();
    const cudaStream_t stream = state_.stream();
    const int64_t m = points.m;
    row_ptr_.allocate(size_t(m) + 1, "CSR row offsets");
    gpu::check(cudaMemsetAsync(row_ptr_.get() + m, 0, sizeof(int64_t), stream), "CSR row offsets");
    const int block = 256;
    const int grid = int(std::min<int64_t>((m + block - 1) / block, 65535));
    count_row_nonzeros<<<grid, block, 0, stream>>>(points, row_ptr_.get());
    gpu::check_launch("count_row_nonzeros");

    size_t scratch_bytes = 0;
    gpu::check(cub::DeviceScan::ExclusiveSum(nullptr, scratch_bytes, row_ptr_.get(), m + 1, stream),
               "cub::DeviceScan::ExclusiveSum (size query)");
    gpu::DeviceBuffer<unsigned char> scratch(scratch_bytes, "CSR scan scratch");
    gpu::check(cub::DeviceScan::ExclusiveSum(scratch.get(), scratch_bytes, row_ptr_.get(), m + 1, stream),
               "cub::DeviceScan::ExclusiveSum");
    int64_t nnz = 0;
    gpu::check(cudaMemcpyAsync(&nnz, row_ptr_.get() + m, sizeof(int64_t), cudaMemcpyDeviceToHost, stream),
               "read CSR non-zero count");
    gpu::check(cudaStreamSynchronize(stream), "CSR scan");
    nnz_ = nnz;
    measured_sparsity_ = 1.0 - double(nnz) / (double(m) * points.n);
    // The problem's sparsity comes from the dataset loader and drives `auto` and the
    // memory estimate; say so when the device count disagrees with it.
    const double recorded = state_.problem().sparsity;
    if (std::abs(measured_sparsity_ - recorded) > 0.01)
      std::fprintf(stderr, "csr-sparse: measured sparsity %.4f on the device, problem recorded %.4f\n",
                   measured_sparsity_, recorded);

    cols_.allocate(size_t(nnz), "CSR column indices");
    values_.allocate(size_t(nnz), "CSR values");
    norm_f_.allocate(size_t(m), "row norms (FP32)");
    norm_d_.allocate(size_t(m), "row norms (FP64)");
    scatter_rows<<<grid, block, 0, stream>>>(points, row_ptr_.get(), cols_.get(), values_.get(), norm_f_.get(),
                                             norm_d_.get());
    gpu::check_launch("scatter_rows");
    gpu::check(cudaStreamSynchronize(stream), "CSR scatter");
  }

  CsrView csr_view() const {
    const auto& problem = state_.problem();
    return {row_ptr_.get(), cols_.get(), values_.get(), norm_f_.get(), norm_d_.get(), problem.m, problem.n};
  }

  int group_width_;
  int64_t nnz_ = 0;
  double measured_sparsity_ = 0;
  gpu::DeviceBuffer<int64_t> row_ptr_;
  gpu::DeviceBuffer<int> cols_;
  gpu::DeviceBuffer<float> values_;
  gpu::DeviceBuffer<float> norm_f_;
  gpu::DeviceBuffer<double> norm_d_;
  gpu::DeviceBuffer<float> centroid_norm_f_;
  gpu::DeviceBuffer<double> centroid_norm_d_;
};

class CsrSparse : public Variant {
 public:
  std::string name() const override { return "csr-sparse"; }
  std::string description() const override {
    return "seed 004: CSR built on the device, distances as ‖x‖²+‖c‖²−2x·c over non-zeros with FP64 re-check of "
           "near-ties, update over non-zeros only";
  }
  bool runs_on_gpu() const override { return true; }

  // Dense data is allowed (it is only slow); `auto` decides when CSR pays off.
  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    if (problem.streamed) return kRefuseStreamed;
    if (auto why = gpu::check_block_accumulators(problem, device)) return why;
    return gpu::check_fits_in_memory(problem, device, csr_bytes(problem));
  }

  // The dense points LloydState uploads (the CSR is built from them on the device) plus the CSR.
  DeviceFootprint device_footprint(const Problem& problem, const Params& params, const DeviceInfo& device,
                                   bool with_labels) const override {
    return Variant::device_footprint(problem, params, device, with_labels).add("CSR arrays", csr_bytes(problem));
  }

  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    ParamSpace space;
    space.axes.push_back({"block", {128, 256, 512}, "threads per block"});
    space.axes.push_back({"rows_per_warp", {1, 4, 32}, "rows a warp works on at once (32/rows lanes per row)"});
    space.axes.push_back({"centroids", {"shared", "global"}, "where the column gathers read centroids"});
    space.axes.push_back({"accumulate", {"shared", "global"}, "block-private FP32 sums or global FP64 atomics"});
    space.restrictions.push_back(gpu::shared_memory_restriction(problem, device));
    return space;
  }

  // Heuristic: 256 threads; lanes per row ≈ expected non-zeros per row (N·(1−sparsity)):
  // one thread per row below 4 non-zeros, 8 lanes per row below 24, else a whole warp;
  // shared memory as gpu::default_shared_placement chooses it: block-private sums when they
  // fit, then staged centroids when they also fit (the column gathers are scattered, which
  // shared memory serves better than the L1).
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    const double nonzeros_per_row = problem.n * std::min(1.0, std::max(0.0, 1.0 - problem.sparsity));
    const int rows_per_warp = nonzeros_per_row < 4 ? 32 : nonzeros_per_row < 24 ? 4 : 1;
    const gpu::SharedPlacement shared = gpu::default_shared_placement(problem, device);
    return {{"block", 256},
            {"rows_per_warp", rows_per_warp},
            {"centroids", shared.centroids_param()},
            {"accumulate", shared.accumulate_param()}};
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    return std::make_unique<CsrSparseRun>(problem, data, params, device);
  }
};

MKBENCH_REGISTER_VARIANT(CsrSparse);

}  // namespace
}  // namespace mk
