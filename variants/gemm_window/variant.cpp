// gemm-window: one FP16 tensor-core pass for the keys ‖c‖² − 2x·c of every point and centroid,
// exact FP64 arbitration of the near-ties the keys cannot settle, FP32-faithful labels. For
// the mainstream shapes of issue 32 (N up to 1024, K up to 8192, K ranges with ΣK ≤ 8192):
// tiles of points × centroid tiles through shared memory, the argmin in the epilogue.
// docs/gemm-window.md gives the design and what must be measured.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/gemm_window/config.hpp"
#include "variants/gemm_window/deferred_arbitration.hpp"
#include "variants/gemm_window/run.hpp"
#include "variants/gemm_window/sorted_update.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

// update=shared is the default up to this many FP32 sums (ΣK·N); see default_params.
constexpr int64_t kSharedSumsUpToFloats = 4096;

using namespace gemm_window;

int64_t smem_limit(const DeviceInfo& device) {
  return device.smem_per_block_optin > 0 ? device.smem_per_block_optin : 48 * 1024;
}

Params with(const Params& base, const char* key, const nlohmann::json& value) {
  Params out = base;
  out[key] = value;
  return out;
}

// wgmma tiles run on sm_90 (H100/H200) alone, and only from a build that compiled them.
std::optional<std::string> tile_refusal(const TileConfig& tile, const DeviceInfo& device) {
  if (!tile.wgmma) return std::nullopt;
  if (!wgmma_built()) return std::string("tile ") + tile.name + " needs a build with sm_90 among its CUDA architectures";
  if (device.cc_major != 9 || device.cc_minor != 0)
    return std::string("tile ") + tile.name + " needs wgmma (sm_90: H100/H200); this device is CC " +
           std::to_string(device.cc_major) + "." + std::to_string(device.cc_minor);
  return std::nullopt;
}

bool fits(const Problem& problem, const DeviceInfo& device, const Params& params) {
  return block_smem_bytes(problem, run_config(params)) <= smem_limit(device);
}

// The FP16 table and its norms, as prepare() allocates them for these parameters.
double table_bytes(const Problem& problem, const Params& params) {
  const Geometry geometry =
      make_geometry(problem.n, problem.k.kmin, problem.k.kmax, kTileConfigs[run_config(params).tile_index]);
  return double(geometry.total_columns) * (geometry.npad * 2.0 + 4.0);
}

class GemmWindow : public Variant {
 public:
  std::string name() const override { return "gemm-window"; }
  std::string description() const override {
    return "large N and K (N <= 1024, K up to 8192, K ranges): one FP16 tensor-core product per key (mma.sync "
           "m16n8k16, or wgmma on sm_90; points x centroid tiles through shared memory), the argmin in the epilogue, exact FP64 "
           "arbitration of the measured forward-error window (FP32-faithful labels); update by FP64 atomics, "
           "shared-memory sums or sorted labels";
  }
  bool runs_on_gpu() const override { return true; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    if (device.cc_major < 8) return "needs FP16 tensor cores with mma.sync m16n8k16 and cp.async (CC >= 8.0)";
    // The translation (the data mean) and the sorted update's buffers are set from all M points.
    if (problem.streamed) return kRefuseStreamed;
    if (problem.n > kMaxDims)
      return "N=" + std::to_string(problem.n) + " above " + std::to_string(kMaxDims) +
             " (the block's points stay resident in shared memory as FP16); use gemm-cublas";
    if (problem.k.count() > kMaxGroups)
      return "a range of " + std::to_string(problem.k.count()) + " Ks, more than " + std::to_string(kMaxGroups);
    if (problem.k.sum() > kMaxSlots)
      return "sum of K = " + std::to_string(problem.k.sum()) + " above " + std::to_string(kMaxSlots) +
             " (per-block counts live in shared memory)";
    if (problem.k.kmax > (1 << kMaxIndexBits))
      return "K=" + std::to_string(problem.k.kmax) + " needs more than " + std::to_string(kMaxIndexBits) +
             " index bits in a key";
    // Blocks ask for one tile past the last, so the int tile counter needs headroom over M / 64.
    if (problem.m >= (int64_t(1) << 36)) return "M of 2^36 or more (point tiles are counted in 32 bits)";
    bool any = false;
    for (const TileConfig& tile : kTileConfigs)
      any = any || (!tile.wgmma && fits(problem, device,
                        {{"tile", tile.name}, {"update", "global"}, {"table", "stream"}, {"stage", 32}, {"grid", 0}}));
    if (!any)
      return "no tile's resident points fit the " + std::to_string(smem_limit(device)) +
             " bytes of shared memory a block may use";
    return gpu::check_fits_in_memory(problem, device, table_bytes(problem, default_params(problem, device)));
  }

