// shared-atomics (seeds 004 and 001): one thread per point, every K of the range in the
// same pass, and the update accumulated block-privately in shared memory: FP32 sums and
// u32 counts per centroid slot, flushed with one FP64 global atomicAdd per block per value
// (at least every 4096 points of the block, see block_accumulators.cuh for why). The
// division happens on the device (LloydState::finalize), so an iteration never visits the
// host.
//
// Parameters:
//   block      threads per block.
//   grid       blocks, as multiples of the SM count; more blocks hide latency, fewer blocks
//              flush less. Clamped at launch to the blocks the data can fill.
//   layout     aos (row-major) or soa (column-major: a warp's loads of one coordinate are
//              coalesced, the seed-004 optimisation).
//   centroids  constant (the seed-004 __constant__ bank: warp-uniform reads broadcast),
//              shared (staged per block), or global (read-only cache; any size fits).
//   aggregate  warp: lanes that picked the same slot first sum their coordinates with
//              shuffles (__match_any_sync groups) and one lane does the shared atomic; none:
//              every lane does its own atomics. With few clusters most of a warp lands on
//              the same slot and the shared atomics serialise, which warp aggregation avoids.
#include <algorithm>
#include <cfloat>
#include <memory>
#include <optional>
#include <string>

#include "core/errors.hpp"
#include "variants/variant.hpp"
#include "variants/common/block_accumulators.cuh"
#include "variants/common/centroid_source.cuh"
#include "variants/common/constant_bank_turn.hpp"
#include "variants/common/gpu_lloyd_state.cuh"

