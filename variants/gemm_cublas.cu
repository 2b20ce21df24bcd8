// gemm-cublas (seed 001 §4.4, seed 003 §6.1): distances as ‖x‖² + ‖c‖² − 2x·c, with the
// x·c block computed by cuBLAS SGEMM for every centroid slot of the K range at once
// (X_tile · C_packedᵀ → tile_rows × ΣK), then one fused argmin + update kernel.
//
// Labels stay FP32-faithful although the expansion can mis-rank near ties: the argmin
// keeps best and second-best, and when their gap is inside the forward-error window of
// near_tie_bound.hpp the warp recomputes Σ(x−c)² exactly (FP64) for every centroid of that
// K. precision=tf32 lets cuBLAS use TF32 tensor cores; the window widens to the TF32 error
// (ε ≈ 2^-9), so more points take the exact path, but labels stay exact.
//
// Rows of X are tiled so the tile_rows × ΣK block of dot products can stay in L2 between
// the GEMM that writes it and the kernel that reads it.
#include <cublas_v2.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "variants/common/argmin_update.cuh"

namespace mk {
namespace {

using gemm::ExpansionErrorModel;
using gemm::Top2;

constexpr int64_t kMaxSlots = 65536;
const std::vector<int> kTileRows = {4096, 16384, 65536, 262144, 1048576};

void check_cublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw DeviceError(std::string(what) + ": " + cublasGetStatusName(status) + " (" +
                    cublasGetStatusString(status) + ")");
}

// One warp per point of the tile: argmin of ‖c‖² − 2x·c over each K's slots (lanes over
// centroids, coalesced along the dots row), exact re-check of near ties, update. With
// update=dgemm (`onehot` set) the kernel adds no coordinates: it writes the point widened to
// FP64 (x64, rows × n) and a 1 at (row, slot) of the one-hot matrix (column-major, ld = rows),
// and one DGEMM per tile adds X64ᵀ·onehot into the FP64 sums. A K the fit has frozen (`active`
// set, its flag 0) is skipped: Fashion-MNIST's fit --k 2..20 needed 15218 of its 35948
// slot-steps (fit-fmnist-k2-20.json at f431f2f).
__global__ void argmin_update_from_dots(gpu::PointsView points, int64_t row0, int rows, const float* __restrict__ dots,
                            const float* __restrict__ norms, const float* __restrict__ centroids,
                            gpu::KRangeView ks, gpu::AccumulatorView acc, ExpansionErrorModel model,
                            bool private_sums, double* __restrict__ x64, double* __restrict__ onehot,
                            const uint8_t* __restrict__ active) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int n = points.n;
  const gemm::UpdateTargets targets = gemm::carve_update_targets(smem, ks, n, private_sums, acc);
  __syncthreads();

  const int lane = threadIdx.x & 31;
  const int warps_per_block = blockDim.x / 32;
  const int total_warps = gridDim.x * warps_per_block;
  // Warp-uniform loop: every lane of a warp works on the same point.
  for (int r = blockIdx.x * warps_per_block + threadIdx.x / 32; r < rows; r += total_warps) {
    const int64_t i = row0 + r;
    float x_norm2 = 0.f;
    for (int d = lane; d < n; d += 32) {
      const float v = points.at(i, d);
      x_norm2 = fmaf(v, v, x_norm2);
      if (x64) x64[int64_t(r) * n + d] = double(v);
    }
    x_norm2 = gemm::warp_sum(x_norm2);
    const float* row = dots + int64_t(r) * ks.slots;

    for (int k = ks.kmin; k <= ks.kmax; ++k) {
      if (active && !active[k - ks.kmin]) continue;  // frozen by the fit: the same for the whole warp
      const int base = ks.offset(k);
      Top2 top = gemm::top2_empty();
      for (int c = lane; c < k; c += 32) top2_offer(top, fmaf(-2.f, row[base + c], norms[base + c]), c);
      for (int mask = 16; mask > 0; mask >>= 1) gemm::top2_merge_lanes(top, mask);

      int label;
      double distance;
      if (gemm::is_near_tie(top, x_norm2, norms[base + top.index], model)) {
        const gemm::ExactChoice choice = gemm::warp_exact_argmin(points, i, centroids + int64_t(base) * n, k, n);
        label = choice.index;
        distance = choice.distance;
      } else {
        label = top.index;
        distance = gemm::warp_exact_squared_distance(points, i, centroids + int64_t(base + label) * n, n);
      }
      if (onehot) {
        if (lane == 0) {
          onehot[int64_t(base + label) * rows + r] = 1.0;
          atomicAdd(targets.counts + base + label, 1ull);
        }
      } else {
        gemm::warp_add_point(points, i, base + label, n, targets);
      }
      if (lane == 0) {
        atomicAdd(targets.inertia + (k - ks.kmin), distance);
        if (acc.labels) acc.labels[int64_t(k - ks.kmin) * points.m + i] = label;
      }
    }
  }
  __syncthreads();
  gemm::flush_update_targets(targets, ks, n, private_sums, acc);
}

