// registers-multik: the MultiK kernel of seed 000, the core of mkbench.
//
// One fused Lloyd iteration evaluates every K of the range for every point it reads, so a
// point fetched from DRAM feeds 3·ΣK·N operations instead of 3·K·N. Specialisation on N
// and the K range is done the way the seed's code generator did it, but at run time:
// NVRTC compiles a kernel with N, Kmin, Kmax and the accumulation strategy baked in, so
// every register array is indexed by compile-time constants and no (N, K) set has to be
// chosen at build time (which would also blow up CI compile time).
//
// The kernels are CUDA files, kernel/*.cuh (embedded at build time, NVRTC named headers).
//
// Per point (one lane = one point of a 32-point warp step):
//   distances  d'_c = ‖c‖² − 2·x·c   (‖x‖² is constant per point, so argmin is unchanged)
//              with −2c and ‖c‖² read straight from __constant__ memory as FFMA operands;
//   argmin     the centroid index is packed into the low mantissa bits of d' so one FMNMX
//              tracks value and index; the runner-up is tracked too, and when the two are
//              within the proven rounding bound of the expansion the lane re-decides with
//              exact FP32 Σ(x−c)² — labels stay FP32-faithful at the cost of a rare branch;
//   update     accumulate="mma": the one-hot(labels)ᵀ·X product on tensor cores
//              (mma.m16n8k8 TF32, X split hi+lo so sums keep ~22 bits), accumulators live
//              in MMA fragments = registers; accumulate="registers": the seed's scheme, a
//              compile-time-indexed register array per (slot, dim) updated by select.
//   reduction  registers → shared memory (in passes when ΣK·N does not fit) → one FP64
//              global atomic per block per value → divide on the device. No CPU step.
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "datasets/counter_rng.hpp"
#include "variants/common/constant_bank_turn.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/common/kernel_sources.hpp"
#include "variants/common/nvrtc_module.hpp"
#include "variants/common/packed_argmin.hpp"
#include "variants/registers_multik/registers_multik.hpp"