namespace mk {
namespace {

MKBENCH_DEFINE_CONSTANT_CENTROID_BANK(SharedAtomicsConstantBank);

const int kGridMultiples[] = {1, 2, 4, 8, 16, 32};

template <class Source, bool kSoA>
__global__ void __launch_bounds__(1024, 1)
    shared_atomics_step(gpu::PointsView points, const float* __restrict__ centroids, gpu::KRangeView ks,
                        gpu::AccumulatorView acc, gpu::SharedLayout layout, int iterations_per_flush,
                        bool warp_aggregate) {
  extern __shared__ double shared_words[];
  const gpu::BlockAccumulators block_acc = gpu::BlockAccumulators::carve(layout, shared_words);
  block_acc.zero();
  const Source source = Source::stage(centroids, ks.slots * points.n, block_acc.centroids);
  __syncthreads();

  const int n = points.n;
  const int64_t m = points.m;
  const int lane = threadIdx.x & 31;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int since_flush = 0;
  // The loop bound depends on the block's base only, so every thread of the block runs the
  // same number of iterations and the flush barriers below are reached by all of them.
  for (int64_t base = int64_t(blockIdx.x) * blockDim.x; base < m; base += stride) {
    const int64_t i = base + threadIdx.x;
    const bool valid = i < m;
    // Lanes past the end classify the last point and discard the result, so the warp stays
    // converged for the shuffles.
    const int64_t row = valid ? i : m - 1;
    for (int k = ks.kmin; k <= ks.kmax; ++k) {
      const int first = ks.offset(k);
      float best = FLT_MAX;
      int best_c = 0;
      for (int c = 0; c < k; ++c) {
        const int centroid_base = (first + c) * n;
        float dist = 0.f;
        for (int d = 0; d < n; ++d) {
          const float diff = gpu::load_point<kSoA>(points, row, d) - source[centroid_base + d];
          dist = fmaf(diff, diff, dist);
        }
        if (dist < best) {  // strict: the lowest index wins ties, like the reference
          best = dist;
          best_c = c;
        }
      }
      const int slot = first + best_c;
      if (warp_aggregate) {
        const unsigned peers = __match_any_sync(gpu::kFullWarp, valid ? slot : -1);
        const gpu::PeerSum peer_sum(peers, lane);
        for (int d = 0; d < n; ++d) {
          const float total = peer_sum.sum(valid ? gpu::load_point<kSoA>(points, row, d) : 0.f);
          if (valid && peer_sum.leader) atomicAdd(&block_acc.sums[slot * n + d], total);
        }
        if (valid && peer_sum.leader) atomicAdd(&block_acc.counts[slot], unsigned(peer_sum.size));
      } else if (valid) {
        for (int d = 0; d < n; ++d) atomicAdd(&block_acc.sums[slot * n + d], gpu::load_point<kSoA>(points, row, d));
        atomicAdd(&block_acc.counts[slot], 1u);
      }
      const double warp_inertia = gpu::warp_sum(valid ? double(best) : 0.0);
      if (lane == 0) atomicAdd(&block_acc.inertia[k - ks.kmin], warp_inertia);
      if (valid && acc.labels) acc.labels[int64_t(k - ks.kmin) * m + i] = best_c;
    }
    if (++since_flush == iterations_per_flush) {
      __syncthreads();
      block_acc.flush(acc);
      __syncthreads();
      since_flush = 0;
    }
  }
  __syncthreads();
  block_acc.flush(acc);
}

using StepKernel = void(gpu::PointsView, const float*, gpu::KRangeView, gpu::AccumulatorView, gpu::SharedLayout,
                        int, bool);

// The 2 layouts × 3 placements instantiations, chosen once at prepare time.
StepKernel* pick_kernel(gpu::CentroidPlacement placement, bool soa) {
  using gpu::CentroidPlacement;
  using Constant = gpu::ConstantCentroids<SharedAtomicsConstantBank>;
  switch (placement) {
    case CentroidPlacement::Constant:
      return soa ? shared_atomics_step<Constant, true> : shared_atomics_step<Constant, false>;
    case CentroidPlacement::Shared:
      return soa ? shared_atomics_step<gpu::SharedCentroids, true> : shared_atomics_step<gpu::SharedCentroids, false>;
    case CentroidPlacement::Global:
      return soa ? shared_atomics_step<gpu::GlobalCentroids, true> : shared_atomics_step<gpu::GlobalCentroids, false>;
  }
  return nullptr;
}

int64_t shared_bytes(const Problem& problem, gpu::CentroidPlacement placement) {
  return gpu::shared_layout(problem, true, placement == gpu::CentroidPlacement::Shared).bytes();
}

std::string describe_bytes(int64_t bytes) { return std::to_string(bytes) + " B"; }

class SharedAtomicsRun : public gpu::GpuRun {
 public:
  SharedAtomicsRun(const Problem& problem, const Dataset& data, const Params& params, const DeviceInfo& device)
      : GpuRun(problem, data, parse_layout(params.at("layout").get<std::string>())),
        block_(params.at("block").get<int>()),
        placement_(gpu::parse_centroid_placement(params.at("centroids").get<std::string>())),
        warp_aggregate_(params.at("aggregate").get<std::string>() == "warp"),
        layout_(gpu::shared_layout(problem, true, placement_ == gpu::CentroidPlacement::Shared)),
        kernel_(pick_kernel(placement_, state_.layout() == Layout::SoA)) {
    if (placement_ == gpu::CentroidPlacement::Constant && !gpu::fits_constant_bank(problem))
      throw UnsupportedError("shared-atomics: centroids=constant needs ΣK·N ≤ " +
                             std::to_string(gpu::kConstantCentroidFloats) + ", got " +
                             std::to_string(int64_t(problem.k.sum()) * problem.n));
    const int64_t bytes = layout_.bytes();
    if (device.smem_per_block_optin > 0 && bytes > device.smem_per_block_optin)
      throw UnsupportedError("shared-atomics needs " + describe_bytes(bytes) + " of shared memory per block, " +
                             device.name + " allows " + describe_bytes(device.smem_per_block_optin));
    gpu::allow_shared_bytes(kernel_, bytes, "shared_atomics_step: shared memory opt-in");
    const int64_t blocks_of_work = (problem.m + block_ - 1) / block_;
    grid_ = int(std::min<int64_t>(params.at("grid").get<int>(), blocks_of_work));
    iterations_per_flush_ = gpu::iterations_per_flush(block_);
    // The run's device is current while it is prepared: the bank's address there, looked up once.
    if (placement_ == gpu::CentroidPlacement::Constant) constant_bank_ = SharedAtomicsConstantBank::address();
  }

  void iterate(bool store_labels) override {
    state_.zero_accumulators();
    // The bank is the process's, shared by every run on the device: a turn orders their uses.
    std::optional<gpu::ConstantBankTurn> turn;
    if (placement_ == gpu::CentroidPlacement::Constant) {
      turn.emplace(constant_bank_, state_.stream());
      SharedAtomicsConstantBank::upload(state_.centroids(), size_t(layout_.slots) * layout_.n, state_.stream());
    }
    kernel_<<<grid_, block_, layout_.bytes(), state_.stream()>>>(state_.points(), state_.centroids(),
                                                                 state_.k_range(), state_.accumulators(store_labels),
                                                                 layout_, iterations_per_flush_, warp_aggregate_);
    gpu::check_launch("shared_atomics_step");
    if (turn) turn->finish();
    state_.finalize();
  }

