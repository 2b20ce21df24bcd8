// warp-centric (Cordeiro & Zola, "Parallel K-means on GPU using Warp-Centric Strategies",
// cited by seed 004): a warp owns P points and its lanes split the feature dimension. Lane l
// caches coordinates l, l+32, l+64, l+96 of each of its P points in registers, computes
// partial squared distances, and a butterfly shuffle (__shfl_xor_sync) leaves the full
// distance in every lane, so every lane takes the same argmin without a broadcast. Every K
// of the range is handled in the same pass. The update adds each lane's coordinates into
// block-private FP32 sums in shared memory (flushed by FP64 atomics, see
// block_accumulators.cuh) when they fit, else straight into the FP64 global sums; lanes
// write consecutive coordinates, so they never collide with each other.
//
// Meant for wide points (N ≥ 32): below that, lanes sit idle. Points are read row by row,
// so only the AoS layout makes the loads coalesced; the layout axis is {aos}.
//
// Parameters:
//   points_per_warp  P: each centroid entry loaded once serves P points and the P shuffle
//                    reductions interleave; costs 4·P registers for the coordinate cache
//                    (about 32/32/64/106 registers per thread for P = 1/2/4/8 on sm_90).
//   block            threads per block.
//   centroids        shared (staged per block) or global (read-only cache).
//   accumulate       shared (block-private sums) or global (FP64 atomics per coordinate).
#include <algorithm>
#include <cfloat>
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

// Coordinates per lane per point: N ≤ 32·kMaxChunks.
constexpr int kMaxChunks = 4;
constexpr int kMaxDimensions = 32 * kMaxChunks;
constexpr int kMinDimensions = 16;

template <class Source, int P>
__global__ void __launch_bounds__(512)
    warp_centric_step(gpu::PointsView points, const float* __restrict__ centroids, gpu::KRangeView ks,
                      gpu::AccumulatorView acc, gpu::SharedLayout layout, int iterations_per_flush) {
  const gpu::BlockAccumulators block_acc = gpu::BlockAccumulators::carve(layout);
  const Source source = block_acc.begin<Source>(centroids, ks.slots, points.n);

  const int n = points.n;
  const int64_t m = points.m;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int64_t points_per_block_iteration = int64_t(blockDim.x >> 5) * P;
  int since_flush = 0;
  // Block-uniform trip count, so the flush barriers are reached by every thread.
  for (int64_t block_base = int64_t(blockIdx.x) * points_per_block_iteration; block_base < m;
       block_base += int64_t(gridDim.x) * points_per_block_iteration) {
    const int64_t first_point = block_base + int64_t(warp) * P;
    float x[P][kMaxChunks];
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const int64_t i = first_point + p;
#pragma unroll
      for (int j = 0; j < kMaxChunks; ++j) {
        const int d = lane + 32 * j;
        // Coordinates past N and points past M read as 0 and add 0 to every distance.
        x[p][j] = (i < m && d < n) ? __ldg(points.data + i * n + d) : 0.f;
      }
    }
    for (int k = ks.kmin; k <= ks.kmax; ++k) {
      const int first = ks.offset(k);
      float best[P];
      int best_c[P];
#pragma unroll
      for (int p = 0; p < P; ++p) {
        best[p] = FLT_MAX;
        best_c[p] = 0;
      }
      for (int c = 0; c < k; ++c) {
        const int centroid_base = (first + c) * n;
        float coordinate[kMaxChunks];
#pragma unroll
        for (int j = 0; j < kMaxChunks; ++j) {
          const int d = lane + 32 * j;
          coordinate[j] = d < n ? source[centroid_base + d] : 0.f;
        }
        float dist[P];
#pragma unroll
        for (int p = 0; p < P; ++p) {
          float partial = 0.f;
#pragma unroll
          for (int j = 0; j < kMaxChunks; ++j) {
            const float diff = x[p][j] - coordinate[j];
            partial = fmaf(diff, diff, partial);
          }
          dist[p] = partial;
        }
        // Offsets outermost so the P independent reductions overlap their shuffle latency.
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1)
#pragma unroll
          for (int p = 0; p < P; ++p) dist[p] += __shfl_xor_sync(gpu::kFullWarp, dist[p], offset);
#pragma unroll
        for (int p = 0; p < P; ++p)
          if (dist[p] < best[p]) {  // strict: the lowest index wins ties, like the reference
            best[p] = dist[p];
            best_c[p] = c;
          }
      }
      double warp_inertia = 0.0;
#pragma unroll
      for (int p = 0; p < P; ++p) {
        const int64_t i = first_point + p;
        if (i >= m) continue;  // uniform across the warp
        const int slot = first + best_c[p];
#pragma unroll
        for (int j = 0; j < kMaxChunks; ++j) {
          const int d = lane + 32 * j;
          if (d < n) block_acc.add_value(acc, int64_t(slot) * n + d, x[p][j]);
        }
        if (lane == 0) {
          block_acc.add_count(acc, slot, 1u);
          if (acc.labels) acc.labels[int64_t(k - ks.kmin) * m + i] = best_c[p];
        }
        warp_inertia += double(best[p]);
      }
      if (lane == 0 && warp_inertia != 0.0) atomicAdd(&block_acc.inertia[k - ks.kmin], warp_inertia);
    }
    block_acc.flush_every(since_flush, iterations_per_flush, acc);
  }
  block_acc.flush_last(acc);
}