namespace mk {
namespace {


struct KernelConfig {
  int n, kmin, kmax, block, smem_slots, lane_points;
  bool soa, mma, plant_slowdown, centroids_shared;
  int cc_major, cc_minor;
  bool generated = false;  // points made in the kernel from the uniform generator (GENERATED)
  bool stage_rows = false;  // rows through per-warp shared-memory stages (STAGE_ROWS)
  bool operator<(const KernelConfig& o) const {
    return std::tie(n, kmin, kmax, block, smem_slots, lane_points, soa, mma, plant_slowdown, centroids_shared,
                    cc_major, cc_minor, generated, stage_rows) < std::tie(o.n, o.kmin, o.kmax, o.block, o.smem_slots,
                                                                          o.lane_points, o.soa, o.mma,
                                                                          o.plant_slowdown, o.centroids_shared,
                                                                          o.cc_major, o.cc_minor, o.generated,
                                                                          o.stage_rows);
  }
};

// Loaded through the runtime's library API (CUDA 12+), not the driver API, so the binary
// does not need libcuda.so on machines without a GPU.
struct CompiledKernel {
  cudaLibrary_t library = nullptr;
  cudaKernel_t iteration = nullptr;
  cudaKernel_t prepare = nullptr;
};

// Index bits packed into the mantissa widen the tie bound: 2^(bits-23) relative.
double tie_scale(int n, int kmax) {
  const int bits = packed_index_bits(kmax);
  const double u = std::ldexp(1.0, -24);
  return 2.0 * ((2.0 * n + 4.0) * u + std::ldexp(1.0, bits - 23));
}

gpu::RuntimeCompileRequest compile_request(const KernelConfig& config) {
  std::ostringstream defines;
  const int sum_k = (config.kmin + config.kmax) * (config.kmax - config.kmin + 1) / 2;
  defines << "#define NDIM " << config.n << "\n#define KMIN " << config.kmin << "\n#define KMAX " << config.kmax
          << "\n#define SUMK " << sum_k << "\n#define BLOCK " << config.block << "\n#define SMEM_SLOTS "
          << config.smem_slots << "\n#define LANE_POINTS " << config.lane_points << "\n#define SOA " << (config.soa ? 1 : 0) << "\n#define ACCUM_MMA "
          << (config.mma ? 1 : 0) << "\n#define PLANT_SLOWDOWN " << (config.plant_slowdown ? 1 : 0)
          << "\n#define CENTROIDS_SHARED " << (config.centroids_shared ? 1 : 0) << "\n#define GENERATED "
          << (config.generated ? 1 : 0) << "\n#define STAGE_ROWS " << (config.stage_rows ? 1 : 0)
          << "\n#define TIE_SCALE " << std::scientific << tie_scale(config.n, config.kmax) << "f\n";
  gpu::RuntimeCompileRequest request{defines.str() + "#include \"kernel.cuh\"\n", "registers_multik.cu", config.cc_major,
                                     config.cc_minor};
  request.headers = gpu::kernel_headers("registers_multik/kernel");
  request.description = "N=" + std::to_string(config.n) + " K=" + std::to_string(config.kmin) + ".." +
                        std::to_string(config.kmax);
  // For SASS inspection (cuobjdump -sass): MKBENCH_DUMP_CUBIN=/path/prefix.
  request.dump_tag = "n" + std::to_string(config.n) + "-k" + std::to_string(config.kmin) + "-" +
                     std::to_string(config.kmax) + (config.mma ? "-mma" : "-reg") + "-l" +
                     std::to_string(config.lane_points) + (config.soa ? "-soa" : "-aos") +
                     (config.centroids_shared ? "-shared" : "-const") + (config.generated ? "-gen" : "") +
                     (config.stage_rows ? "-staged" : "");
  return request;
}

// Runtime compilation, cached per process: a suite sweeping grid sizes compiles once.
const CompiledKernel& compiled_kernel(const KernelConfig& config) {
  static std::mutex mutex;
  static std::map<KernelConfig, CompiledKernel> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache.find(config);
  if (found != cache.end()) return found->second;

  CompiledKernel kernel;
  kernel.library = gpu::compile_and_load(compile_request(config));
  gpu::check(cudaLibraryGetKernel(&kernel.iteration, kernel.library, "multik_iteration"), "multik_iteration");
  gpu::check(cudaLibraryGetKernel(&kernel.prepare, kernel.library, "multik_prepare_centroids"), "prepare");
  return cache.emplace(config, kernel).first->second;
}

// Limits that keep every per-thread array in registers.
constexpr int kMaxSlotsMma = 256;
constexpr int kMaxRegisterValues = 256;  // ΣK·N for accumulate=registers (the seed's regime)
constexpr int kConstantFloats = 16384;   // 64 KB of __constant__
constexpr int kMaxAccumulatorRegisters = 128;
constexpr int kExactTableFloats = 4096;   // EXACT_FROM_SHARED in kernel/config.cuh

int accumulator_registers(const Problem& problem) {
  return ((problem.n + 7) / 8) * ((problem.k.sum() + 7) / 8) * 4;
}

// The GENERATED kernel's per-warp copy of a step's rows (kernel/config.cuh, GEN_STRIDE).
int64_t generated_rows_bytes(const Problem& problem, const Params& params) {
  if (params.at("accumulate").get<std::string>() != "mma") return 0;
  return int64_t(params.at("block").get<int>() / 32) * params.at("lane_points").get<int>() * 32 * (problem.n | 1) * 4;
}

// rows=shared: two stages of a warp step's rows per warp (kernel/config.cuh, STAGE_STRIDE).
int64_t staged_rows_bytes(int n, const Params& params) {
  const int64_t stride = (n / 4) % 2 ? n : n + 4;
  return int64_t(params.at("block").get<int>() / 32) * 2 * params.at("lane_points").get<int>() * 32 * stride * 4;
}

bool rows_can_be_staged(int n, const Params& params, const DeviceInfo& device) {
  const int64_t limit = device.smem_per_block_optin > 0 ? device.smem_per_block_optin : 49152;
  // A CPU "device" (the tuner's and the tests' view of the space without a GPU) is not refused.
  const bool async_copies = device.cc_major >= 8 || !device.is_gpu;
  // 20 KiB: the kernel's static tables (block counts, −2c for the exact paths: up to 16 KiB).
  return async_copies && n % 4 == 0 && parse_layout(params.at("layout").get<std::string>()) == Layout::AoS &&
         staged_rows_bytes(n, params) + 20 * 1024 <= limit;
}

// Shared memory per block: the dynamic sums area takes what the static tables leave.
KernelConfig config_for(const Problem& problem, const Params& params, const DeviceInfo& device,
                        bool generated = false) {
  const int sum_k = problem.k.sum();
  const int64_t smem_budget = std::min<int64_t>(device.smem_per_block_optin > 0 ? device.smem_per_block_optin : 49152,
                                                96 * 1024);
  const bool centroids_shared = params.at("centroids").get<std::string>() == "shared";
  // Static shared memory of the kernel: block counts, plus −2c (and ‖c‖²) when the
  // distance loop or the exact paths read them from there (EXACT_FROM_SHARED).
  const int64_t table_floats = int64_t(sum_k) * problem.n;
  const int64_t static_smem = sum_k * 4 + ((centroids_shared || table_floats <= kExactTableFloats) ? table_floats * 4 : 0) +
                              (centroids_shared ? sum_k * 4 : 0) + 64 +
                              (generated ? generated_rows_bytes(problem, params) : 0);
  // The GENERATED kernel's rows are static shared memory, which a block may have 48 KiB of.
  if (generated && static_smem > 48 * 1024)
    throw UnsupportedError("registers-multik: a step's generated rows (" +
                           std::to_string(generated_rows_bytes(problem, params) >> 10) +
                           " KiB) do not fit in static shared memory");
  const int smem_slots = int(std::min<int64_t>(sum_k, (smem_budget - static_smem) / (problem.n * 4)));
  if (smem_slots < 1) throw UnsupportedError("registers-multik: one centroid row does not fit in shared memory");
  return {problem.n,
          problem.k.kmin,
          problem.k.kmax,
          params.at("block").get<int>(),
          smem_slots,
          params.at("lane_points").get<int>(),
          parse_layout(params.at("layout").get<std::string>()) == Layout::SoA,
          params.at("accumulate").get<std::string>() == "mma",
#ifdef MKBENCH_PLANT_SLOWDOWN
          true,
#else
          false,
#endif
          centroids_shared,
          device.cc_major,
          device.cc_minor,
          generated,
          !generated && params.at("rows").get<std::string>() == "shared"};
}

class RegistersMultiKRun : public gpu::GpuRun {
 public:
  RegistersMultiKRun(const Problem& problem, const Dataset& data, const Params& params, const DeviceInfo& device)
      : GpuRun(problem, data, parse_layout(params.at("layout").get<std::string>())), params_(params),
        device_(device) {
    block_ = params.at("block").get<int>();
    const int64_t ppt = params.at("ppt").get<int64_t>();
    const int64_t grid = params.at("grid").get<int64_t>();
    if (grid > 0) grid_ = grid;
    else if (ppt > 0) grid_ = std::max<int64_t>(1, (problem.m + block_ * ppt - 1) / (block_ * ppt));
    const KernelConfig config = config_for(problem, params, device);
    smem_slots_ = config.smem_slots;
    kernel_ = &compiled_kernel(config);
    // The library is shared by every device, but its __constant__ table is one per device:
    // cudaLibraryGetGlobal answers for the current one, so each run asks on its own device.
    // (Cached per process, a shard on GPU 1 wrote its centroids into GPU 0's table: the
    // two-GPU test ShardedGpu.TwoGpusGiveTheLabelsAndCentroidsOfOne caught it.)
    size_t constant_bytes = 0;
    gpu::check(cudaLibraryGetGlobal(&constant_centroids_, &constant_bytes, kernel_->library, "c_centroids"),
               "c_centroids");
    keep_mask_ = packed_keep_mask(problem.k.kmax);
    dynamic_smem_ = size_t(smem_slots_) * problem.n * sizeof(float);
    if (config.stage_rows) dynamic_smem_ = std::max<size_t>(dynamic_smem_, size_t(staged_rows_bytes(problem.n, params)));
    // Static and dynamic shared memory together may pass 48 KiB only with the attribute set
    // (the stages of N=8 lane_points=2 are 48 KiB exactly: the launch failed without it).
    if (dynamic_smem_ > 0)
      gpu::check(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel_->iteration),
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, int(dynamic_smem_)),
                 "shared memory limit");
    persistent_grid_ = grid == 0 && ppt == 0;
    if (persistent_grid_) grid_ = persistent_grid(kernel_->iteration, dynamic_smem_);
    generated_grid_ = grid_;
    packed_.allocate(size_t(problem.k.sum()) * (problem.n + 1) + 1, "packed centroids");
  }