  DeviceFootprint device_footprint(const Problem& problem, const Params& params, const DeviceInfo& device,
                                   bool with_labels) const override {
    DeviceFootprint footprint = Variant::device_footprint(problem, params, device, with_labels);
    footprint.add("FP16 centroid table", table_bytes(problem, params));
    if (run_config(params).update == UpdateMode::Sorted)
      footprint.add("sorted update buffers", SortedUpdate::footprint_bytes(problem));
    if (run_config(params).deferred)
      footprint.add("deferred arbitration queue", DeferredArbitration::footprint_bytes(problem));
    return footprint;
  }

  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    ParamSpace space;
    std::vector<nlohmann::json> tiles;
    for (const TileConfig& tile : kTileConfigs) tiles.push_back(tile.name);
    space.axes.push_back({"tile", tiles,
                          "BMxBN/WMxWN: BM points a block (32 a warp row), BN centroid columns a tile, WN warps "
                          "splitting them; BMxBN/wgmma: one warpgroup's wgmma (sm_90 only)"});
    space.axes.push_back({"update",
                          {"global", "shared", "sorted"},
                          "global: FP64 atomics per point and dimension; shared: block FP32 sums of x - mean, flushed "
                          "every 4096 points; sorted: labels radix-sorted, one atomic per run of equal labels"});
    space.axes.push_back({"table",
                          {"stream", "resident"},
                          "stream: centroid chunks through a cp.async ring of 3 stages (wgmma: two whole centroid tiles, "
                          "a bulk copy each); resident: the whole FP16 table in shared memory once per block"});
    space.axes.push_back({"stage",
                          {32, 64, 128, 256},
                          "table=stream, mma.sync tiles: dims of a centroid tile per ring stage (one barrier a stage; "
                          "capped at the padded N); a wgmma tile's stage is its whole centroid tile"});
    space.axes.push_back({"points",
                          {"global", "staged"},
                          "global: the fill and the update read each point tile from global memory; staged: the next "
                          "tile's FP32 rows are copied (cp.async) into one of two shared-memory buffers while a tile "
                          "is worked on"});
    space.axes.push_back({"arbitrate",
                          {"auto", "block", "deferred"},
                          "block: a warp re-decides its ambiguous rows between the tile's barriers; deferred "
                          "(update=sorted): they go to a queue that a second kernel settles, a warp a row; auto: "
                          "deferred exactly where update=sorted"});
    const int sms = std::max(1, device.sm_count);
    space.axes.push_back({"grid", {0, int64_t(sms), int64_t(2) * sms, int64_t(4) * sms},
                          "blocks; 0 = every resident block of every SM (persistent grid)"});
    const int64_t limit = smem_limit(device);
    space.restrictions.push_back({"shared memory: points, table chunks, lists, counts (and sums) fit a block",
                                  [problem, limit](const Params& p) {
                                    return block_smem_bytes(problem, run_config(p)) <= limit;
                                  }});
    space.restrictions.push_back({"wgmma tiles: sm_90 (H100/H200) and a build with sm_90", [device](const Params& p) {
                                    return !tile_refusal(kTileConfigs[run_config(p).tile_index], device);
                                  }});
    const int chunks = padded_dims(problem.n) / kChunkDims;
    space.restrictions.push_back({"stage: its chunks of 32 dims divide the padded N's (else it runs as a smaller one)",
                                  [chunks](const Params& p) {
                                    const int64_t stage_chunks = p.at("stage").get<int64_t>() / kChunkDims;
                                    return chunks % stage_chunks == 0;
                                  }});
    const bool narrow_m = problem.m <= INT32_MAX;
    space.restrictions.push_back(
        {"update=sorted needs M < 2^31", [narrow_m](const Params& p) { return narrow_m || p.at("update") != "sorted"; }});
    space.restrictions.push_back({"arbitrate=deferred needs update=sorted (the labels are settled before the sort)",
                                  [](const Params& p) {
                                    return p.at("arbitrate") != "deferred" || p.at("update") == "sorted";
                                  }});
    space.repeats.push_back({"wgmma tiles: a stage is the whole centroid tile, so stage=32 stands for every stage",
                             [](const Params& p) {
                               return !kTileConfigs[run_config(p).tile_index].wgmma || p.at("stage").get<int64_t>() == 32;
                             }});
    space.repeats.push_back({"arbitrate=deferred with update=sorted, or block with another update: what auto runs",
                             [](const Params& p) {
                               const bool sorted = p.at("update") == "sorted";
                               return p.at("arbitrate") != (sorted ? "deferred" : "block");
                             }});
    space.restrictions.push_back({"no idle blocks: grid <= point tiles", [problem](const Params& p) {
                                    const int64_t grid = p.at("grid").get<int64_t>();
                                    const int bm = kTileConfigs[run_config(p).tile_index].bm;
                                    return grid == 0 || grid <= (problem.m + bm - 1) / bm;
                                  }});
    return space;
  }

  // Measured on an H200 where a measurement is cited (reports/results/nvidia-h200/
  // gemm-window-sweep.txt); the rest is reasoning, not yet measured:
  // - tile: groups of at most 16 centroids waste least with 16-column tiles, up to 64 with 64;
  //   otherwise 128 columns over 2 warp columns (64 accumulators a lane), and 64-point blocks
  //   where 128 points of FP16 rows would not leave room for the ring (N > 512) or where K is
  //   512 or more (128/1024/2M 6.08 ms with 64x128/2x2 against 8.58 with 128x128/4x2;
  //   64/256/4M 4.91 with 128x128/4x2 against 5.37; 128/100/1M 1.98 against 2.29). Above
  //   512 dims 64x256/2x4, eight warps in the one block an SM holds (768/1000/1M 15.98 ms
  //   against 64x128/2x2's 21.53 with four; at 256/4096/1M equal, at 128/1024/2M 5.62 against
  //   4.32, where 64x128/2x2 fits several blocks; H200, afe839a, ab/gemm-window-wide-tile.txt).
  //   Measured at K=1000 only: at small K its 256-column padding is unmeasured.
  // - update: block sums in shared memory where ΣK·N ≤ 4096 floats, where the FP64 atomics
  //   serialise on few addresses (32/64/16M 4.28 ms against 5.16 with global); the shared
  //   FP32 atomics are a CAS loop on sm_90 that costs more once the REDs spread, so global
  //   up to 64 KiB of sums (128/100/1M 1.64 against 1.96 shared and 2.21 sorted; 64/256/4M
  //   3.75 against 4.45 shared; H200, b306999 and b809491, reports/results/nvidia-h200/ab/
  //   gemm-window-update.txt). Beyond that sorted labels from N = 64 (one atomic per run
  //   instead of per point: M·N atomics would be 268M at N=128 M=2M; not measured against
  //   global), global below.
  // - table: resident when the whole FP16 table is at most 32 KiB (no barrier per chunk).
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    const int widest = problem.k.kmax;
    std::vector<std::string> order;
    if (widest <= 16) order = {"128x16/4x1", "128x64/4x1", "128x128/4x2", "64x128/2x2"};
    else if (widest <= 64) order = {"128x64/4x1", "128x128/4x2", "64x128/2x2"};
    else if (padded_dims(problem.n) > 512) order = {"64x256/2x4", "64x128/2x2", "128x128/4x2"};
    else if (widest >= 512 && padded_dims(problem.n) <= 256)
      // wgmma where it runs: 128/1024/2M 4.017 ms against 64x128/2x2's 4.294 at the same 32-dim
      // stages (H200, e046de1, one call; 4.16-4.20 in three other calls at its default 64), the
      // batch of 32 × 64K × 128 4.970 against 5.153 (5.07-5.41 elsewhere);
      // ab/gemm-window-wgmma.txt. At 256 dims, with the bulk-copy ring (d745b69), 256/4096/1M
      // 9.38-9.50 ms against 64x128/2x2's 9.98-10.04, three runs each, alternating (H200,
      // cda2be8, ab/gemm-window-wgmma-256.txt; its 13.7-16.3 against 11.8-11.9 at e046de1 was
      // with the cp.async ring of 32-dim stages). Between 128 and 256 dims only 256 is measured.
      order = {"128x64/wgmma", "64x128/2x2", "128x128/4x2"};
    else if (widest >= 512) order = {"64x128/2x2", "128x128/4x2"};
    else order = {"128x128/4x2", "64x128/2x2"};
    Params params{{"tile", order.front()}, {"update", "global"}, {"table", "stream"}, {"stage", 32}, {"grid", 0},
                  {"points", "global"}, {"arbitrate", "auto"}};
    for (const std::string& tile : order) {
      params["tile"] = tile;
      if (!tile_refusal(*find_tile(tile), device) && fits(problem, device, params)) break;
    }
    const int64_t sums_floats = int64_t(problem.k.sum()) * problem.n;
    if (sums_floats <= kSharedSumsUpToFloats && fits(problem, device, with(params, "update", "shared")))
      params["update"] = "shared";
    else if (sums_floats * 4 > 64 * 1024 && problem.n >= 64 && problem.m <= INT32_MAX)
      params["update"] = "sorted";
    // arbitrate=auto: deferred wherever the update is sorted: the block's warps no longer wait at
    // the barrier for the one that arbitrates (768/1000/1M 21.4 ms against 37.7, 256/4096/1M 12.8
    // against 15.0, 128/1024/2M 4.29 against 4.40; H200, 7d2187f, ab/gemm-window-deferred.txt).
    // stage: 64 dims a ring stage where two chunks divide a tile's and it still fits with the
    // update chosen above (a larger ring must not cost the shared sums; 128/1024/2M 5.52 ms
    // against 5.56 with 32; 256/4096/1M 17.8 against 18.5; 64/256/4M 4.87 either way).
    const Geometry geometry = make_geometry(problem.n, problem.k.kmin, problem.k.kmax,
                                            kTileConfigs[run_config(params).tile_index]);
    // The wgmma tile's stage is always a whole centroid tile (kernel.cuh), so it keeps 32.
    const TileConfig& chosen = kTileConfigs[run_config(params).tile_index];
    const Params wider = with(params, "stage", 64);
    if (!chosen.wgmma && geometry.chunks % 2 == 0 && fits(problem, device, wider)) params["stage"] = 64;
    const int64_t table = int64_t(geometry.total_columns) * geometry.npad * 2;
    if (table <= 32 * 1024 && fits(problem, device, with(params, "table", "resident"))) params["table"] = "resident";
    // points: staged with a resident table up to 64 dims where both buffers fit without
    // costing the tile its blocks per SM (the runtime keeps 1 KiB of an SM's shared memory per
    // block): both rows it won were resident at 32 and 64 dims (32/64/16M 4.28 against
    // 4.55 ms, 64/256/4M 4.43 against 4.79, H200, 2340e29); at 128/100/1M, once its update
    // no longer took the shared memory, staged ran 1.730 ms against global's 1.636 (two calls:
    // 909355b and b809491, ab/gemm-window-update.txt). With a streamed table its copy group
    // also bounds the ring's waits, unmeasured.
    const TileConfig& tile = kTileConfigs[run_config(params).tile_index];
    const Params staged = with(params, "points", "staged");
    if (params.at("table") == "resident" && padded_dims(problem.n) <= 64 && fits(problem, device, staged) &&
        (device.smem_per_sm <= 0 || (block_smem_bytes(problem, run_config(staged)) + 1024) * tile.min_blocks <= device.smem_per_sm))
      params["points"] = "staged";
    return params;
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    if (auto reason = can_implement(problem, device)) throw UnsupportedError("gemm-window: " + *reason);
    const RunConfig config = run_config(params);
    if (auto refusal = tile_refusal(kTileConfigs[config.tile_index], device))
      throw UnsupportedError("gemm-window: " + *refusal);
    if (block_smem_bytes(problem, config) > smem_limit(device))
      throw UnsupportedError("gemm-window: " + params_label(params) + " needs more shared memory than a block may use");
    const Translation translation = translation_for(data);  // refuses data beyond FP32 distances, before GPU work
    return make_run(problem, data, config, device, translation);
  }

  // A batch in one launch where batch_refusal allows (one K, each m a multiple of the tile's
  // rows, ...) and its blocks fit; else null, and each problem gets its own run.
  std::unique_ptr<PreparedRun> prepare_batch(const Problem& problem, const Dataset& data, const Params& params,
                                             const DeviceInfo& device) const override {
    const Problem one = [&] { Problem p = problem; p.batch = 1; return p; }();
    if (auto reason = can_implement(one, device)) throw UnsupportedError("gemm-window: " + *reason);
    const RunConfig config = run_config(params);
    if (auto refusal = tile_refusal(kTileConfigs[config.tile_index], device))
      throw UnsupportedError("gemm-window: " + *refusal);
    std::optional<std::string> refusal = batch_refusal(problem, config);
    if (!refusal && block_smem_bytes(problem, config) > smem_limit(device))
      refusal = "blocks with more shared memory than a block may use";
    if (refusal) {
      std::fprintf(stderr, "gemm-window: the batch runs a prepared run a problem: one launch cannot take %s\n",
                   refusal->c_str());
      return nullptr;
    }
    std::fprintf(stderr, "gemm-window: %d problems in one launch a kernel\n", problem.batch);
    const Translation translation = translation_for(data);
    return make_run(problem, data, config, device, translation);
  }
};

MKBENCH_REGISTER_VARIANT(GemmWindow);

}  // namespace
}  // namespace mk
