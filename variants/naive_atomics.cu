// naive-atomics (seed 002): one thread per point, nearest centroid by a plain loop, and a
// global atomicAdd per coordinate. Kept deliberately simple: it is the baseline every
// other GPU variant must beat. Sums are FP64 atomics because FP32 atomics into a handful
// of addresses lose ~1e-4 relative accuracy at M=32M, which would fail --verify.
#include <cfloat>

#include "variants/common/gpu_lloyd_state.cuh"

namespace mk {
namespace {

__global__ void naive_assign_accumulate(gpu::PointsView points, const float* __restrict__ centroids,
                                        gpu::KRangeView ks, gpu::AccumulatorView acc) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= points.m) return;
  const int n = points.n;
  for (int k = ks.kmin; k <= ks.kmax; ++k) {
    const int base = ks.offset(k);
    float best = FLT_MAX;
    int best_c = 0;
    for (int c = 0; c < k; ++c) {
      float dist = 0.f;
      for (int d = 0; d < n; ++d) {
        float diff = points.at(i, d) - centroids[int64_t(base + c) * n + d];
        dist = fmaf(diff, diff, dist);
      }
      if (dist < best) {
        best = dist;
        best_c = c;
      }
    }
    const int slot = base + best_c;
    for (int d = 0; d < n; ++d) atomicAdd(&acc.sums[int64_t(slot) * n + d], double(points.at(i, d)));
    atomicAdd(&acc.counts[slot], 1ull);
    atomicAdd(&acc.inertia[k - ks.kmin], double(best));
    if (acc.labels) acc.labels[int64_t(k - ks.kmin) * points.m + i] = best_c;
  }
}

class NaiveAtomicsRun : public gpu::GpuRun {
 public:
  NaiveAtomicsRun(const Problem& problem, const Dataset& data, const Params& params)
      : GpuRun(problem, data, parse_layout(params.at("layout").get<std::string>())),
        block_(params.at("block").get<int>()) {}

  void iterate(bool store_labels) override {
    state_.zero_accumulators();
    const auto points = state_.points();
    const int64_t blocks = (points.m + block_ - 1) / block_;
    naive_assign_accumulate<<<unsigned(blocks), block_, 0, state_.stream()>>>(
        points, state_.centroids(), state_.k_range(), state_.accumulators(store_labels));
    gpu::check_launch("naive_assign_accumulate");
    state_.finalize();
  }

 private:
  int block_;
};

class NaiveAtomics : public Variant {
 public:
  std::string name() const override { return "naive-atomics"; }
  std::string description() const override {
    return "seed 002: one thread per point, global FP64 atomicAdd of sums and counts";
  }
  bool runs_on_gpu() const override { return true; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    if (problem.m > int64_t(INT32_MAX) * 128) return "M too large for a one-thread-per-point grid";
    return gpu::check_fits_in_memory(problem, device);
  }

  ParamSpace param_space(const Problem&, const DeviceInfo&) const override {
    ParamSpace space;
    space.axes.push_back({"block", {64, 128, 256, 512, 1024}, "threads per block"});
    space.axes.push_back({"layout", {"aos", "soa"}, "point layout in device memory"});
    return space;
  }

  Params default_params(const Problem&, const DeviceInfo&) const override {
    return {{"block", 256}, {"layout", "aos"}};
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo&) const override {
    return std::make_unique<NaiveAtomicsRun>(problem, data, params);
  }
};

MKBENCH_REGISTER_VARIANT(NaiveAtomics);

}  // namespace
}  // namespace mk
