#include "variants/tensor_multik/run.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/common/packed_argmin.hpp"
#include "variants/tensor_multik/kernel_config.hpp"
#include "variants/tensor_multik/prepared_operands.hpp"

namespace mk::tensor_multik {
namespace {

class TensorMultiKRun : public gpu::GpuRun {
 public:
  TensorMultiKRun(const Problem& problem, const Dataset& data, const Params& params, const DeviceInfo& device)
      : GpuRun(problem, data, Layout::AoS) {
    if (params.at("update").get<std::string>() == "f16") point_scale_ = point_scale_for_update(data);
    const KernelConfig config = config_for(problem, params, device.cc_major, device.cc_minor, point_scale_);
    // Before NVRTC, whose #error would say the same less plainly.
    if (config.fetch_registers)
      if (auto refusal = fetch_registers_refusal(problem.n, problem.k.sum(), params))
        throw UnsupportedError("tensor-multik: " + *refusal);
    if (auto refusal = prepared_operands_refusal(problem.n, problem.k.sum(), params))
      throw UnsupportedError("tensor-multik: " + *refusal);
    if (auto refusal = int_group_min_refusal(params)) throw UnsupportedError("tensor-multik: " + *refusal);
    config_ = config;
    if (const char* path = std::getenv("MKBENCH_TIMELINE")) {
      timeline_path_ = path;
      config_.timeline = true;
    }
    block_ = config.block;
    dynamic_smem_ = size_t(dynamic_smem_bytes(problem.n, problem.k.sum(), config.block, config.stages, ring_kind(params)));
    kernel_ = loaded_kernel(config_);
    const int64_t steps = (problem.m + 31) / 32;
    const int64_t useful_blocks = (steps + block_ / 32 - 1) / (block_ / 32);
    int64_t grid = params.at("grid").get<int64_t>();
    if (grid == 0) {
      // Persistent grid: the blocks resident at once on every SM, no partial second wave.
      int resident = 0;
      gpu::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, reinterpret_cast<const void*>(kernel_),
                                                               block_, dynamic_smem_),
                 "occupancy query");
      if (resident < 1)
        throw UnsupportedError("tensor-multik: block=" + std::to_string(block_) +
                               " cannot be resident on this device (registers or shared memory)");
      grid = int64_t(resident) * std::max(1, device.sm_count);
    }
    grid_ = std::max<int64_t>(1, std::min(grid, useful_blocks));
    keep_mask_ = packed_keep_mask(problem.k.kmax);
    const int sum_k = problem.k.sum();
    sums_.allocate(size_t(sum_k) * problem.n, "tensor-multik sums");
    counts_.allocate(size_t(sum_k), "tensor-multik counts");
    inertia_.allocate(size_t(problem.k.count()), "tensor-multik inertia");
    // The blocks' ticket and the dynamic tail's chunk counter.
    blocks_done_.allocate(2, "tensor-multik block counter");
    if (config_.timeline) {
      timeline_.allocate(size_t(grid_) * timeline_record() + 1, "tensor-multik timeline");
      gpu::check(cudaMemsetAsync(timeline_.get(), 0, timeline_.bytes(), state_.stream()), "zero timeline");
    }
    // The kernel leaves these zero for the next launch; only the first needs clearing.
    cudaStream_t stream = state_.stream();
    gpu::check(cudaMemsetAsync(sums_.get(), 0, sums_.bytes(), stream), "zero sums");
    gpu::check(cudaMemsetAsync(counts_.get(), 0, counts_.bytes(), stream), "zero counts");
    gpu::check(cudaMemsetAsync(inertia_.get(), 0, inertia_.bytes(), stream), "zero inertia");
    gpu::check(cudaMemsetAsync(blocks_done_.get(), 0, blocks_done_.bytes(), stream), "zero block counter");
    if (config.prepared_operands) prepare_operands_once(problem, data, steps, stream);
    gpu::check(cudaStreamSynchronize(stream), "tensor-multik scratch");
  }

  ~TensorMultiKRun() override {
    if (timeline_.get()) write_timeline();
  }

  std::optional<double> conversion_ms() const override {
    if (!fragment_words_.get()) return std::nullopt;
    return conversion_ms_;
  }

  void iterate(bool store_labels) override {
    if (store_labels && !labels_kernel_) {
      KernelConfig with_labels = config_;
      with_labels.store_labels = config_.prepared_operands;
      labels_kernel_ = config_.prepared_operands ? loaded_kernel(with_labels) : kernel_;
    }
    launch(store_labels ? labels_kernel_ : kernel_, store_labels);
  }