  // Out of core from the uniform generator (docs/out-of-core.md, "Generated chunks"): the kernel
  // makes each point where it would load it, so a chunk needs no buffer, no generator kernel
  // and no trip through DRAM. Row-major points only (the SoA layout's loads are another path).
  bool reads_generated_rows(const GeneratorSpec& spec) const override {
    if (!(state_.problem().streamed && spec.kind == "uniform" && !(spec.zero_fraction > 0) &&
          state_.problem().n == spec.n && parse_layout(params_.at("layout").get<std::string>()) == Layout::AoS))
      return false;
    try {
      (void)config_for(state_.problem(), params_, device_, true);  // its shared memory fits (wide N may not)
      return true;
    } catch (const UnsupportedError&) {
      return false;
    }
  }

  void set_generated_rows(const GeneratorSpec& spec, int64_t first_row) override {
    if (!reads_generated_rows(spec))
      throw UnsupportedError("registers-multik reads rows of a uniform generator without zeros, row-major, "
                             "out of core only");
    if (!generated_kernel_) {
      const KernelConfig config = config_for(state_.problem(), params_, device_, true);
      generated_kernel_ = &compiled_kernel(config);
      generated_smem_ = size_t(config.smem_slots) * state_.problem().n * sizeof(float);
      size_t bytes = 0;
      gpu::check(cudaLibraryGetGlobal(&generated_constant_, &bytes, generated_kernel_->library, "c_centroids"),
                 "c_centroids");
      // Its static rows and the dynamic sums together may pass 48 KiB (as the iteration kernel's).
      if (generated_smem_ > 0)
        gpu::check(cudaFuncSetAttribute(reinterpret_cast<const void*>(generated_kernel_->iteration),
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, int(generated_smem_)),
                   "shared memory limit");
      // Its own occupancy: it stages no rows, so the staged kernel's grid would be too small.
      if (persistent_grid_) generated_grid_ = persistent_grid(generated_kernel_->iteration, generated_smem_);
    }
    gen_counter_ = CounterRng(spec.seed, RandomStream::UniformValue).counter(uint64_t(first_row) * uint64_t(spec.n));
    generated_ = true;
  }