enum class SumsUpdate { global, smem, dgemm };

SumsUpdate parse_sums_update(const std::string& name) {
  if (name == "smem") return SumsUpdate::smem;
  if (name == "dgemm") return SumsUpdate::dgemm;
  return SumsUpdate::global;
}

// Bytes of a tile's update=dgemm operands: the rows widened to FP64 and the one-hot matrix.
int64_t dgemm_operand_bytes(int64_t rows, int64_t n, int64_t slots) { return rows * (n + slots) * 8; }

struct CublasConfig {
  int tile_rows;
  bool tf32;
  int block;
  SumsUpdate update;
  bool private_sums;
  Layout layout;

  explicit CublasConfig(const Params& params)
      : tile_rows(params.at("tile_rows").get<int>()),
        tf32(params.at("precision").get<std::string>() == "tf32"),
        block(params.at("block").get<int>()),
        update(parse_sums_update(params.at("update").get<std::string>())),
        private_sums(update == SumsUpdate::smem),
        layout(parse_layout(params.at("layout").get<std::string>())) {}
};

// The arithmetic the error window must assume. NVIDIA_TF32_OVERRIDE can make cuBLAS use
// TF32 behind a CUBLAS_DEFAULT_MATH handle; unless it is explicitly "0", assume it might.
gemm::DotArithmetic cublas_arithmetic(bool tf32) {
  if (tf32) return gemm::DotArithmetic::CublasTf32;
  const char* override_env = std::getenv("NVIDIA_TF32_OVERRIDE");
  if (override_env && std::strcmp(override_env, "0") != 0) return gemm::DotArithmetic::CublasTf32;
  return gemm::DotArithmetic::Fp32;
}

