// tensor-multik (variant registration, capability, parameter space, defaults): seed 000's MultiK iteration (every K of the range per point read) with the
// distances on tensor cores, for the small-K, small-N regime of the seed's tables.
//
// registers-multik spends ~200 FFMA per point on distances and is issue-bound at ~1.2 ms on
// the Table-1 case (reports/NOTES-perf.md, v4). Here one warp step of 32 points does:
//   stream   points reach shared memory through a per-warp ring of cp.async stages, so each
//            warp keeps STAGES-1 steps of loads in flight without spending registers on them
//            (fetch=ring), or go straight into registers one step ahead (fetch=registers), as
//            operands prepared once per run (operands=prepared) or as FP32 rows;
//   distance D[32 points × ΣK slots] = ‖c‖² + X·(−2C)ᵀ, the centroid fragments held in registers
//            for the whole kernel. distance=f16x2 (the default up to N = 16): mma.m16n8k16 FP16
//            whose k holds the hi and lo parts of each coordinate as separate features (one MMA
//            per tile at N ≤ 4, two at N ≤ 8, three at N ≤ 16; FP32-class accuracy, see DIST_F16);
//            distance=tf32x3: mma.m16n8k8 TF32, x_hi·c_lo + x_lo·c_hi + x_hi·c_hi;
//   argmin   the fragments are transposed through shared memory (stmatrix on sm_90) so each
//            lane owns one point's row of ΣK distances, and the argmin is a straight line per
//            lane, no shuffles. argmin=mask (the default up to ΣK = 32): each group's plain
//            minimum, then one bit per slot, "inside the window of its group's minimum", from
//            the sign of key − (min + window) by a funnel shift: when every group has exactly one
//            bit (one popcount) that word is the point's one-hot word. argmin=packed (ΣK > 32):
//            the index packed into each key's low mantissa bits, the window counted with
//            saturating FFMAs;
//   labels   FP32-faithful: when a second centroid lies within the forward-error window of
//            the 3xTF32 expansion (TIE_SCALE, derived on the host) or the point sits so near
//            its centroid that the expansion would show in the inertia, the lane re-decides that
//            K group with exact FP32 Σ(x−c)², as registers-multik and gemm-tf32x3 do, over
//            the centroids within two windows of its best (read back from the transposed row);
//   update   one-hot(labels)ᵀ·X on tensor cores, accumulators in MMA fragments for the whole
//            kernel. Default (update=f16): m16n8k16 FP16, X split hi+lo in FP16 after a
//            power-of-two scale (with distance=f16x2, the distance's own operands transposed by
//            movmatrix), and each one-hot operand one AND of a shuffled word whose
//            bytes two points' one-hot bits share, the bit itself being an FP16 subnormal;
//            the counts are sums of the same registers. update=tf32 keeps the m16n8k8 TF32
//            product (32 one-hot operands per step built bit by bit);
//   finish   fragments → shared FP32 → FP64 global atomics; the last block to finish divides
//            the sums into the new centroids and clears the scratch for the next iteration,
//            so one Lloyd iteration is one kernel launch (no memsets, no divide kernel).
//
// Files: kernel/*.cuh the runtime-compiled kernel (one file per stage), kernel_config.* its
// specialisation, run.cu the prepared run, prepared_operands.cu the data it prepares.
// README.md: the layout and the measurement behind each design decision.
#include <algorithm>
#include <string>
#include <vector>

#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/tensor_multik/kernel_config.hpp"
#include "variants/tensor_multik/prepared_operands.hpp"
#include "variants/tensor_multik/run.hpp"
#include "variants/tensor_multik/tensor_multik.hpp"

