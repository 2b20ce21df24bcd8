// tf32-window: one large K (hundreds to a few thousand centroids) at N <= 128, where the
// distance product dominates and gemm-tf32x3's three MMAs per product and shared-memory
// point staging cost ~8x the goal (issue 4's N=32, K=1024 case).
//
// One FP16 tensor-core product per key, not three. It errs by ~2^-10 of |x||c|, so every
// centroid inside the forward-error window (fp16_key_error.hpp) is arbitrated in exact FP32,
// and labels stay FP32-faithful. The kernel and its stages: window_kernel.cu. Design and
// measurements: docs/tf32-window.md.
//
// This file: what the variant takes (can_implement), its axes and restrictions as data, and
// its defaults.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/tf32_window/layout.hpp"
#include "variants/tf32_window/run.hpp"
#include "variants/tf32_window/translation.hpp"
#include "variants/variant.hpp"

namespace mk::tf32_window {
namespace {

class Tf32Window : public Variant {
 public:
  std::string name() const override { return "tf32-window"; }
  std::string description() const override {
    return "one large K (>= 64): single-pass FP16 tensor-core distances in two sweeps (plain minimum, then "
           "in-window keys counted and identified) against a shared-memory centroid table, exact FP32 arbitration "
           "of the near-tie window (FP32-faithful labels), update by FP64 atomics or block sums in shared memory";
  }
  bool runs_on_gpu() const override { return true; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    if (problem.streamed) return kRefuseStreamed;
    if (device.cc_major < 8) return "needs FP16 m16n8k16 tensor cores (CC >= 8.0)";
    if (problem.k.kmin != problem.k.kmax)
      return "one K per run (a range of K is tensor-multik's or registers-multik's shape)";
    if (problem.k.kmax < kMinK)
      return "K=" + std::to_string(problem.k.kmax) + " below " + std::to_string(kMinK) +
             " (the FP64 atomic update serialises on K·N addresses); use tensor-multik or registers-multik";
    if (problem.n > kMaxDims)
      return "N=" + std::to_string(problem.n) + " above " + std::to_string(kMaxDims) +
             " (point fragments are register-resident); use gemm-window";
    const int64_t kpad = padded_centroids(problem.k.kmax);
    if (index_bits(kpad) > kMaxIndexBits)
      return "K=" + std::to_string(problem.k.kmax) + " needs more than " + std::to_string(kMaxIndexBits) +
             " index bits in the in-window counts; use gemm-window";
    const int64_t need = smem_for(kpad, problem.n, 128);  // the smallest block
    if (need > smem_limit(device))
      return "the centroid table needs " + std::to_string(need) + " bytes of shared memory, device allows " +
             std::to_string(smem_limit(device)) + "; use gemm-window";
    return gpu::check_fits_in_memory(problem, device, double(kpad) * f16_steps(problem.n) * 32.0);
  }