class GemmCublasRun : public gpu::GpuRun {
 public:
  GemmCublasRun(const Problem& problem, const Dataset& data, const Params& params, const DeviceInfo& device)
      : GpuRun(problem, data, CublasConfig(params).layout), config_(params) {
    const int slots = problem.k.sum();
    tile_rows_ = int(std::min<int64_t>(config_.tile_rows, problem.m));
    dots_.allocate(size_t(tile_rows_) * slots, "gemm-cublas dot-product tile");
    norms_.allocate(slots, "centroid norms");
    if (config_.update == SumsUpdate::dgemm) {
      x64_.allocate(size_t(tile_rows_) * problem.n, "gemm-cublas FP64 point tile");
      onehot_.allocate(size_t(tile_rows_) * slots, "gemm-cublas one-hot tile");
    }
    model_ = gemm::expansion_error_model(cublas_arithmetic(config_.tf32), problem.n);

    smem_bytes_ = size_t(gemm::block_accumulator_bytes(problem, config_.private_sums));
    gpu::check(cudaFuncSetAttribute(argmin_update_from_dots, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(smem_bytes_)),
               "argmin_update_from_dots shared memory");
    int blocks_per_sm = 0;
    gpu::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, argmin_update_from_dots,
                                                             config_.block, smem_bytes_),
               "argmin_update_from_dots occupancy");
    if (blocks_per_sm < 1)
      throw UnsupportedError("gemm-cublas: argmin kernel cannot be resident with " +
                             std::to_string(smem_bytes_) + " bytes of shared memory");
    grid_limit_ = std::max(1, blocks_per_sm * std::max(1, device.sm_count));

    check_cublas(cublasCreate(&handle_), "cublasCreate");
    check_cublas(cublasSetStream(handle_, state_.stream()), "cublasSetStream");
    check_cublas(cublasSetMathMode(handle_, config_.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
                 "cublasSetMathMode");
  }

  ~GemmCublasRun() override {
    cudaStreamSynchronize(state_.stream());
    if (handle_) cublasDestroy(handle_);
  }

  void iterate(bool store_labels) override {
    const Problem& problem = state_.problem();
    const int slots = problem.k.sum();
    const int n = problem.n;
    const cudaStream_t stream = state_.stream();
    state_.zero_accumulators();
    const gpu::AccumulatorView acc = state_.accumulators(store_labels);
    const gpu::PointsView points = state_.points();
    gemm::launch_centroid_squared_norms(state_.centroids(), slots, n, norms_.get(), stream);

    const float one = 1.f, zero = 0.f;
    const int warps_per_block = config_.block / 32;
    for (int64_t row0 = 0; row0 < problem.m; row0 += tile_rows_) {
      const int rows = int(std::min<int64_t>(tile_rows_, problem.m - row0));
      // Column-major view: dots (slots × rows, ld = slots) = Cᵀ·X, i.e. row-major
      // dots[r][s] = x_r · c_s. AoS X is an n × rows column-major matrix (ld = n); SoA X
      // is rows × n column-major (ld = m), so it enters transposed.
      const bool soa = points.soa;
      const float* x_tile = soa ? points.data + row0 : points.data + row0 * n;
      check_cublas(cublasSgemm(handle_, CUBLAS_OP_T, soa ? CUBLAS_OP_T : CUBLAS_OP_N, slots, rows, n, &one,
                               state_.centroids(), n, x_tile, soa ? int(problem.m) : n, &zero, dots_.get(),
                               slots),
                   "cublasSgemm");
      const int64_t wanted = (rows + warps_per_block - 1) / warps_per_block;
      const int blocks = int(std::min<int64_t>(wanted, grid_limit_));
      const bool dgemm = config_.update == SumsUpdate::dgemm;
      if (dgemm)
        gpu::check(cudaMemsetAsync(onehot_.get(), 0, size_t(rows) * slots * sizeof(double), stream),
                   "zero the one-hot tile");
      argmin_update_from_dots<<<blocks, config_.block, smem_bytes_, stream>>>(
          points, row0, rows, dots_.get(), norms_.get(), state_.centroids(), state_.k_range(), acc, model_,
          config_.private_sums, dgemm ? x64_.get() : nullptr, dgemm ? onehot_.get() : nullptr, state_.active_ks());
      gpu::check_launch("argmin_update_from_dots");
      if (dgemm) {
        // Column-major: sums (n × slots, ld = n) += X64 (n × rows, ld = n) · onehot (rows × slots).
        const double one_d = 1.0;
        check_cublas(cublasDgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, n, slots, rows, &one_d, x64_.get(), n,
                                 onehot_.get(), rows, &one_d, acc.sums, n),
                     "cublasDgemm");
      }
    }
    state_.finalize();
  }

 private:
  CublasConfig config_;
  int tile_rows_ = 0;
  gpu::DeviceBuffer<float> dots_;
  gpu::DeviceBuffer<float> norms_;
  gpu::DeviceBuffer<double> x64_;     // update=dgemm only
  gpu::DeviceBuffer<double> onehot_;  // update=dgemm only
  ExpansionErrorModel model_;
  size_t smem_bytes_ = 0;
  int grid_limit_ = 1;
  cublasHandle_t handle_ = nullptr;
};