  // The split step (variants/step.hpp): a kernel of its own whose last block leaves the sums
  // instead of dividing (built on first use; the timed iterate() never pays for it).
  void accumulate(const AccumulateOptions& options) override {
    launch(split_kernel(options.store_labels), options.store_labels);
    sums_left_ = true;
  }

  void prepare_split() override {
    for (bool store_labels : {false, true}) split_kernel(store_labels);
  }

  AccumulatorRefs accumulators() override {
    AccumulatorRefs refs = state_.accumulator_refs();
    refs.sums = sums_.get();  // the kernel's own FP64 sums; counts and inertia are the state's
    return refs;
  }

 private:
  cudaKernel_t split_kernel(bool store_labels) {
    cudaKernel_t& kernel = store_labels ? sums_labels_kernel_ : sums_kernel_;
    if (!kernel) {
      KernelConfig sums_config = config_;
      sums_config.sums_out = true;
      sums_config.store_labels = store_labels && config_.prepared_operands;
      kernel = loaded_kernel(sums_config);
    }
    return kernel;
  }

  void launch(cudaKernel_t kernel, bool store_labels) {
    // A split step left its sums for the update phase; every launch starts from zero sums.
    if (sums_left_) {
      gpu::check(cudaMemsetAsync(sums_.get(), 0, sums_.bytes(), state_.stream()), "tensor-multik: zero sums");
      sums_left_ = false;
    }
    auto acc = state_.accumulators(store_labels);
    const float* points = state_.points().data;
    long long m = state_.problem().m;
    float* centroids = state_.centroids_mutable();
    double* sums = sums_.get();
    unsigned long long* counts = counts_.get();
    double* inertia = inertia_.get();
    unsigned* done = blocks_done_.get();
    const uint4* fragment_words = fragment_words_.get();
    unsigned long long* timeline = timeline_.get();
    const float* point_norms = point_norms_.get();
    const float* point_shift = point_shift_.get();
    void* args[] = {&points,     &m,           &centroids,  &sums,       &counts,        &inertia,
                    &done,       &acc.counts,  &acc.inertia, &acc.labels, &keep_mask_,    &point_scale_,
                    &fragment_words, &point_norms, &point_shift, &key_bias_, &timeline};
    gpu::check(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(unsigned(grid_)), dim3(unsigned(block_)),
                                args, dynamic_smem_, state_.stream()),
               "tensor_multik_iteration");
  }

  cudaKernel_t loaded_kernel(const KernelConfig& config) const {
    const cudaKernel_t kernel = compiled_kernel(config);
    gpu::check(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(dynamic_smem_)),
               "tensor-multik shared memory limit");
    return kernel;
  }

  // Timed with events (the one-time cost a fit pays before its first iteration), so results
  // can report it beside the per-iteration time.
  void prepare_operands_once(const Problem& problem, const Dataset& data, int64_t steps, cudaStream_t stream) {
    fragment_words_.allocate(size_t(steps) * 8 * problem.n, "tensor-multik operands=prepared words");
    point_norms_.allocate(size_t(steps) * 32, "tensor-multik operands=prepared norms");
    const std::vector<float> mean = column_means(data);
    // In the kernel's units (points ×point_scale_, a power of two), rounded up a little so the
    // float never undercuts the FP64 mean; zero for the float min, which reads no bias.
    if (config_.int_group_min)
      key_bias_ = float(mean_centred_square(data, mean) * double(point_scale_) * double(point_scale_) * (1.0 + 0x1p-20));
    point_shift_.allocate(mean.size(), "tensor-multik operands=prepared centre");
    gpu::check(cudaMemcpyAsync(point_shift_.get(), mean.data(), mean.size() * sizeof(float), cudaMemcpyHostToDevice,
                               stream),
               "tensor-multik centre");
    struct Events {
      cudaEvent_t start = nullptr, stop = nullptr;
      ~Events() {
        if (start) cudaEventDestroy(start);
        if (stop) cudaEventDestroy(stop);
      }
    } events;
    gpu::check(cudaEventCreate(&events.start), "conversion event");
    gpu::check(cudaEventCreate(&events.stop), "conversion event");
    cudaEvent_t start = events.start, stop = events.stop;
    gpu::check(cudaEventRecord(start, stream), "conversion event");
    launch_build_prepared_operands(state_.points().data, problem.m, problem.n, steps, point_scale_, point_shift_.get(),
                                   fragment_words_.get(), point_norms_.get(), stream);
    gpu::check(cudaEventRecord(stop, stream), "conversion event");
    gpu::check(cudaEventSynchronize(stop), "build_prepared_operands");
    float ms = 0.f;
    gpu::check(cudaEventElapsedTime(&ms, start, stop), "conversion time");
    conversion_ms_ = ms;
  }

  // Per block: SM, then global-timer ns at entry, after the prologue, after the loop's block
  // barrier, at the ticket, then each warp's loop end (the kernel's TIMELINE_FIELDS + WARPS).
  int64_t timeline_record() const { return 5 + block_ / 32; }

  // MKBENCH_TIMELINE=file.csv: the last launch's stamps, one row per block, in ns after the first
  // block's entry (the last block's finish in the header).
  void write_timeline() const {
    std::vector<unsigned long long> stamps(timeline_.size());
    if (cudaStreamSynchronize(state_.stream()) != cudaSuccess ||
        cudaMemcpy(stamps.data(), timeline_.get(), timeline_.bytes(), cudaMemcpyDeviceToHost) != cudaSuccess) {
      std::fprintf(stderr, "mkbench: tensor-multik timeline: could not read it back\n");
      return;
    }
    const int64_t record = timeline_record();
    unsigned long long origin = ~0ull;
    for (int64_t b = 0; b < grid_; ++b) origin = std::min(origin, stamps[size_t(b * record + 1)]);
    std::ofstream out(timeline_path_);
    out << "# tensor-multik timeline, grid " << grid_ << " x " << block_ << "; last block finished at "
        << (stamps.back() - origin) << " ns\nblock,sm,entry_ns,prologue_ns,loop_barrier_ns,ticket_ns";
    for (int w = 0; w < block_ / 32; ++w) out << ",warp" << w << "_loop_ns";
    out << "\n";
    for (int64_t b = 0; b < grid_; ++b) {
      const unsigned long long* r = stamps.data() + b * record;
      out << b << "," << r[0];
      for (int64_t f = 1; f < record; ++f) {
        out << ",";
        if (r[f]) out << (long long)(r[f] - origin);  // (empty: a stamp this kernel shape leaves out)
      }
      out << "\n";
    }
    if (!out) std::fprintf(stderr, "mkbench: tensor-multik timeline: could not write %s\n", timeline_path_.c_str());
  }

  KernelConfig config_{};
  cudaKernel_t kernel_ = nullptr;
  cudaKernel_t labels_kernel_ = nullptr;  // built by the first iteration that keeps labels
  cudaKernel_t sums_kernel_ = nullptr;         // split steps: built by the first accumulate()
  cudaKernel_t sums_labels_kernel_ = nullptr;  // the same, keeping labels
  bool sums_left_ = false;                     // the last launch left its sums (accumulate)
  int block_ = 256;
  int64_t grid_ = 1;
  size_t dynamic_smem_ = 0;
  unsigned keep_mask_ = ~0u;
  float point_scale_ = 1.f;
  float key_bias_ = 0.f;  // group_min=int: mean ‖x'‖² (scaled), added to every key
  gpu::DeviceBuffer<double> sums_;
  gpu::DeviceBuffer<unsigned long long> counts_;
  gpu::DeviceBuffer<double> inertia_;
  gpu::DeviceBuffer<unsigned> blocks_done_;
  gpu::DeviceBuffer<uint4> fragment_words_;  // operands=prepared only: steps × 32 lanes × N/4 vectors
  gpu::DeviceBuffer<float> point_norms_;     // operands=prepared only: ‖x'‖² (scaled), zero past M
  gpu::DeviceBuffer<float> point_shift_;     // operands=prepared only: the centre μ (N floats, unscaled)
  gpu::DeviceBuffer<unsigned long long> timeline_;  // MKBENCH_TIMELINE only
  std::string timeline_path_;
  double conversion_ms_ = 0.0;
};

}  // namespace

std::unique_ptr<PreparedRun> make_run(const Problem& problem, const Dataset& data, const Params& params,
                                      const DeviceInfo& device) {
  return std::make_unique<TensorMultiKRun>(problem, data, params, device);
}

}  // namespace mk::tensor_multik
