#include "variants/tf32_window/run.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/common/near_tie_bound.hpp"
#include "variants/tf32_window/layout.hpp"
#include "variants/tf32_window/window_args.hpp"

namespace mk::tf32_window {
namespace {

class Tf32WindowRun : public gpu::GpuRun {
 public:
  Tf32WindowRun(const Problem& problem, const Dataset& data, const Params& params, const DeviceInfo& device,
                const Translation& translation)
      : GpuRun(problem, data, Layout::AoS),
        kpad_(int(padded_centroids(problem.k.kmax))),
        block_(params.at("block").get<int>()),
        shared_update_(shares_update(params)),
        kernel_(window_kernel_for(problem.n, skips_empty_tiles(params, kpad_), block_)) {
    const int n = problem.n;
    const std::vector<float>& center = translation.center;
    largest_ = translation.largest;
    center_.allocate(size_t(n), "tf32-window center");
    image_.allocate(size_t(kpad_) * 8 * f16_steps(n), "tf32-window centroid image");  // kpad·16·steps halves
    f16_scalars_.allocate(3, "tf32-window f16 scalars");
    norms_.allocate(size_t(kpad_), "tf32-window centroid norms");
    gpu::check(cudaMemcpyAsync(center_.get(), center.data(), center.size() * sizeof(float), cudaMemcpyHostToDevice,
                               state_.stream()),
               "tf32-window center upload");
    smem_ = size_t(smem_for(kpad_, n, block_, shared_update_ ? shared_sums_bytes(problem.k.kmax, n) : 0));
    gpu::check(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel_),
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_)),
               "tf32-window shared memory limit");
    int resident = 0;
    gpu::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, reinterpret_cast<const void*>(kernel_),
                                                             block_, smem_),
               "tf32-window occupancy");
    if (resident < 1)
      throw UnsupportedError("tf32-window: block=" + std::to_string(block_) +
                             " cannot be resident on this device (registers or shared memory)");
    const int64_t steps = (problem.m + 31) / 32;
    const int64_t useful = (steps + block_ / 32 - 1) / (block_ / 32);
    const int64_t requested = params.at("grid").get<int64_t>();
    const int64_t persistent = int64_t(resident) * std::max(1, device.sm_count);
    grid_ = std::max<int64_t>(1, std::min(requested == 0 ? persistent : requested, useful));
    key_model_ = fp16_keys::key_error_model(16 * f16_steps(n), 0);
    key_model_.pack_rel = 0.f;  // plain keys: no index bits in them
    if (std::getenv("MKBENCH_WINDOW_STATS")) {
      stats_.allocate(3, "tf32-window stats");
      gpu::check(cudaMemsetAsync(stats_.get(), 0, stats_.bytes(), state_.stream()), "zero stats");
    }
    gpu::check(cudaStreamSynchronize(state_.stream()), "tf32-window setup");
  }

  // MKBENCH_WINDOW_STATS=1 reports how often the exact paths ran: the share of points with
  // more than one in-window candidate or with a column scan sets what the window costs.
  ~Tf32WindowRun() override {
    if (!stats_.get()) return;
    unsigned long long stats[3] = {0, 0, 0};
    if (cudaStreamSynchronize(state_.stream()) != cudaSuccess ||
        cudaMemcpy(stats, stats_.get(), sizeof stats, cudaMemcpyDeviceToHost) != cudaSuccess)
      return;
    const double rows = stats[0] ? double(stats[0]) : 1.0;
    std::fprintf(stderr,
                 "tf32-window stats: %llu point-iterations, %.4f%% with several in-window candidates, %.4f%% with "
                 "a column scan\n",
                 stats[0], 100.0 * double(stats[1]) / rows, 100.0 * double(stats[2]) / rows);
  }

  void iterate(bool store_labels) override {
    const Problem& problem = state_.problem();
    const cudaStream_t stream = state_.stream();
    state_.zero_accumulators();
    const gpu::AccumulatorView acc = state_.accumulators(store_labels);
    WindowArgs args;
    args.points = state_.points().data;
    args.centroids = state_.centroids();
    args.image = image_.get();
    args.norms = norms_.get();
    args.center = center_.get();
    args.m = problem.m;
    args.n = problem.n;
    args.k = problem.k.kmax;
    args.kpad = kpad_;
    args.sums = acc.sums;
    args.counts = acc.counts;
    args.inertia = acc.inertia;
    args.labels = acc.labels;
    args.stats = stats_.get();
    args.next_step = next_step_.get();
    args.f16_steps = f16_steps(problem.n);
    args.f16_scalars = f16_scalars_.get();
    args.key_model = key_model_;
    args.count_weight = float(1 << index_bits(kpad_));  // W ≥ 4·L: room for Σi of three keys
    args.shared_update = shared_update_;
    args.flush_steps = flush_steps(block_);
    gpu::check(cudaMemsetAsync(next_step_.get(), 0, next_step_.bytes(), stream), "tf32-window step counter");
    launch_build_f16_window_image(args, largest_, image_.get(), norms_.get(), f16_scalars_.get(), stream);
    kernel_<<<unsigned(grid_), unsigned(block_), smem_, stream>>>(args);
    gpu::check_launch("f16_window_kernel");
    state_.finalize();
  }

 private:
  int kpad_, block_;
  bool shared_update_;
  KernelFn kernel_;
  int64_t grid_ = 1;
  size_t smem_ = 0;
  float largest_ = 0.f;
  fp16_keys::KeyErrorModel key_model_{};
  gpu::DeviceBuffer<float> center_, image_, norms_, f16_scalars_;
  gpu::DeviceBuffer<unsigned long long> stats_;
  gpu::DeviceBuffer<unsigned long long> next_step_{1, "tf32-window step counter"};
};

}  // namespace

std::unique_ptr<PreparedRun> make_window_run(const Problem& problem, const Dataset& data, const Params& params,
                                             const DeviceInfo& device, const Translation& translation) {
  return std::make_unique<Tf32WindowRun>(problem, data, params, device, translation);
}

}  // namespace mk::tf32_window
