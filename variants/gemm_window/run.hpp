#pragma once
// A gemm-window run bound to one problem, data set and parameter point.
#include <memory>
#include <optional>
#include <string>

#include "core/device_info.hpp"
#include "datasets/dataset.hpp"
#include "variants/variant.hpp"
#include "variants/gemm_window/config.hpp"
#include "variants/gemm_window/translation.hpp"

namespace mk::gemm_window {

// Resolved parameters as the run uses them.
struct RunConfig {
  int tile_index = 0;
  UpdateMode update = UpdateMode::Global;
  bool table_resident = false;
  int stage_dims = 32;  // table=stream: dims of a centroid tile per ring stage (a multiple of 32)
  int64_t grid = 0;  // 0: every resident block of every SM
  bool staged_points = false;  // points=staged: the next point tile is copied to shared memory ahead
  bool deferred = false;  // arbitrate=deferred: ambiguous rows settled by a second kernel (update=sorted)
  int64_t deferred_columns = -1;  // the queue's column capacity; < 0: deferred_arbitration.hpp's default
  int64_t deferred_rows = -1;     // its row capacity (at most half the columns'); < 0: the default
  bool wide_gathers = false;      // update=sorted: 64-bit gather offsets whatever M·N (tests of that path)
};
RunConfig run_config(const Params& params);  // InputError for unknown values

// Chunks of 32 dims per ring stage: stage_dims / 32, at most a tile's chunks and dividing them.
int stage_chunks(int stage_dims, int chunks);
// The ring's stage as the kernel runs it: a wgmma tile's is the whole centroid tile whatever
// stage_dims says (one bulk copy, kernel.cuh), an mma.sync tile's stage_chunks.
int ring_stage_chunks(const TileConfig& tile, int stage_dims, int chunks);

// The shared-memory carve-up of one block of `config` for `problem` (a batch, problem.batch >
// 1: the one launch serving it), and its size.
SmemLayout block_smem_layout(const Problem& problem, const RunConfig& config);
int64_t block_smem_bytes(const Problem& problem, const RunConfig& config);

// Why `config` cannot serve the batch `problem` in one launch (B problems of one K, each m a
// multiple of the tile's rows, update global or sorted, ...), or nullopt.
std::optional<std::string> batch_refusal(const Problem& problem, const RunConfig& config);

// problem.batch > 1: one run serving the whole batch in one launch a kernel (batch_refusal
// must be nullopt; data holds the B problems' rows one problem after another).
std::unique_ptr<PreparedRun> make_run(const Problem& problem, const Dataset& data, const RunConfig& config,
                                      const DeviceInfo& device, const Translation& translation);

}  // namespace mk::gemm_window
