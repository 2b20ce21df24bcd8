#pragma once
// Exact out-of-core Lloyd (issue 34; docs/out-of-core.md). A ChunkedRun is a PreparedRun over
// all M points whose variant runs each see one chunk at a time: on a GPU, two runs of the
// variant (chunk slots) on their own streams, so the copy of one chunk overlaps the
// accumulation of the other; on the CPU, one. After every chunk, the slot run's FP64 sums,
// counts and inertia are added into that slot's running totals (a small kernel on the GPU);
// after the last, the slots' totals are added in a fixed order and divided on the host
// exactly as in core (float(sum · (1/count))). The variants need nothing beyond taking a new
// point count between steps (PreparedRun::points_slot, set_point_count) and refusing
// Problem::streamed where they derive state from the points when they prepare.
//
// Because it is a PreparedRun, `run` and the suites drive it as they drive any run:
// iterate() is one out-of-core iteration (every chunk), and accumulate/accumulators/update
// split it for the applications (the totals are on the host: AccumulatorRefs::on_device is
// false).
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "datasets/dataset.hpp"
#include "variants/variant.hpp"

namespace mk {

// A GPU out-of-core run keeps two chunks in flight (one copies while the other computes).
inline constexpr int kGpuChunkSlots = 2;

// Where an out-of-core run's points come from: m × n row-major float32 that outlives the run,
// in host memory (a generated or loaded Dataset's values) or in a memory-mapped .npy file
// (load_npy_mapped), whose pages the kernel reads in as the chunks are copied.
struct ChunkSource {
  int64_t m = 0;
  int n = 0;
  const float* rows = nullptr;
  std::string description;  // "host array" | "memory-mapped file"
  // A mapped file is not page-locked for direct DMA (that would pin the whole file in RAM):
  // its chunks are staged through the pinned buffers.
  bool mapped_file = false;
};
ChunkSource chunk_source_of(const Dataset& data);

struct ChunkedRunInfo {
  int64_t chunk_points = 0;
  int64_t chunks = 0;
  int slots = 0;
  // How chunks reach the variant's buffer: "registered" (the host rows page-locked once with
  // cudaHostRegister, each chunk one DMA), "staged" (registration refused: each chunk copied
  // by all cores into one of two pinned buffers, then DMA), "host" (a CPU variant: memcpy).
  std::string transfer;
  std::string source;
  nlohmann::json to_json() const;
};

class ChunkedRun : public PreparedRun {
 public:
  virtual ChunkedRunInfo info() const = 0;
};

// The problem each chunk slot's run is prepared on: m = chunk_points (at most M), streamed.
Problem chunk_problem(const Problem& problem, int64_t chunk_points);

// `params` are resolved for chunk_problem(problem, chunk_points). UnsupportedError when the
// variant refuses streamed chunks (its can_implement on the chunk problem); InputError for a
// chunk size below 1 or a source whose shape is not the problem's.
std::unique_ptr<ChunkedRun> prepare_chunked(const Variant& variant, const Problem& problem, const ChunkSource& source,
                                            int64_t chunk_points, const Params& params, const DeviceInfo& device);

}  // namespace mk