  // Persistent grid: exactly the blocks that are resident at once on every SM, so no partial
  // second wave idles SMs (seed 000 §5.1's "multiple of the SM count"), for this kernel's shared memory.
  int64_t persistent_grid(cudaKernel_t kernel, size_t dynamic_smem) const {
    int resident = 0;
    gpu::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, reinterpret_cast<const void*>(kernel), block_,
                                                             dynamic_smem),
               "occupancy query");
    const int64_t lane_points = params_.at("lane_points").get<int64_t>();
    const int64_t steps = (state_.problem().m + 32 * lane_points - 1) / (32 * lane_points);
    return std::max<int64_t>(1, std::min<int64_t>(int64_t(std::max(1, resident)) * std::max(1, device_.sm_count),
                                                  (steps + block_ / 32 - 1) / (block_ / 32)));
  }

  PointsSlot points_slot() override {
    generated_ = false;  // the next chunk is written into the buffer
    return GpuRun::points_slot();
  }

  void iterate(bool store_labels) override {
    const CompiledKernel& kernel = generated_ ? *generated_kernel_ : *kernel_;
    void* constant_centroids = generated_ ? generated_constant_ : constant_centroids_;
    const size_t dynamic_smem = generated_ ? generated_smem_ : dynamic_smem_;
    state_.zero_accumulators();
    cudaStream_t stream = state_.stream();
    const float* centroids = state_.centroids();
    float* packed = packed_.get();
    void* prepare_args[] = {&centroids, &packed};
    gpu::check(cudaLaunchKernel(reinterpret_cast<const void*>(kernel.prepare), dim3(1), dim3(256), prepare_args, 0,
                                stream),
               "multik_prepare_centroids");
    // Every run of this specialisation on the device shares its __constant__ bank.
    gpu::ConstantBankTurn turn(constant_centroids, stream);
    gpu::check(cudaMemcpyAsync(constant_centroids, packed, packed_.bytes(), cudaMemcpyDeviceToDevice, stream),
               "centroids to constant memory");
    auto acc = state_.accumulators(store_labels);
    const float* points = state_.points().data;
    long long m = state_.problem().m;
    const float* packed_global = packed;
    unsigned long long gen_counter = gen_counter_;
    void* args[] = {&points, &m,          &acc.sums,     &acc.counts,  &acc.inertia,
                    &acc.labels, &keep_mask_, &packed_global, &gen_counter};
    gpu::check(cudaLaunchKernel(reinterpret_cast<const void*>(kernel.iteration),
                                dim3(unsigned(generated_ ? generated_grid_ : grid_)),
                                dim3(unsigned(block_)), args, dynamic_smem, stream),
               "multik_iteration");
    turn.finish();
    state_.finalize();
  }

 private:
  int block_ = 256;
  int64_t grid_ = 1;
  int64_t generated_grid_ = 1;  // the generated kernel's (its own occupancy under a persistent grid)
  bool persistent_grid_ = false;
  unsigned keep_mask_ = ~0u;
  int smem_slots_ = 0;
  size_t dynamic_smem_ = 0;
  const CompiledKernel* kernel_ = nullptr;
  void* constant_centroids_ = nullptr;  // this device's copy of the library's c_centroids
  gpu::DeviceBuffer<float> packed_;
  Params params_;
  DeviceInfo device_;
  // The GENERATED kernel, compiled on first use; while generated_, iterate() reads the rows of
  // the generator from gen_counter_ (the counter of the chunk's first entry) instead of points.
  const CompiledKernel* generated_kernel_ = nullptr;
  void* generated_constant_ = nullptr;
  size_t generated_smem_ = 0;
  uint64_t gen_counter_ = 0;
  bool generated_ = false;
};