int64_t tile_budget_bytes(const DeviceInfo& device) {
  int64_t budget = int64_t(2) << 30;
  if (device.global_mem_bytes > 0) budget = std::min(budget, device.global_mem_bytes / 8);
  return budget;
}

class GemmCublas : public Variant {
 public:
  std::string name() const override { return "gemm-cublas"; }
  std::string description() const override {
    return "seed 001 §4.4: cuBLAS SGEMM X·Cᵀ for all K at once, fused argmin + exact near-tie re-check + "
           "FP64 update";
  }
  bool runs_on_gpu() const override { return true; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    const int64_t slots = gemm::k_slot_sum(problem.k);
    if (slots > kMaxSlots)
      return "sum of K over the range is " + std::to_string(slots) + "; gemm-cublas supports at most " +
             std::to_string(kMaxSlots) + " centroid slots";
    if (param_space(problem, device).enumerate().empty())
      return "no tile size fits: a " + std::to_string(kTileRows.front()) + "-row tile of " + std::to_string(slots) +
             " dot products exceeds the tile memory budget";
    const double tile_bytes = double(std::min<int64_t>(kTileRows.front(), problem.m)) * double(slots) * 4.0;
    return gpu::check_fits_in_memory(problem, device, tile_bytes + double(slots) * 4.0);
  }

  // LloydState's buffers, the dot-product tile of tile_rows × ΣK and the centroid norms.
  DeviceFootprint device_footprint(const Problem& problem, const Params& params, const DeviceInfo& device,
                                   bool with_labels) const override {
    DeviceFootprint footprint = Variant::device_footprint(problem, params, device, with_labels);
    const int64_t slots = gemm::k_slot_sum(problem.k);
    int64_t rows = kTileRows.front();
    if (params.is_object() && params.contains("tile_rows") && params.at("tile_rows").is_number_integer())
      rows = params.at("tile_rows").get<int64_t>();
    footprint.add("dot-product tile", double(std::min<int64_t>(rows, problem.m)) * double(slots) * 4.0);
    footprint.add("centroid norms", double(slots) * 4.0);
    if (params.is_object() && params.value("update", std::string()) == "dgemm")
      footprint.add("FP64 point and one-hot tiles",
                    double(dgemm_operand_bytes(std::min<int64_t>(rows, problem.m), problem.n, slots)));
    return footprint;
  }

  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    ParamSpace space;
    Axis tiles{"tile_rows", {}, "rows of X per SGEMM; the tile_rows × ΣK dot block should stay in L2"};
    for (int rows : kTileRows) tiles.values.push_back(rows);
    space.axes.push_back(tiles);
    space.axes.push_back({"precision", {"fp32", "tf32"},
                          "SGEMM arithmetic: fp32, or TF32 tensor cores (labels still exact via re-check)"});
    space.axes.push_back({"block", {128, 256}, "threads per block of the argmin kernel (one warp per point)"});
    space.axes.push_back({"update", {"global", "smem", "dgemm"},
                          "centroid sums: global FP64 atomics, block-private shared FP64 then flush, or one "
                          "FP64 DGEMM a tile (the rows widened to FP64 times a one-hot matrix)"});
    space.axes.push_back({"layout", {"aos", "soa"}, "point layout in device memory"});