namespace mk::tensor_multik {
namespace {

class TensorMultiK : public Variant {
 public:
  std::string name() const override { return "tensor-multik"; }
  std::string description() const override {
    return "seed 000 MultiK with tensor-core distances (FP16 hi+lo features, or 3xTF32), per-lane argmin after an "
           "stmatrix transpose, FP16 one-hot tensor-core update, cp.async point ring; one launch per iteration";
  }
  bool runs_on_gpu() const override { return true; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    if (problem.streamed) return kRefuseStreamed;
    if (device.cc_major < 8) return "needs TF32 tensor cores (CC >= 8.0)";
    if (problem.m >= (int64_t(1) << 36)) return "M of 2^36 points or more (the kernel counts 32-point steps in 32 bits)";
    const int sum_k = problem.k.sum();
    if (sum_k > kMaxSlots)
      return "ΣK=" + std::to_string(sum_k) + " exceeds " + std::to_string(kMaxSlots) +
             " slots (one-hot words and fragments in registers); use registers-multik or gemm-tf32x3";
    if (n_tiles(sum_k) * k_steps(problem.n) > kMaxTilesTimesSteps)
      return "ceil(ΣK/8)·ceil(N/8) = " + std::to_string(n_tiles(sum_k) * k_steps(problem.n)) + " exceeds " +
             std::to_string(kMaxTilesTimesSteps) +
             " register-resident centroid tiles; use registers-multik or gemm-tf32x3";
    if (dynamic_smem_bytes(problem.n, sum_k, 128, 2) > smem_limit(device))
      return "the smallest block (128 threads, 2 stages) needs " +
             std::to_string(dynamic_smem_bytes(problem.n, sum_k, 128, 2)) + " bytes of shared memory, device allows " +
             std::to_string(smem_limit(device));
    return gpu::check_fits_in_memory(problem, device, double(sum_k) * problem.n * 8.0);
  }

