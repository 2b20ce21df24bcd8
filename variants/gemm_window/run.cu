// gemm-window's prepared run: device buffers for the FP16 table, the launch geometry, and one
// iteration = table kernels, the main kernel, the sorted update if chosen, the division.
#include "variants/gemm_window/run.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "core/errors.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/gemm_window/deferred_arbitration.hpp"
#include "variants/gemm_window/kernel_args.hpp"
#include "variants/gemm_window/sorted_update.hpp"
#include "variants/gemm_window/table.hpp"

namespace mk::gemm_window {

RunConfig run_config(const Params& params) {
  RunConfig config;
  const std::string tile = params.at("tile").get<std::string>();
  const TileConfig* found = find_tile(tile);
  if (!found) throw InputError("gemm-window: unknown tile '" + tile + "'");
  config.tile_index = int(found - kTileConfigs);
  config.update = parse_update(params.at("update").get<std::string>());
  const std::string table = params.at("table").get<std::string>();
  if (table != "stream" && table != "resident")
    throw InputError("gemm-window: unknown table '" + table + "' (expected stream or resident)");
  config.table_resident = table == "resident";
  config.grid = params.at("grid").get<int64_t>();
  // A params object without a stage (run_config's direct callers; resolve_params fills in
  // the default) runs one chunk a stage.
  config.stage_dims = params.contains("stage") ? int(params.at("stage").get<int64_t>()) : kChunkDims;
  // Likewise a params object without points reads them from global memory.
  const std::string points = params.contains("points") ? params.at("points").get<std::string>() : "global";
  if (points != "global" && points != "staged")
    throw InputError("gemm-window: unknown points '" + points + "' (expected global or staged)");
  config.staged_points = points == "staged";
  // Likewise without arbitrate: auto, deferred exactly where the update is sorted (the labels
  // are read only after the kernel there), so overriding the update alone stays valid.
  const std::string arbitrate = params.contains("arbitrate") ? params.at("arbitrate").get<std::string>() : "auto";
  if (arbitrate != "auto" && arbitrate != "block" && arbitrate != "deferred")
    throw InputError("gemm-window: unknown arbitrate '" + arbitrate + "' (expected auto, block or deferred)");
  config.deferred = arbitrate == "deferred" || (arbitrate == "auto" && config.update == UpdateMode::Sorted);
  if (config.stage_dims < kChunkDims || config.stage_dims % kChunkDims != 0)
    throw InputError("gemm-window: stage must be a positive multiple of " + std::to_string(kChunkDims) + ", got " +
                     std::to_string(config.stage_dims));
  return config;
}

// The param space only admits stages whose chunks divide the tile's; a direct caller's other
// value is rounded down to a divisor here, so the kernel's ring never straddles a tile.
int stage_chunks(int stage_dims, int chunks) {
  int per_stage = std::min(stage_dims / kChunkDims, chunks);
  while (chunks % per_stage != 0) --per_stage;
  return per_stage;
}

int ring_stage_chunks(const TileConfig& tile, int stage_dims, int chunks) {
  return tile.wgmma ? chunks : stage_chunks(stage_dims, chunks);
}

namespace {

// A batch in one launch (problem.batch > 1) sweeps its B groups (make_batch_geometry); with
// update=sorted its blocks count nothing in shared memory, so B·K slots take no room there.
Geometry run_geometry(const Problem& problem, const TileConfig& tile) {
  return problem.batch > 1 ? make_batch_geometry(problem.n, problem.k.kmin, problem.batch, tile)
                           : make_geometry(problem.n, problem.k.kmin, problem.k.kmax, tile);
}

}  // namespace

SmemLayout block_smem_layout(const Problem& problem, const RunConfig& config) {
  const TileConfig& tile = kTileConfigs[config.tile_index];
  const Geometry geometry = run_geometry(problem, tile);
  const int table_chunks = config.table_resident
                               ? geometry.total_tiles * geometry.chunks
                               : ring_stages(tile.wgmma) * ring_stage_chunks(tile, config.stage_dims, geometry.chunks);
  // update=sorted counts in sum_label_runs, so its blocks count nothing in shared memory.
  const int counted_slots = config.update == UpdateMode::Sorted ? 0 : geometry.slots;
  return smem_layout(tile, geometry.npad, table_chunks, int(geometry.groups.size()), counted_slots, problem.n,
                     config.update == UpdateMode::Shared, config.staged_points);
}

std::optional<std::string> batch_refusal(const Problem& problem, const RunConfig& config) {
  const TileConfig& tile = kTileConfigs[config.tile_index];
  const int64_t b = problem.batch;
  if (b <= 1) return "not a batch";
  if (problem.k.count() != 1) return "a K range (one K a problem only)";
  if (b > kMaxGroups) return "more than " + std::to_string(kMaxGroups) + " problems";
  if (problem.m % tile.bm != 0)
    return "points a problem (" + std::to_string(problem.m) + ") not a multiple of the tile's " + std::to_string(tile.bm);
  if (config.update == UpdateMode::Shared) return "update=shared";
  if (config.update == UpdateMode::Global && b * problem.k.kmin > kMaxSlots)
    return "update=global with more than " + std::to_string(kMaxSlots) + " slots";
  if (problem.total_points() > INT32_MAX) return "2^31 points or more in all";
  const Geometry geometry = make_geometry(problem.n, problem.k.kmin, problem.k.kmin, tile);
  if (!config.table_resident &&
      geometry.groups[0].tiles * geometry.chunks / ring_stage_chunks(tile, config.stage_dims, geometry.chunks) < 2)
    return std::string("a problem's table of one ring stage (") +
           (tile.wgmma ? "a wgmma tile's stage is a whole centroid tile; " : "") +
           "the fetches would run two point tiles ahead)";
  return std::nullopt;
}

int64_t block_smem_bytes(const Problem& problem, const RunConfig& config) {
  return block_smem_layout(problem, config).total;
}

namespace {

// A batch's state: one problem of all B·m points and one K of B·K slots (problem b's slots
// b·K.., the batch's packing), so LloydState's buffers, upload and division serve it as they
// are; the inertia and the read-back are split by problem here.
Problem flat_problem(const Problem& problem) {
  if (problem.batch <= 1) return problem;
  Problem flat = problem;
  flat.m = problem.total_points();
  flat.k = KRange{problem.k.kmin * problem.batch, problem.k.kmin * problem.batch};
  flat.batch = 1;
  return flat;
}

class GemmWindowRun : public gpu::GpuRun {
 public:
  GemmWindowRun(const Problem& problem, const Dataset& data, const RunConfig& config, const DeviceInfo& device,
                const Translation& translation)
      : GpuRun(flat_problem(problem), data, Layout::AoS),
        config_(config),
        tile_(kTileConfigs[config.tile_index]),
        geometry_(run_geometry(problem, tile_)),
        batch_(problem.batch),
        batch_k_(problem.k.kmin),
        batch_m_(problem.m),
        center_host_(translation.center),
        largest_point_norm2_(translation.largest_norm2) {
    const cudaStream_t stream = state_.stream();
    if (batch_ > 1) batch_inertia_.allocate(size_t(batch_), "gemm-window batch inertia");
    center_.allocate(size_t(problem.n), "gemm-window center");
    groups_.allocate(geometry_.groups.size(), "gemm-window groups");
    table_.allocate(size_t(geometry_.total_columns) * geometry_.npad, "gemm-window FP16 centroid table");
    norms_.allocate(size_t(geometry_.total_columns), "gemm-window centroid norms");
    gpu::check(cudaMemcpyAsync(center_.get(), center_host_.data(), center_host_.size() * sizeof(float),
                               cudaMemcpyHostToDevice, stream),
               "gemm-window center upload");
    gpu::check(cudaMemcpyAsync(groups_.get(), geometry_.groups.data(), geometry_.groups.size() * sizeof(GroupInfo),
                               cudaMemcpyHostToDevice, stream),
               "gemm-window groups upload");
    const Problem& flat = state_.problem();
    if (config_.update == UpdateMode::Sorted) sorted_ = std::make_unique<SortedUpdate>(flat, stream, config_.wide_gathers);
    if (config_.deferred) deferred_ = std::make_unique<DeferredArbitration>(flat, config_.deferred_columns, config_.deferred_rows);
    sm_count_ = device.sm_count;

    // Staged copies move 16-byte pieces from each tile's first row: a points view that does
    // not start on 16 bytes (a problem of a batch, a chunk) reads global memory, and its blocks
    // carry no staging buffers.
    if (reinterpret_cast<uintptr_t>(state_.points().data) % 16 != 0) config_.staged_points = false;
    smem_ = block_smem_bytes(problem, config_);
    smem_layout_ = block_smem_layout(problem, config_);
    const KernelHandle kernel = kernel_for(config_.tile_index, batch_ > 1);
    gpu::check(cudaFuncSetAttribute(kernel.function, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_)),
               "gemm-window shared memory limit");
    int resident = 0;
    gpu::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel.function, kernel.threads, size_t(smem_)),
               "gemm-window occupancy");
    if (resident < 1)
      throw UnsupportedError(std::string("gemm-window: tile ") + tile_.name +
                             " cannot be resident on this device (registers or " + std::to_string(smem_) +
                             " bytes of shared memory)");
    point_tiles_ = (flat.m + tile_.bm - 1) / tile_.bm;
    const int64_t persistent = int64_t(resident) * std::max(1, device.sm_count);
    grid_ = std::max<int64_t>(1, std::min(config_.grid == 0 ? persistent : config_.grid, point_tiles_));
    if (std::getenv("MKBENCH_GEMM_WINDOW_STATS")) {
      stats_.allocate(5, "gemm-window stats");
      gpu::check(cudaMemsetAsync(stats_.get(), 0, stats_.bytes(), stream), "gemm-window stats");
    }
    gpu::check(cudaStreamSynchronize(stream), "gemm-window setup");
  }

  // MKBENCH_GEMM_WINDOW_STATS=1: how often the exact paths ran, which sets what the window costs.
  ~GemmWindowRun() override {
    if (!stats_.get()) return;
    unsigned long long stats[5] = {0, 0, 0, 0, 0};
    if (cudaStreamSynchronize(state_.stream()) != cudaSuccess ||
        cudaMemcpy(stats, stats_.get(), sizeof stats, cudaMemcpyDeviceToHost) != cudaSuccess)
      return;
    const double rows = stats[0] ? double(stats[0]) : 1.0;
    std::fprintf(stderr,
                 "gemm-window stats: %llu point-group steps, %.3f%% arbitrated exactly, %.4f slice scans and %.3f "
                 "exact distances per point, %llu rows arbitrated, %llu of them deferred\n",
                 stats[0], 100.0 * double(stats[1]) / rows, double(stats[2]) / rows, double(stats[3]) / rows, stats[1],
                 stats[4]);
  }

  void set_centroids(const std::vector<float>& packed) override {
    check_centroid_range(packed, state_.problem().n, center_host_);
    GpuRun::set_centroids(packed);
  }

  // A batch: problem after problem, its K's centroids, counts, inertia and labels.
  IterationResult read_back() override {
    if (batch_ <= 1) return GpuRun::read_back();
    IterationResult flat = GpuRun::read_back();
    std::vector<double> inertia(static_cast<size_t>(batch_), 0.0);
    gpu::check(cudaMemcpy(inertia.data(), batch_inertia_.get(), inertia.size() * sizeof(double), cudaMemcpyDeviceToHost),
               "gemm-window batch inertia");
    const KResult& all = flat.per_k.at(0);
    const size_t values = size_t(batch_k_) * size_t(state_.problem().n);
    IterationResult result;
    for (int b = 0; b < batch_; ++b) {
      KResult r;
      r.k = batch_k_;
      r.centroids.assign(all.centroids.begin() + std::ptrdiff_t(values * b),
                         all.centroids.begin() + std::ptrdiff_t(values * (b + 1)));
      r.counts.assign(all.counts.begin() + std::ptrdiff_t(batch_k_) * b,
                      all.counts.begin() + std::ptrdiff_t(batch_k_) * (b + 1));
      r.inertia = inertia[size_t(b)];
      if (!all.labels.empty())
        r.labels.assign(all.labels.begin() + std::ptrdiff_t(batch_m_ * b),
                        all.labels.begin() + std::ptrdiff_t(batch_m_ * (b + 1)));
      result.per_k.push_back(std::move(r));
    }
    return result;
  }

  // The split step's accumulators are the state's, one inertia for the flat problem: a batch
  // in one launch runs whole iterations only.
  void accumulate(const AccumulateOptions& options) override {
    refuse_split_in_batch();
    GpuRun::accumulate(options);
  }
  AccumulatorRefs accumulators() override {
    refuse_split_in_batch();
    return GpuRun::accumulators();
  }
  StepSummary update(const UpdateOptions& options) override {
    refuse_split_in_batch();
    return GpuRun::update(options);
  }

  void iterate(bool store_labels) override {
    const Problem& problem = state_.problem();
    const cudaStream_t stream = state_.stream();
    state_.zero_accumulators();
    gpu::AccumulatorView acc = state_.accumulators(store_labels);
    if (batch_ > 1) {
      gpu::check(cudaMemsetAsync(batch_inertia_.get(), 0, batch_inertia_.bytes(), stream), "gemm-window batch inertia");
      acc.inertia = batch_inertia_.get();
    }
    gpu::check(cudaMemsetAsync(scalars_.get(), 0, scalars_.bytes(), stream), "gemm-window table scalars");
    gpu::check(cudaMemsetAsync(counter_.get(), 0, counter_.bytes(), stream), "gemm-window tile counter");

    TableArgs table;
    table.centroids = state_.centroids();
    table.center = center_.get();
    table.groups = groups_.get();
    table.group_count = int(geometry_.groups.size());
    table.n = problem.n;
    table.npad = geometry_.npad;
    table.bn = tile_.bn;
    table.total_columns = geometry_.total_columns;
    table.slots = geometry_.slots;
    table.largest_point_norm2 = largest_point_norm2_;
    table.table = table_.get();
    table.norms = norms_.get();
    table.scalars = scalars_.get();
    build_table(table, stream);

    KernelArgs args{};
    args.points = state_.points().data;
    // Checked again here in case the view moved since (the constructor sized the blocks).
    args.staged_points = config_.staged_points && reinterpret_cast<uintptr_t>(args.points) % 16 == 0;
    args.center = center_.get();
    args.m = problem.m;
    args.n = problem.n;
    args.npad = geometry_.npad;
    args.centroids = state_.centroids();
    args.table = table_.get();
    args.norms = norms_.get();
    args.table_scalars = scalars_.get();
    args.largest_point_norm2 = largest_point_norm2_;
    args.groups = groups_.get();
    args.group_count = int(geometry_.groups.size());
    args.total_tiles = geometry_.total_tiles;
    args.chunks = geometry_.chunks;
    args.stage_chunks = ring_stage_chunks(tile_, config_.stage_dims, geometry_.chunks);
    args.slots = geometry_.slots;
    args.index_mask = (1u << geometry_.index_bits) - 1u;
    args.model = key_error_model(geometry_.npad, geometry_.index_bits);
    args.table_resident = config_.table_resident;
    args.smem = smem_layout_;
    args.update = config_.update;
    args.flush_tiles = std::max(1, kMaxPointsPerFlush / tile_.bm);
    args.sums = acc.sums;
    args.counts = acc.counts;
    args.inertia = acc.inertia;
    args.labels = acc.labels;
    args.sort_labels = sorted_ ? sorted_->labels() : nullptr;
    args.tile_counter = counter_.get();
    args.point_tiles = point_tiles_;
    args.batch_tiles = batch_ > 1 ? batch_m_ / tile_.bm : 0;
    args.stats = stats_.get();
    if (deferred_) {
      deferred_->reset(stream);
      args.deferred = deferred_->queue();
    }
    launch(config_.tile_index, int(grid_), smem_, stream, args);
    if (deferred_)
      deferred_->resolve(args.points, args.centroids, groups_.get(), problem.n, problem.m, batch_ > 1,
                         args.sort_labels, args.labels, sm_count_, stream);
    if (sorted_) sorted_->accumulate(state_.points(), state_.centroids(), problem.k, acc, stream, batch_ > 1 ? batch_k_ : 0);
    state_.finalize();
  }

 private:
  void refuse_split_in_batch() const {
    if (batch_ > 1) throw UnsupportedError("gemm-window: a batch in one launch runs whole iterations only");
  }

  RunConfig config_;
  TileConfig tile_;
  Geometry geometry_;
  int batch_ = 1, batch_k_ = 0;  // a batch in one launch: B problems of one K
  int64_t batch_m_ = 0;          // and m points each
  gpu::DeviceBuffer<double> batch_inertia_;  // one a problem
  SmemLayout smem_layout_{};
  std::vector<float> center_host_;
  float largest_point_norm2_;
  int64_t smem_ = 0, point_tiles_ = 0, grid_ = 1;
  gpu::DeviceBuffer<float> center_, norms_;
  gpu::DeviceBuffer<GroupInfo> groups_;
  gpu::DeviceBuffer<__half> table_;
  gpu::DeviceBuffer<unsigned> scalars_{2, "gemm-window table scalars"};
  gpu::DeviceBuffer<unsigned> counter_{1, "gemm-window tile counter"};
  gpu::DeviceBuffer<unsigned long long> stats_;
  std::unique_ptr<SortedUpdate> sorted_;
  std::unique_ptr<DeferredArbitration> deferred_;
  int sm_count_ = 1;
};

}  // namespace

std::unique_ptr<PreparedRun> make_run(const Problem& problem, const Dataset& data, const RunConfig& config,
                                      const DeviceInfo& device, const Translation& translation) {
  if (config.deferred && config.update != UpdateMode::Sorted)
    throw InputError("gemm-window: arbitrate=deferred needs update=sorted (the deferred labels must be settled "
                     "before the update reads them)");
  if (problem.batch > 1) {
    if (data.m != problem.total_points())
      throw InputError("a batch of " + std::to_string(problem.batch) + " problems of " + std::to_string(problem.m) +
                       " points needs " + std::to_string(problem.total_points()) + " rows; the data has " +
                       std::to_string(data.m));
    if (auto refusal = batch_refusal(problem, config))
      throw UnsupportedError("gemm-window: a batch in one launch cannot take " + *refusal);
  }
  return std::make_unique<GemmWindowRun>(problem, data, config, device, translation);
}

}  // namespace mk::gemm_window