using StepKernel = void(gpu::PointsView, const float*, gpu::KRangeView, gpu::AccumulatorView, gpu::SharedLayout,
                        int);

template <class Source>
StepKernel* pick_for_source(int points_per_warp) {
  switch (points_per_warp) {
    case 1: return warp_centric_step<Source, 1>;
    case 2: return warp_centric_step<Source, 2>;
    case 4: return warp_centric_step<Source, 4>;
    case 8: return warp_centric_step<Source, 8>;
  }
  throw UnsupportedError("warp-centric: points_per_warp must be 1, 2, 4 or 8, got " + std::to_string(points_per_warp));
}

StepKernel* pick_kernel(bool centroids_in_shared, int points_per_warp) {
  return centroids_in_shared ? pick_for_source<gpu::SharedCentroids>(points_per_warp)
                             : pick_for_source<gpu::GlobalCentroids>(points_per_warp);
}

class WarpCentricRun : public gpu::BlockAccumulatorRun<StepKernel> {
 public:
  WarpCentricRun(const Problem& problem, const Dataset& data, const Params& params, const DeviceInfo& device)
      : BlockAccumulatorRun(problem, data, Layout::AoS, params.at("block").get<int>(),
                            gpu::shared_layout_from_params(problem, params)),
        points_per_warp_(params.at("points_per_warp").get<int>()) {
    use_kernel(pick_kernel(layout_.centroids_in_shared, points_per_warp_), "warp_centric_step", "warp-centric",
               device);
    plan_resident_grid(device, (block_ / 32) * points_per_warp_);
  }

  void iterate(bool store_labels) override {
    state_.zero_accumulators();
    launch(state_.points(), state_.centroids(), state_.k_range(), state_.accumulators(store_labels), layout_,
           iterations_per_flush_);
    state_.finalize();
  }

 private:
  int points_per_warp_;
};

class WarpCentric : public Variant {
 public:
  std::string name() const override { return "warp-centric"; }
  std::string description() const override {
    return "Cordeiro & Zola via seed 004: a warp per P points, lanes split the feature dimension, shuffle-reduced "
           "distances, block-private or global FP64 accumulation";
  }
  bool runs_on_gpu() const override { return true; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    if (problem.n < kMinDimensions) return "warp-centric needs N >= 16 (lanes split the feature dimension)";
    if (problem.n > kMaxDimensions)
      return "warp-centric caches each point's coordinates in registers (4 per lane): needs N <= " +
             std::to_string(kMaxDimensions) + ", got N=" + std::to_string(problem.n);
    if (auto why = gpu::check_block_accumulators(problem, device)) return why;
    return gpu::check_fits_in_memory(problem, device);
  }

  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    ParamSpace space;
    space.axes.push_back({"points_per_warp", {1, 2, 4, 8}, "points a warp classifies together"});
    space.axes.push_back({"block", {128, 256, 512}, "threads per block"});
    space.axes.push_back({"layout", {"aos"}, "point layout (rows are read by whole warps: AoS only)"});
    space.axes.push_back({"centroids", {"shared", "global"}, "where the assignment reads centroids"});
    space.axes.push_back({"accumulate", {"shared", "global"}, "block-private FP32 sums or global FP64 atomics"});
    space.restrictions.push_back(gpu::shared_memory_restriction(problem, device));
    return space;
  }

  // Heuristic: 256 threads; P=4: the kernel reserves registers for 4 coordinates per lane
  // per point whatever N is, so P=4 (~64 registers, half occupancy) is the largest P that
  // keeps enough warps resident, and gives 4× reuse of every centroid load plus 4
  // independent shuffle chains; shared memory as gpu::default_shared_placement chooses it
  // (block-private sums when they fit, then staged centroids when they also fit).
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    const int points_per_warp = 4;
    const gpu::SharedPlacement shared = gpu::default_shared_placement(problem, device);
    return {{"points_per_warp", points_per_warp},
            {"block", 256},
            {"layout", "aos"},
            {"centroids", shared.centroids_param()},
            {"accumulate", shared.accumulate_param()}};
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    return std::make_unique<WarpCentricRun>(problem, data, params, device);
  }
};

MKBENCH_REGISTER_VARIANT(WarpCentric);

}  // namespace
}  // namespace mk