  // LloydState's buffers, the run's own FP64 sums, and operands=prepared's copy of the points
  // (FP16 fragment words of every 32-point step) with their norms.
  DeviceFootprint device_footprint(const Problem& problem, const Params& params, const DeviceInfo& device,
                                   bool with_labels) const override {
    DeviceFootprint footprint = Variant::device_footprint(problem, params, device, with_labels);
    footprint.add("tensor-multik sums", double(problem.k.sum()) * problem.n * 8.0);
    if (params.is_object() && params.value("operands", std::string()) == "prepared") {
      const double steps = double((problem.m + 31) / 32);
      footprint.add("prepared operands", steps * 8.0 * problem.n * 16.0 + steps * 32.0 * 4.0);
    }
    return footprint;
  }

  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    ParamSpace space;
    const int sms = std::max(1, device.sm_count);
    std::vector<nlohmann::json> grids{0};
    for (int factor : {1, 2, 3, 4, 6, 8}) grids.push_back(int64_t(factor) * sms);
    space.axes.push_back({"grid", grids, "blocks; 0 = the resident blocks of every SM (persistent grid)"});
    // 640 and 768: one block per SM at 96 and 80 registers. N=4 K=3..5 takes 640 × 1 (below).
    space.axes.push_back({"block", {128, 256, 384, 512, 640, 768}, "threads per block"});
    // 5 and 6 (20 and 24 warps of 128-thread blocks at 96 and 80 registers) measured 7-15 %
    // slower at N=8 K=3..7 and 11 % at N=4 K=3..5, so the space stops at 4.
    space.axes.push_back({"min_blocks", {1, 2, 3, 4},
                          "launch-bounds minimum of resident blocks per SM: caps registers at 65536/(block·min_blocks)"});
    space.axes.push_back({"stages", {2, 3, 4, 6}, "cp.async ring depth per warp, in steps of 32 points (stages - 1 in flight beside the one read; fetch=registers has no ring)"});
    space.axes.push_back({"transpose", {"stmatrix", "shared-stores"},
                          "how distance fragments reach the per-lane rows: stmatrix (sm_90) or 4 scalar stores"});
    space.axes.push_back({"update", {"f16", "tf32"},
                          "one-hot(labels)ᵀ·X product: FP16 m16n8k16 (points split hi+lo in FP16, one-hot bits "
                          "as FP16 operands straight from shuffled bytes) or TF32 m16n8k8 (hi+lo TF32)"});
    space.axes.push_back({"fragments", {"registers", "shared"},
                          "where the centroid operands of the distance product live: registers for the whole "
                          "kernel, or shared memory, one LDS.128 per tile and k-step each step (4·tiles fewer registers)"});
    space.axes.push_back({"argmin", {"packed", "mask"},
                          "per-point argmin and near-tie test: packed (index in the key's low mantissa bits, window "
                          "count by saturating FFMAs; 4 instructions per key) or mask (plain minimum, then one "
                          "in-window bit per key by a funnel shift of key − edge's sign; 3 per key; ΣK <= 32)"});
    space.axes.push_back({"distance", {"tf32x3", "f16x2"},
                          "distance product: tf32x3 (m16n8k8, x and c split hi+lo in TF32, 3 MMAs per 8 dims) or "
                          "f16x2 (m16n8k16, hi+lo in FP16 as features of k: 1 MMA per tile for N <= 4, 2 for N <= 8; "
                          "the update reads the same registers transposed by movmatrix)"});
    space.axes.push_back({"fetch", {"ring", "registers"},
                          "how points reach the distance fragments: ring (cp.async into a per-warp shared ring of "
                          "`stages` steps, read back by shared loads) or registers (each lane loads its fragment "
                          "pairs from global memory one step ahead, `stages` unused; N of 4 or 8, and with operands=per-step ΣK mod 8 "
                          "in 1..4)"});
    space.axes.push_back({"operands", {"per-step", "prepared"},
                          "the distance product's FP16 point operands and ‖x‖²: per-step (split from the FP32 rows "
                          "every step) or prepared (converted once when the run is prepared into the fragment words "
                          "in lane order, plus ‖x‖², which fetch=registers loads into the fragment registers as they "
                          "are; N of 4 or 8, distance=f16x2, argmin=mask; the rows stay for the exact fix-up)"});
    space.axes.push_back({"prefetch", {0, 1, 2, 4},
                          "operands=prepared only (ignored otherwise): while a step runs, the step this many steps "
                          "beyond the furthest one fetched (the next, two at N=4) is asked into L2 (prefetch.global.L2), so its loads hit L2 instead of "
                          "waiting on DRAM; 0 = none"});
    space.axes.push_back({"group_min", {"float", "int"},
                          "argmin=mask's minimum of each K group: float (FMNMX, one key an instruction) or int (every "
                          "key biased by the data's mean ‖x'‖² in its accumulator, so most are positive and their bits "
                          "order as integers: sm_90's three-input integer min takes two keys an instruction; a group "
                          "with two keys below zero goes to the exact fix-up; operands=prepared only)"});
    space.axes.push_back({"layout", {"aos"}, "point layout in device memory (both fetch forms read whole rows)"});
    const bool hopper = device.cc_major >= 9;
    space.restrictions.push_back({"transpose=stmatrix needs sm_90", [hopper](const Params& p) {
                                    return hopper || p.at("transpose").get<std::string>() != "stmatrix";
                                  }});
    const int n = problem.n, sum_k = problem.k.sum();
    const int64_t limit = smem_limit(device);
    space.restrictions.push_back(
        {"shared memory: centroids + (block/32)·(ring + 32·(min(32, 8·ceil(ΣK/8)) + 4)) floats fit the per-block limit "
         "(ring: stages·32·N floats, none with fetch=registers)",
         [n, sum_k, limit](const Params& p) {
           return dynamic_smem_bytes(n, sum_k, p.at("block").get<int>(), p.at("stages").get<int>(), ring_kind(p)) <= limit;
         }});
    space.restrictions.push_back({"argmin=mask needs ΣK <= 32 (one 32-bit in-window word per point)",
                                  [sum_k](const Params& p) {
                                    return sum_k <= 32 || p.value("argmin", std::string("packed")) != "mask";
                                  }});
    space.restrictions.push_back({"distance=f16x2 needs update=f16 (they share the FP16 point operands)",
                                  [](const Params& p) {
                                    return p.value("distance", std::string("tf32x3")) != "f16x2" ||
                                           p.at("update").get<std::string>() == "f16";
                                  }});
    // Wider points keep 4+ feature tiles of fragments alive through the argmin: N=20 and N=32
    // spill 28-32 bytes at 128 registers (NVRTC, sm_90).
    space.restrictions.push_back({"distance=f16x2 needs N <= 16 (its point fragments live until the update)",
                                  [n](const Params& p) {
                                    return n <= 16 || p.value("distance", std::string("tf32x3")) != "f16x2";
                                  }});
    space.restrictions.push_back({"fetch=registers needs N of 4 or 8, distance=f16x2, argmin=mask and (operands=per-step) ΣK mod 8 in 1..4",
                                  [n, sum_k](const Params& p) {
                                    return p.value("fetch", std::string("ring")) != "registers" ||
                                           !fetch_registers_refusal(n, sum_k, p).has_value();
                                  }});
    space.restrictions.push_back({"operands=prepared needs fetch=registers, N of 4 or 8, distance=f16x2 and argmin=mask",
                                  [n, sum_k](const Params& p) { return !prepared_operands_refusal(n, sum_k, p).has_value(); }});
    space.restrictions.push_back({"group_min=int needs operands=prepared",
                                  [](const Params& p) { return !int_group_min_refusal(p).has_value(); }});
    space.restrictions.push_back({"block·min_blocks <= 2048 threads per SM", [](const Params& p) {
                                    return p.at("block").get<int>() * p.at("min_blocks").get<int>() <= 2048;
                                  }});
    const int64_t steps = (problem.m + 31) / 32;
    space.restrictions.push_back({"no idle blocks: (grid-1)·block/32 warps < steps of 32 points", [steps](const Params& p) {
                                    const int64_t grid = p.at("grid").get<int64_t>();
                                    return grid == 0 || (grid - 1) * (p.at("block").get<int64_t>() / 32) < steps;
                                  }});
    return space;
  }