class RegistersMultiK : public Variant {
 public:
  std::string name() const override { return "registers-multik"; }
  std::string description() const override {
    return "seed 000 MultiK: all K of the range per point read, register accumulation, NVRTC-specialised";
  }
  bool runs_on_gpu() const override { return true; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    const int sum_k = problem.k.sum();
    if (problem.k.kmax > 256) return "K above 256 per range end: use gemm-cublas or gemm-tf32x3";
    if (sum_k > kMaxSlotsMma) return "ΣK=" + std::to_string(sum_k) + " exceeds 256 register-resident centroid slots";
    if (sum_k * (problem.n + 1) + 1 > kConstantFloats)
      return "ΣK·(N+1)=" + std::to_string(sum_k * (problem.n + 1)) + " floats exceed 64 KB of constant memory";
    if (problem.n > 128) return "N above 128 would not keep a point in registers";
    if (accumulate_options(problem, device).empty())
      return "accumulators do not fit in registers: mma needs ceil(N/8)·ceil(ΣK/8)·4 = " +
             std::to_string(accumulator_registers(problem)) + " > " + std::to_string(kMaxAccumulatorRegisters) +
             (device.cc_major < 8 ? " (and needs CC >= 8.0)" : "") + ", registers needs ΣK·N = " +
             std::to_string(problem.k.sum() * problem.n) + " > " + std::to_string(kMaxRegisterValues) +
             "; use gemm-cublas, gemm-tf32x3 or shared-atomics";
    return gpu::check_fits_in_memory(problem, device);
  }

  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    ParamSpace space;
    const int sms = std::max(1, device.sm_count);
    std::vector<nlohmann::json> grids{0};
    for (double factor : {1.0, 1.275, 2.0, 2.5, 3.0, 3.75, 4.0, 5.0, 7.5, 8.0, 10.0, 16.0, 32.0, 80.0, 300.0})
      grids.push_back(int64_t(std::llround(factor * sms)));
    grids.push_back(1);
    space.axes.push_back({"grid", grids, "blocks; 0 = derive from ppt"});
    space.axes.push_back({"ppt", {0, 1, 4, 16, 64, 128, 256, 512, 1024, 4096}, "points per thread; 0 = derive from grid"});
    space.axes.push_back({"block", {128, 256, 512}, "threads per block (seed: 256)"});
    space.axes.push_back({"layout", {"aos", "soa"}, "point layout in device memory"});
    std::vector<nlohmann::json> accumulate;
    for (const auto& option : accumulate_options(problem, device)) accumulate.push_back(option);
    space.axes.push_back({"accumulate", accumulate, "mma = tensor-core one-hot product; registers = seed's select"});
    space.axes.push_back({"centroids", {"constant", "shared"}, "where the distance loop reads centroids from"});
    space.axes.push_back({"lane_points", {1, 2}, "points per lane per warp step: each centroid operand load feeds this many distance chains"});
    space.axes.push_back({"rows", {"global", "shared"},
                          "a lane reads its rows from global memory, or from per-warp shared-memory stages filled a step ahead (cp.async)"});
    space.restrictions.push_back(
        {"rows=shared: row-major points of a multiple of 4 floats, CC >= 8.0 (cp.async), and the stages fit in shared memory",
         [n = problem.n, device](const Params& p) {
           return p.at("rows").get<std::string>() != "shared" || rows_can_be_staged(n, p, device);
         }});
    space.restrictions.push_back(
        {"at most one of grid and ppt is set (the other is derived; both 0 = resident-blocks persistent grid)",
         [](const Params& p) { return !(p.at("grid").get<int64_t>() > 0 && p.at("ppt").get<int64_t>() > 0); }});
    const int64_t m = problem.m;
    space.restrictions.push_back({"no idle blocks: grid*block/32 warps <= warp steps of 32*lane_points points", [m](const Params& p) {
                                    const int64_t grid = p.at("grid").get<int64_t>();
                                    const int64_t block = p.at("block").get<int64_t>();
                                    const int64_t step = 32 * p.at("lane_points").get<int64_t>();
                                    return grid == 0 || (grid - 1) * block < ((m + step - 1) / step) * 32;
                                  }});
    space.restrictions.push_back({"ppt*block <= M rounded up (a full block of work), ppt >= lane_points", [m](const Params& p) {
                                    const int64_t ppt = p.at("ppt").get<int64_t>();
                                    if (ppt > 0 && ppt < p.at("lane_points").get<int64_t>()) return false;  // idle lanes
                                    return ppt == 0 || ppt == 1 || ppt * p.at("block").get<int64_t>() <= m + 32 * ppt;
                                  }});
    return space;
  }

  // lane_points: two points per lane share each centroid operand load, but cost registers
  // (occupancy). On the H200 (v4, reports/NOTES-perf.md) two won where the centroid table
  // is small (ΣK·N = 48: 0.714 vs 0.755 ms; 128: 0.192 vs 0.204 ms) and lost at ΣK·N = 200
  // (1.245 vs 1.206 ms) and 400 (1.99 vs 1.80 ms).
  // rows: staged through shared memory where a row fills a 128-byte line or more (N >= 32) and
  // the stages fit (not at N=128 with 8 warps). On one H200 at dbc84ac and 2c34feb (ms a step,
  // global against shared): N=32 K=8 10M 0.608 / 0.485, N=32 K=64 16M 13.57 / 12.89, N=48 K=8 4M
  // 0.396 / 0.312, N=64 K=8 4M 0.811 / 0.550, N=96 K=8 2M 1.033 / 0.732; below N=32 it was mixed: N=4 K=3..5 32M 0.697 / 0.660, N=12
  // K=3..12 16M 5.68 / 5.42, but N=8 K=3..7 32M 1.227 / 1.244 and N=16 K=3..7 32M 1.821 / 1.855,
  // so there the tuner decides.
  // Heuristic without a tuned config: a persistent grid of exactly the resident blocks
  // (grid=0, ppt=0: computed from the compiled kernel's occupancy at prepare time), which
  // is a multiple of the SM count as seed 000 §5.1 recommends, with block 256 as the seed.
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    const auto options = accumulate_options(problem, device);
    Params params{{"grid", 0},         {"ppt", 0},
                  {"block", 256},       {"layout", "aos"},
                  {"accumulate", options.empty() ? "mma" : options.front()},
                  {"centroids", "constant"}, {"lane_points", problem.k.sum() * problem.n <= 128 ? 2 : 1},
                  {"rows", problem.n >= 32 ? "shared" : "global"}};
    if (!rows_can_be_staged(problem.n, params, device)) params["rows"] = "global";
    return params;
  }

  // rows=shared tuned at N=32 says little about N=30, whose rows cannot be staged (not a multiple
  // of 4 floats) or N=128, whose stages do not fit: there the rest of the entry still applies,
  // reading rows from global memory, rather than the whole entry being passed over.
  Params adapt_tuned_params(const Problem& problem, const DeviceInfo& device, Params params) const override {
    if (params.contains("rows") && params.contains("layout") && params.contains("block") &&
        params.contains("lane_points") && params.at("rows") == "shared" &&
        !rows_can_be_staged(problem.n, params, device))
      params["rows"] = "global";
    return params;
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    return std::make_unique<RegistersMultiKRun>(problem, data, params, device);
  }

 private:
  static std::vector<std::string> accumulate_options(const Problem& problem, const DeviceInfo& device) {
    std::vector<std::string> options;
    if ((device.cc_major >= 8 || !device.is_gpu) && accumulator_registers(problem) <= kMaxAccumulatorRegisters)
      options.push_back("mma");
    if (problem.k.sum() * problem.n <= kMaxRegisterValues) options.push_back("registers");
    return options;
  }
};

MKBENCH_REGISTER_VARIANT(RegistersMultiK);

}  // namespace

namespace registers_multik {

gpu::RuntimeCompileRequest kernel_request(const Problem& problem, const Params& params, const DeviceInfo& device) {
  return compile_request(config_for(problem, params, device));
}

}  // namespace registers_multik
}  // namespace mk