 private:
  int block_;
  gpu::CentroidPlacement placement_;
  bool warp_aggregate_;
  gpu::SharedLayout layout_;
  StepKernel* kernel_;
  int grid_ = 1;
  int iterations_per_flush_ = 1;
  const void* constant_bank_ = nullptr;  // the __constant__ bank on the run's device (centroids=constant)
};

class SharedAtomics : public Variant {
 public:
  std::string name() const override { return "shared-atomics"; }
  std::string description() const override {
    return "seeds 004/001: thread per point, all Ks in one pass, block-private FP32 sums in shared memory "
           "flushed by FP64 atomics; centroids in constant, shared or global memory";
  }
  bool runs_on_gpu() const override { return true; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    // The smallest configuration keeps only sums, counts and inertia in shared memory.
    const int64_t need = shared_bytes(problem, gpu::CentroidPlacement::Global);
    if (need > device.smem_per_block_optin)
      return "block-private sums need ΣK·(N+1)·4 + 8·#K = " + describe_bytes(need) + " of shared memory (ΣK=" +
             std::to_string(problem.k.sum()) + ", N=" + std::to_string(problem.n) + "), " + device.name +
             " allows " + describe_bytes(device.smem_per_block_optin) + " per block";
    return gpu::check_fits_in_memory(problem, device);
  }

  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    ParamSpace space;
    space.axes.push_back({"block", {128, 256, 512, 1024}, "threads per block (one point per thread)"});
    std::vector<nlohmann::json> grids;
    const int sm = std::max(device.sm_count, 1);
    for (int multiple : kGridMultiples) grids.push_back(sm * multiple);
    space.axes.push_back({"grid", grids,
                          "blocks: " + std::to_string(sm) + " SMs × {1,2,4,8,16,32}; clamped to the blocks M fills"});
    space.axes.push_back({"layout", {"aos", "soa"}, "point layout in device memory"});
    space.axes.push_back({"centroids", {"constant", "shared", "global"}, "where the assignment reads centroids"});
    space.axes.push_back({"aggregate", {"warp", "none"}, "warp-aggregate same-slot lanes before shared atomics"});

    const int64_t values = int64_t(problem.k.sum()) * problem.n;
    space.restrictions.push_back(
        {"centroids=constant needs ΣK·N ≤ " + std::to_string(gpu::kConstantCentroidFloats) + " (64 KB), here " +
             std::to_string(values),
         [values](const Params& p) {
           return p.at("centroids") != "constant" || values <= gpu::kConstantCentroidFloats;
         }});
    const int64_t shared_need = shared_bytes(problem, gpu::CentroidPlacement::Shared);
    const int64_t limit = device.smem_per_block_optin;
    space.restrictions.push_back(
        {"centroids=shared needs " + describe_bytes(shared_need) + " of shared memory per block ≤ " +
             describe_bytes(limit),
         [shared_need, limit](const Params& p) { return p.at("centroids") != "shared" || shared_need <= limit; }});
    return space;
  }

  // Heuristic: 256 threads; SoA (coalesced per-coordinate loads); centroids in the constant
  // bank when they fit (warp-uniform reads broadcast and leave shared memory to the sums),
  // else shared when that fits, else global; warp aggregation when the largest K is at most
  // 16 (32 lanes over at most 16 slots: most lanes share their slot with others, and the
  // shuffles cost less than the serialised same-address atomics they replace); grid = SMs × the blocks one SM can hold at
  // this block size and shared-memory footprint, rounded down to an axis value.
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    const int block = 256;
    std::string centroids = "global";
    if (gpu::fits_constant_bank(problem)) centroids = "constant";
    else if (shared_bytes(problem, gpu::CentroidPlacement::Shared) <= device.smem_per_block_optin) centroids = "shared";
    const int64_t bytes = shared_bytes(problem, gpu::parse_centroid_placement(centroids));
    const int threads_per_sm = device.max_threads_per_sm > 0 ? device.max_threads_per_sm : 2048;
    int64_t resident = threads_per_sm / block;
    // About 1 KB per block is reserved by the runtime on recent architectures.
    if (device.smem_per_sm > 0) resident = std::min<int64_t>(resident, device.smem_per_sm / (bytes + 1024));
    int multiple = kGridMultiples[0];
    for (int candidate : kGridMultiples)
      if (candidate <= resident) multiple = candidate;
    return {{"block", block},
            {"grid", std::max(device.sm_count, 1) * multiple},
            // Streamed chunks (out-of-core) arrive as rows; SoA would transpose each one.
            {"layout", problem.streamed ? "aos" : "soa"},
            {"centroids", centroids},
            {"aggregate", problem.k.kmax <= 16 ? "warp" : "none"}};
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    return std::make_unique<SharedAtomicsRun>(problem, data, params, device);
  }
};

MKBENCH_REGISTER_VARIANT(SharedAtomics);

}  // namespace
}  // namespace mk