  // Occupancy is set by registers: the resident centroid tiles and update accumulators grow
  // with tiles = ceil(ΣK/8)·ceil(N/8), and sm_90 ptxas (tests/test_tensor_multik.cpp keeps
  // it honest) fits them without spilling as follows:
  //   tiles ≤ 2 (N=4 K=3..5, N=8 K=16): ≤ 80 registers → block 384 × 2 = 24 warps per SM
  //   (N ≤ 4 with prepared operands: 640 × 1, below);
  //   tiles ≤ 4 (N=8 K=3..7: 140 uncapped): 128 → block 256 × 2 = 16 warps;
  //   more (N=16 K=3..7: 168 with register fragments): the centroid operands move to shared
  //   memory (fragments=shared, 128 registers without spilling) → block 512 × 1 = 16 warps:
  //   1.232 against 1.274 ms for 384 × 1 with register fragments (H200), while at
  //   N=8 shared fragments cost 4 % (0.82 against 0.78 ms: they save only 5 registers there).
  // Other architectures get block 256 × 1 (sm_80 spills at N=3 K=3..7 under a 128 cap).
  // argmin=mask wherever it applies (ΣK ≤ 32): on the H200, same call, tuned blocks, it took
  // N=8 K=3..7 from 0.785 to 0.715 ms, N=4 K=3..5 0.475 → 0.444, N=16 1.236 → 1.181 and
  // K=16 0.137 → 0.132.
  // 4 stages keep 3 steps of loads in flight per warp (48 KB per SM at 16 warps and N=8);
  // fewer where the ring would not fit.
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    const int tiles = n_tiles(problem.k.sum()) * k_steps(problem.n);
    int block = 256, min_blocks = 1;
    bool shared_fragments = false;
    if (device.cc_major >= 9) {
      if (tiles <= 2) block = 384, min_blocks = 2;
      else if (tiles <= 4) block = 256, min_blocks = 2;
      else block = 512, min_blocks = 1, shared_fragments = true;
    }
    int stages = shared_fragments ? 3 : 4;
    while (stages > 2 && int64_t(min_blocks) * dynamic_smem_bytes(problem.n, problem.k.sum(), block, stages) >
                             std::max<int64_t>(smem_limit(device), device.smem_per_sm > 0 ? device.smem_per_sm : 0))
      --stages;
    while (stages > 2 && dynamic_smem_bytes(problem.n, problem.k.sum(), block, stages) > smem_limit(device)) --stages;
    Params params = {{"grid", 0},
                     {"block", block},
                     {"min_blocks", min_blocks},
                     {"stages", stages},
                     {"transpose", device.cc_major >= 9 ? "stmatrix" : "shared-stores"},
                     {"update", "f16"},
                     {"fragments", shared_fragments ? "shared" : "registers"},
                     {"argmin", problem.k.sum() <= 32 ? "mask" : "packed"},
                     {"distance", problem.n <= 16 ? "f16x2" : "tf32x3"},
                     {"fetch", "ring"},
                     {"operands", "per-step"},
                     {"prefetch", kDefaultPrefetchAhead},
                     {"group_min", "float"},
                     {"layout", "aos"}};
    // fetch=registers at N=8 on Hopper: 0.633 → 0.605 ms at N=8 K=3..7 (H200, same call),
    // and 4 % slower at N=4 K=3..5, where the ring's L1 traffic was a smaller share.
    if (device.cc_major >= 9 && problem.n == 8 && !fetch_registers_refusal(problem.n, problem.k.sum(), params))
      params["fetch"] = "registers";
    // Prepared operands on Hopper wherever they apply and their copy (the points again, plus
    // ‖x‖²) fits beside the rest: H200, same call, against each shape's best
    // per-step form, N=8 K=3..7 0.582 → 0.537 ms, N=4 K=3..5 0.360 → 0.325 (against its ring),
    // N=8 K=16 0.122 → 0.109 (against its ring; ΣK = 16 has no free half tile for the per-step
    // fetch=registers).
    Params prepared = params;
    prepared["fetch"] = "registers";
    prepared["operands"] = "prepared";
    const double prepared_bytes = problem.data_bytes() + 4.0 * double(problem.m);
    if (device.cc_major >= 9 && !prepared_operands_refusal(problem.n, problem.k.sum(), prepared) &&
        !gpu::check_fits_in_memory(problem, device, double(problem.k.sum()) * problem.n * 8.0 + prepared_bytes))
      params = prepared;
    // L2 prefetch one step beyond the next: N=4 K=3..5 0.290 → 0.281 ms; at N=8 (K=3..7 and 16)
    // every distance was slower, 0.514 → 0.521 and 0.098 → 0.104 at 1 (H200, same call). (Loading
    // the words through the non-coherent path instead of __ldcg cost N=4 3 %.)
    if (params.at("operands") == "prepared" && problem.n <= 4) params["prefetch"] = 1;
    // N ≤ 4 with prepared operands needs ~94 registers with the lean step and the deferred
    // update: 640 × 1 (20 warps at 96) beat 384 × 2 (24 at 80, its cap): N=4 K=3..5 0.2510-0.2531
    // against 0.2564-0.2599 ms, three times in the same binaries; 576 × 1 ran 0.273-0.275 and
    // 704 × 1 (80 registers) 0.265-0.268 (H200). Not measured on other GPUs.
    if (params.at("operands") == "prepared" && problem.n <= 4 && tiles <= 2) params["block"] = 640, params["min_blocks"] = 1;
    // A block whose rings and scratch do not fit the per-block shared memory steps down to the
    // largest that does (from about N=51 with ΣK ≤ 8, where the default is 16 warps of
    // two-stage rings: N=64 needs 280 KB; VariantClaims.AcceptedShapesResolveTheirDefaultParameters).
    const ParamSpace space = param_space(problem, device);
    for (int smaller : {384, 256, 128}) {
      if (!space.check(params)) break;
      if (params.at("block").get<int>() > smaller) params["block"] = smaller, params["min_blocks"] = 1;
    }
    return params;
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    if (auto reason = can_implement(problem, device)) throw UnsupportedError("tensor-multik: " + *reason);
    return make_run(problem, data, params, device);
  }
};

MKBENCH_REGISTER_VARIANT(TensorMultiK);

}  // namespace

std::string compile_report(const Problem& problem, const Params& params, int cc_major, int cc_minor,
                           float point_scale) {
  return gpu::compile_only(compile_request(config_for(problem, params, cc_major, cc_minor, point_scale)));
}

gpu::RuntimeCompileRequest kernel_request(const Problem& problem, const Params& params, int cc_major, int cc_minor,
                                          float point_scale, bool store_labels, bool timeline) {
  KernelConfig config = config_for(problem, params, cc_major, cc_minor, point_scale);
  config.store_labels = store_labels && config.prepared_operands;
  config.timeline = timeline;
  return compile_request(config);
}

float update_point_scale(const Dataset& data) { return point_scale_for_update(data); }

}  // namespace mk::tensor_multik