    const bool tf32_ok = device.cc_major >= 8;
    space.restrictions.push_back({"precision=tf32 needs compute capability >= 8.0", [tf32_ok](const Params& p) {
                                    return tf32_ok || p.at("precision") == "fp32";
                                  }});
    const int64_t slots = gemm::k_slot_sum(problem.k);
    const int64_t budget = tile_budget_bytes(device);
    space.restrictions.push_back(
        {"tile_rows*sum(K)*4 bytes <= " + std::to_string(budget >> 20) + " MiB (min of 2 GiB and device memory/8)",
         [slots, budget](const Params& p) { return int64_t(p.at("tile_rows").get<int>()) * slots * 4 <= budget; }});
    const int64_t m = problem.m;
    space.restrictions.push_back(
        {"tile_rows/4 < M unless it is the smallest tile (a larger tile repeats the same one-tile run)",
         [m](const Params& p) {
           const int rows = p.at("tile_rows").get<int>();
           return rows == kTileRows.front() || rows / 4 < m;
         }});
    const int64_t smem_need = gemm::block_accumulator_bytes(problem, true);
    const int64_t smem_have = device.smem_per_block_optin;
    space.restrictions.push_back(
        {"update=smem needs sum(K)*(8N+8)+8*count(K) = " + std::to_string(smem_need) +
             " bytes <= shared memory per block (" + std::to_string(smem_have) + ")",
         [smem_need, smem_have](const Params& p) { return p.at("update") != "smem" || smem_need <= smem_have; }});
    const int64_t n = problem.n;
    space.restrictions.push_back(
        {"update=dgemm needs tile_rows*(N+sum(K))*8 bytes <= " + std::to_string(budget >> 20) + " MiB",
         [n, slots, budget](const Params& p) {
           return p.at("update") != "dgemm" || dgemm_operand_bytes(p.at("tile_rows").get<int>(), n, slots) <= budget;
         }});
    const bool soa_ok = problem.m <= INT32_MAX;
    space.restrictions.push_back({"layout=soa needs M <= 2^31-1 (cuBLAS leading dimension is an int)",
                                  [soa_ok](const Params& p) { return soa_ok || p.at("layout") == "aos"; }});
    return space;
  }

  // tile_rows: the largest tile whose dot block (tile_rows × ΣK × 4 B) fills at most half of
  // L2, so the GEMM's output is still cached when the argmin kernel reads it. update=smem
  // only for small ΣK, where many points of a block share a slot and global atomics contend.
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    const int64_t slots = gemm::k_slot_sum(problem.k);
    const int64_t target_rows = device.l2_bytes > 0 ? device.l2_bytes / (std::max<int64_t>(slots, 1) * 4 * 2) : 0;
    int tile = kTileRows.front();
    for (int rows : kTileRows)
      if (rows <= target_rows) tile = rows;
    // No point in a tile more than one step beyond M.
    while (tile != kTileRows.front() && tile / 4 >= problem.m) tile /= 4;
    const bool smem_fits = gemm::block_accumulator_bytes(problem, true) <= device.smem_per_block_optin;
    // update=dgemm for a range of K at N >= 64 where the block-private sums do not fit: each point
    // would add N FP64 atomics for every K. On an H200 (mkbench run, median of 10,
    // ab/gemm-cublas-update-dgemm.txt): Fashion-MNIST's 2..20 (N=784) 3.22 ms a step against
    // 5.70 with global atomics; for one K the atomics won at every shape tried (N=784 K=10:
    // 0.74 against 0.92; N=128 K=100, 1024; N=256 K=64; N=768 K=1000).
    const bool dgemm = problem.k.count() >= 2 && problem.n >= 64 && slots <= 128 * int64_t(problem.k.count());
    Params params = {{"tile_rows", tile},
                     {"precision", "fp32"},
                     {"block", 256},
                     {"update", smem_fits && slots <= 128 ? "smem" : dgemm ? "dgemm" : "global"},
                     {"layout", "aos"}};
    const ParamSpace space = param_space(problem, device);
    if (!space.check(params)) return params;
    // Memory budget forbids the L2-sized tile: take the largest legal one.
    for (auto it = kTileRows.rbegin(); it != kTileRows.rend(); ++it) {
      params["tile_rows"] = *it;
      if (!space.check(params)) return params;
    }
    return params;
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    if (auto reason = can_implement(problem, device)) throw UnsupportedError("gemm-cublas: " + *reason);
    return std::make_unique<GemmCublasRun>(problem, data, params, device);
  }
};

MKBENCH_REGISTER_VARIANT(GemmCublas);

}  // namespace
}  // namespace mk