  // LloydState's buffers and the FP16 centroid image the table is loaded from.
  DeviceFootprint device_footprint(const Problem& problem, const Params& params, const DeviceInfo& device,
                                   bool with_labels) const override {
    DeviceFootprint footprint = Variant::device_footprint(problem, params, device, with_labels);
    footprint.add("centroid image", double(padded_centroids(problem.k.kmax)) * f16_steps(problem.n) * 32.0);
    return footprint;
  }

  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    ParamSpace space;
    const int sms = std::max(1, device.sm_count);
    std::vector<nlohmann::json> grids{0};
    for (int factor : {1, 2, 4}) grids.push_back(int64_t(factor) * sms);
    space.axes.push_back({"grid", grids, "blocks; 0 = the resident blocks of every SM (persistent grid)"});
    std::vector<nlohmann::json> blocks;
    for (int block : {128, 256, 384, 512})
      if (block <= max_block_for(problem.n)) blocks.push_back(block);
    space.axes.push_back({"block", blocks,
                          "threads per block (32 points per warp and step; at most 384 above 64 dims, where a "
                          "kernel is built for each block: 255 registers a thread up to 256, 168 at 384)"});
    space.axes.push_back({"empty_tiles",
                          {"skip", "count"},
                          "the second sweep: skip n-tiles with no key inside any of the warp's windows (a compare "
                          "per key and a vote), or count every tile"});
    space.axes.push_back({"update",
                          {"global", "shared"},
                          "global: one FP64 atomic per point and 32 dims into the sums; shared: the block's FP32 sums "
                          "of x - mean in shared memory, flushed every 4096 of its points"});
    const int64_t kpad = padded_centroids(problem.k.kmax);
    const int n = problem.n;
    const int64_t limit = smem_limit(device);
    const int64_t sums = shared_sums_bytes(problem.k.kmax, n);
    space.restrictions.push_back(
        {"shared memory: centroid table + per-warp scratch (+ the block's sums for update=shared) fit the per-block "
         "limit",
         [kpad, n, limit, sums](const Params& p) {
           return smem_for(kpad, n, p.at("block").get<int>(), shares_update(p) ? sums : 0) <= limit;
         }});
    const int64_t steps = (problem.m + 31) / 32;
    space.restrictions.push_back({"no idle blocks: (grid-1)·block/32 warps < steps of 32 points", [steps](const Params& p) {
                                    const int64_t grid = p.at("grid").get<int64_t>();
                                    return grid == 0 || (grid - 1) * (p.at("block").get<int64_t>() / 32) < steps;
                                  }});
    return space;
  }

  // The table decides residency: where it takes most of an SM's shared memory only one
  // block fits, so that block should be the largest (16 warps) whose per-warp scratch still
  // fits beside the table; small tables leave room for several blocks of 256. (N=48 K=2000
  // left no room for 16 warps: the default of 512 broke its own restriction,
  // VariantClaims.AcceptedShapesResolveTheirDefaultParameters.)
  //
  // update: the block's shared sums where K·N floats take at most kSharedSumsUpTo (measured,
  // layout.hpp) and fit beside the table in the smallest block; otherwise FP64 atomics.
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    const int64_t kpad = padded_centroids(problem.k.kmax);
    const int64_t per_sm = device.smem_per_sm > 0 ? device.smem_per_sm : smem_limit(device);
    const int64_t shared_sums = shared_sums_bytes(problem.k.kmax, problem.n);
    const bool shared = shared_sums <= kSharedSumsUpTo && smem_for(kpad, problem.n, 128, shared_sums) <= smem_limit(device);
    const int64_t sums = shared ? shared_sums : 0;
    int block = 256;
    if (f16_steps(problem.n) > kNarrowSteps) {
      // Wide rows: their registers hold one block an SM whatever its size, so the most
      // threads whose scratch fits beside the table.
      block = 128;
      for (int larger : {kWideMaxBlock, 256})
        if (smem_for(kpad, problem.n, larger, sums) <= smem_limit(device)) {
          block = larger;
          break;
        }
    } else if (2 * smem_for(kpad, problem.n, 256, sums) > per_sm) {
      block = 128;  // can_implement guarantees the smallest block fits (with the sums: checked above)
      for (int larger : {512, 384, 256})
        if (smem_for(kpad, problem.n, larger, sums) <= smem_limit(device)) {
          block = larger;
          break;
        }
    }
    return {{"grid", 0},
            {"block", block},
            {"empty_tiles", kpad >= kSkipEmptyTilesFromKpad ? "skip" : "count"},
            {"update", shared ? "shared" : "global"}};
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    if (auto reason = can_implement(problem, device)) throw UnsupportedError("tf32-window: " + *reason);
    const Translation translation = translation_for(data);  // refuses data beyond FP32's range, before any GPU work
    return make_window_run(problem, data, params, device, translation);
  }
};

MKBENCH_REGISTER_VARIANT(Tf32Window);

}  // namespace
}  // namespace mk::tf32_window
