#include "variants/tensor_multik/kernel_config.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/common/kernel_sources.hpp"
#include "variants/common/packed_argmin.hpp"

namespace mk::tensor_multik {

int n_tiles(int sum_k) { return (sum_k + 7) / 8; }
int k_steps(int n) { return (n + 7) / 8; }

// Forward-error window (relative to ‖x‖² + 2·max‖c‖²) inside which two expanded distances
// may be mis-ordered. Per centroid, with Σ|x_d c_d| ≤ (‖x‖² + max‖c‖²)/2 ≤ scale/2:
//   3xTF32 products, x split to nearest and c via cvt.rna: ≤ 4·2^-22 of 2Σ|x_d c_d|;
//   each of the 3·DK MMAs sums 8 products and its accumulator with alignment truncation:
//     ≤ 10·2^-23 of the scale each, 15·DK·2^-22 in all (16·DK below);
//   ‖c‖² as an FP32 FMA chain: N·2^-24 relative;
//   argmin=packed only: the packed index in the mantissa, 2^(bits-23) of |d'| ≤ scale.
// Twice that bounds the mis-ordering of two centroids; 1.25 covers second-order terms.
// distance=f16x2 (FP16 hi + lo of x and of −2c, both to nearest): each value keeps 2^-22 of
// itself, so the products err by ≤ 3·2^-22 of 2Σ|x_d c_d| (the dropped lo·lo included); each
// m16n8k16 sums 16 products and its accumulator, ≤ 18·2^-23 of the scale (an m16n8k8, 10·2^-23):
// two m16n8k8 per tile for N ≤ 4, two m16n8k16 for N ≤ 8, 3·ceil(N/16) wider. FP16's subnormal
// floor (2^-25 per value) is an absolute error instead, which abs_window_scale bounds.
// operands=prepared centres points and centroids on μ, each coordinate rounded once
// (fl(x − μ) = (x − μ)(1 + ε), |ε| ≤ 2^-24): with a = x − μ, b = c − μ, the squared distance moves
// by ≤ 2‖a − b‖·2^-24(‖a‖ + ‖b‖) ≤ 2^-22(‖a‖² + ‖b‖²) ≤ 2^-22 of the (centred) scale, one more
// unit per centroid.
// Accumulation error of the f16x2 distance product per centroid, in units of 2^-22 of the scale:
// an MMA summing k products and its accumulator errs by ≤ (k + 2)·2^-23. N ≤ 4: two m16n8k8
// (5 each); N ≤ 8: two m16n8k16 (9 each); wider: 3·ceil(N/16) m16n8k16.
double f16_distance_accumulation(int n) { return n <= 4 ? 2 * 5.0 : n <= 8 ? 2 * 9.0 : 3 * ((n + 15) / 16) * 9.0; }

double tie_scale(int n, int kmax, bool packed_keys, bool f16_distance, bool centred) {
  const double u22 = std::ldexp(1.0, -22);
  const double products = (f16_distance ? 3.0 + f16_distance_accumulation(n) : 4.0 + 16.0 * k_steps(n)) + (centred ? 1.0 : 0.0);
  const double per_centroid = (products + n / 4.0) * u22 +
                              (packed_keys ? std::ldexp(1.0, packed_index_bits(kmax) - 23) : 0.0);
  return 2.0 * per_centroid * 1.25;
}

// The subnormal floor: Σ_d (|x_d|·2^-25 + |2c_d|·2^-25) ≤ 2^-25·√N·(‖x‖ + 2‖c‖) per centroid;
// twice that (two centroids), 1.25 as above and 1 % for the kernel's approximate square roots.
double abs_window_scale(int n) { return 2.0 * 1.25 * 1.01 * std::ldexp(1.0, -25) * std::sqrt(double(n)); }

int64_t dynamic_smem_bytes(int n, int sum_k, int block, int stages, Ring ring_kind) {
  const int transpose_row = std::min(32, 8 * n_tiles(sum_k)) + 4;  // TROW in the kernel
  const int64_t ring = ring_kind == Ring::none ? 0 : int64_t(stages) * 32 * n;
  const int64_t floats = ((int64_t(sum_k) * n + 3) & ~int64_t(3)) + ((sum_k + 3) & ~3) +
                         int64_t(block / 32) * (ring + 32 * transpose_row);
  return floats * 4;
}

int64_t smem_limit(const DeviceInfo& device) {
  return device.smem_per_block_optin > 0 ? device.smem_per_block_optin : 48 * 1024;
}


gpu::RuntimeCompileRequest compile_request(const KernelConfig& config) {
  const int sum_k = (config.kmin + config.kmax) * (config.kmax - config.kmin + 1) / 2;
  const int bits = packed_index_bits(config.kmax);
  const double window = tie_scale(config.n, config.kmax, !config.argmin_mask, config.f16_distance, config.prepared_operands);
  std::ostringstream defines;
  defines << "#define NDIM " << config.n << "\n#define KMIN " << config.kmin << "\n#define KMAX " << config.kmax
          << "\n#define SUMK " << sum_k << "\n#define BLOCK " << config.block << "\n#define STAGES " << config.stages
          << "\n#define MIN_BLOCKS " << config.min_blocks << "\n#define USE_STMATRIX " << (config.stmatrix ? 1 : 0)
          << "\n#define UPDATE_F16 " << (config.update_f16 ? 1 : 0) << "\n#define SCALE_X " << (config.scale_points ? 1 : 0)
          << "\n#define CFRAG_SHARED " << (config.shared_fragments ? 1 : 0)
          << "\n#define ARGMIN_MASK " << (config.argmin_mask ? 1 : 0) << "\n#define IDX_BITS " << bits
          << "\n#define DIST_F16 " << (config.f16_distance ? 1 : 0)
          << "\n#define FETCH_REGS " << (config.fetch_registers ? 1 : 0)
          << "\n#define PREPARED_OPERANDS " << (config.prepared_operands ? 1 : 0)
          << "\n#define STORE_LABELS " << (config.store_labels || !config.prepared_operands ? 1 : 0)
          << "\n#define PREFETCH_AHEAD " << (config.prepared_operands ? config.prefetch_ahead : 0)
          << "\n#define INT_GROUP_MIN " << (config.int_group_min ? 1 : 0)
          // More than 4 packed index bits: their mantissa error would show in the inertia, so
          // every winner's term is an exact distance. Mask keys carry no index.
          << "\n#define EXACT_INERTIA " << (bits > 4 && !config.argmin_mask ? 1 : 0) << std::scientific
          << "\n#define TIE_SCALE " << window << "f\n#define GUARD_OVER_TIE " << kGuardOverTieScale << "f\n#define ABS_SCALE "
          << abs_window_scale(config.n) << "f\n#define TIMELINE " << (config.timeline ? 1 : 0)
          << "\n#define SUMS_OUT " << (config.sums_out ? 1 : 0) << "\n";
  gpu::RuntimeCompileRequest request{defines.str() + "#include \"kernel.cuh\"\n", "tensor_multik.cu", config.cc_major,
                                     config.cc_minor};
  request.headers = gpu::kernel_headers("tensor_multik/kernel");
  request.description = "N=" + std::to_string(config.n) + " K=" + std::to_string(config.kmin) + ".." +
                        std::to_string(config.kmax) + " block=" + std::to_string(config.block) + " min_blocks=" +
                        std::to_string(config.min_blocks) + " stages=" + std::to_string(config.stages) +
                        (config.stmatrix ? " stmatrix" : "") + (config.update_f16 ? " update=f16" : " update=tf32") +
                        (config.scale_points ? " scaled" : "") + (config.shared_fragments ? " fragments=shared" : "") +
                        (config.argmin_mask ? " argmin=mask" : "") + (config.f16_distance ? " distance=f16x2" : "") +
                        (config.fetch_registers ? " fetch=registers" : "") +
                        (config.prepared_operands ? " operands=prepared prefetch=" + std::to_string(config.prefetch_ahead) : "") +
                        (config.int_group_min ? " group_min=int" : "") + (config.store_labels ? " labels" : "") +
                        (config.timeline ? " timeline" : "") + (config.sums_out ? " sums-out" : "");
  request.dump_tag = "tensor-n" + std::to_string(config.n) + "-k" + std::to_string(config.kmin) + "-" +
                     std::to_string(config.kmax) + "-b" + std::to_string(config.block) + "x" +
                     std::to_string(config.min_blocks) + "-s" +
                     std::to_string(config.stages) + (config.stmatrix ? "-stmatrix" : "-sts") +
                     (config.update_f16 ? "-f16" : "-tf32") + (config.scale_points ? "-scaled" : "") +
                     (config.shared_fragments ? "-sfrag" : "") + (config.argmin_mask ? "-mask" : "") +
                     (config.f16_distance ? "-d16" : "") + (config.fetch_registers ? "-regfetch" : "") +
                     (config.prepared_operands ? "-prepared-p" + std::to_string(config.prefetch_ahead) : "") +
                     (config.int_group_min ? "-imin" : "") + (config.store_labels ? "-labels" : "") +
                     (config.sums_out ? "-sums" : "");
  return request;
}

cudaKernel_t compiled_kernel(const KernelConfig& config) {
  static std::mutex mutex;
  static std::map<KernelConfig, cudaKernel_t> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache.find(config);
  if (found != cache.end()) return found->second;
  cudaLibrary_t library = gpu::compile_and_load(compile_request(config));
  cudaKernel_t kernel = nullptr;
  gpu::check(cudaLibraryGetKernel(&kernel, library, "tensor_multik_iteration"), "tensor_multik_iteration");
  return cache.emplace(config, kernel).first->second;
}

// distance=f16x2 is the default wherever it applies: N ≤ 16 with the FP16 update.
bool f16_distance_applies(int n, const Params& params) {
  return n <= 16 && params.value("update", std::string("f16")) == "f16";
}

bool prepared_operands_requested(const Params& params) {
  return params.value("operands", std::string("per-step")) == "prepared";
}

// fetch=registers: the kernel's #error names the same conditions. From FP32 rows, ‖x‖² travels
// in the free half of the last distance tile, so ΣK must leave 4 to 7 slots of it empty;
// operands=prepared brings ‖x‖² prepared and needs no free slots.
// `form` names what is refused: the prepared words have the same layout (any fetch form).
std::optional<std::string> fetch_registers_refusal(int n, int sum_k, const Params& params,
                                                   const std::string& form) {
  if (n != 4 && n != 8) return form + " needs N of 4 or 8 (one float2 per fragment row and lane)";
  if (params.value("distance", std::string(f16_distance_applies(n, params) ? "f16x2" : "tf32x3")) != "f16x2")
    return form + " needs distance=f16x2";
  if (params.value("argmin", std::string(sum_k <= 32 ? "mask" : "packed")) != "mask")
    return form + " needs argmin=mask";
  if (!prepared_operands_requested(params) && sum_k - 8 * (n_tiles(sum_k) - 1) > 4)
    return "fetch=registers from operands=per-step needs ΣK mod 8 in 1..4 (the last tile's free slots carry ‖x‖²), ΣK=" + std::to_string(sum_k);
  return std::nullopt;
}

// operands=prepared has words for N of 4 and 8 only, in the layout of fetch=registers' fragment
// registers, which its loads fill one (N=4: two) steps ahead. (Through a cp.async ring instead,
// fetch=ring, they measured slower at every depth: README.md.)
std::optional<std::string> prepared_operands_refusal(int n, int sum_k, const Params& params) {
  if (!prepared_operands_requested(params)) return std::nullopt;
  if (params.value("fetch", std::string("ring")) != "registers")
    return std::string("operands=prepared needs fetch=registers (its words go straight into registers)");
  return fetch_registers_refusal(n, sum_k, params, "operands=prepared");
}

bool int_group_min_requested(const Params& params) { return params.value("group_min", std::string("float")) == "int"; }

// group_min=int biases every key by the data's mean ‖x'‖², a constant the prepared run computes.
std::optional<std::string> int_group_min_refusal(const Params& params) {
  if (int_group_min_requested(params) && !prepared_operands_requested(params))
    return std::string("group_min=int needs operands=prepared (whose run computes the key bias)");
  return std::nullopt;
}

Ring ring_kind(const Params& params) {
  return params.value("fetch", std::string("ring")) == "registers" ? Ring::none : Ring::rows;
}

KernelConfig config_for(const Problem& problem, const Params& params, int cc_major, int cc_minor,
                        float point_scale) {
  return {problem.n,
          problem.k.kmin,
          problem.k.kmax,
          params.at("block").get<int>(),
          params.at("min_blocks").get<int>(),
          params.at("stages").get<int>(),
          params.at("transpose").get<std::string>() == "stmatrix",
          params.at("update").get<std::string>() == "f16",
          point_scale != 1.f,
          params.value("fragments", std::string("registers")) == "shared",
          params.value("argmin", std::string(problem.k.sum() <= 32 ? "mask" : "packed")) == "mask",
          params.value("distance", std::string(f16_distance_applies(problem.n, params) ? "f16x2" : "tf32x3")) == "f16x2",
          // The prepared kernel has no row ring.
          params.value("fetch", std::string("ring")) == "registers" || prepared_operands_requested(params),
          prepared_operands_requested(params),
          cc_major,
          cc_minor,
          false,
          params.value("prefetch", kDefaultPrefetchAhead),
          int_group_min_requested(params)};
}

// The centre of operands=prepared: each column's mean, summed in FP64 over fixed blocks of rows
// and then the blocks in order, so the same data gives the same μ whatever the thread count.

}  // namespace mk::tensor_multik
