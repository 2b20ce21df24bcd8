#pragma once
// Memory planning before any allocation (docs/memory-planning.md). Every measuring command
// asks the planner before it generates or loads points and before a variant prepares: the
// plan adds up what the host and the GPU will hold, compares that with the host's limit
// (core/host_memory.hpp, or --host-memory) and the GPU's free memory, and either runs in
// core, or streams the points through in chunks (out-of-core, docs/out-of-core.md), or
// refuses with the sizes and the way out. Refusing instead of trying is what keeps a 256 GiB
// request on a 128 GiB host from ending in the OOM killer (issue 38).
#include <cstdint>
#include <optional>
#include <string>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "datasets/dataset.hpp"
#include "variants/chunked/chunked_run.hpp"
#include "variants/variant.hpp"

namespace mk {

// Where a run's points come from and what holding them costs the host.
struct DataSource {
  std::string spec;
  int64_t m = 0;  // the points' shape; 0 when a file's shape is only known once it is parsed (CSV)
  int n = 0;
  int64_t host_bytes = 0;  // peak host bytes while the points are made or loaded, and then held
  std::string description;  // "uniform 1G × 64 float32", "npy /data/x.npy (1.0 GiB file)"
  // A C-order .npy: out of core, its chunks come straight from the memory-mapped file
  // (load_npy_mapped), so an out-of-core plan counts nothing for the points on the host; in
  // core still needs them copied (host_bytes).
  bool mappable = false;
  // A generator: out of core, each chunk is made where it is needed (Dataset::on_demand), so an
  // out-of-core plan counts nothing for the points on the host, unless --verify's FP64
  // reference needs them all at hand; in core they are made whole (host_bytes).
  bool generable = false;
};

// Generators: M·N floats. .npy: the array (read from the header; twice for Fortran order,
// which is converted to row-major). CSV: the text, read whole, plus at most one float per two
// bytes of it. A file that cannot be found counts nothing here: its loader reports it.
DataSource describe_data_source(const std::string& spec, int64_t m, int n);
// The same source for a command that makes or loads the points whole before it measures (the
// tuner, verify-matrix): neither mappable nor generable, so out of core counts them too.
DataSource held_whole(DataSource source);
// Points already loaded (a measurement's plan: the data is loaded, the variant is not). Points
// left in a mapped file are mappable, and points made on demand generable; both count their full
// size for an in-core plan.
DataSource describe_loaded_data(const Dataset& data);

struct MemoryLimits {
  int64_t host_limit_bytes = 0;  // 0 = unknown, not checked
  std::string host_source;       // "cgroup v2 memory.max of ...", "MemTotal of /proc/meminfo", "--host-memory"
  bool gpu = false;              // a GPU is planned for
  int64_t gpu_free_bytes = 0;
  int64_t gpu_total_bytes = 0;
  std::string gpu_name;
  std::string gpu_source;  // "cudaMemGetInfo" or "MKBENCH_FAKE_GPU_FREE_BYTES"
};

// The host's limit and, when `device` is a GPU, its free memory now (cudaMemGetInfo; the
// environment variable MKBENCH_FAKE_GPU_FREE_BYTES=SIZE replaces the reading, for tests).
MemoryLimits current_memory_limits(const DeviceInfo& device);
// --host-memory SIZE: replaces the host reading for the rest of the process (nullopt: read it).
void set_host_memory_override(std::optional<int64_t> bytes);

// Room left to what the plan does not count: the binary and its libraries, the CUDA
// context's host mappings, the allocator's slack, the page cache that loading dirties.
inline constexpr double kHostUsableFraction = 0.9;
// Left free on the GPU for what allocates after the plan: cuBLAS and NVRTC module images,
// the L2 flush buffer (2 × L2, 100 MiB on an H200), CUDA events and streams.
inline constexpr int64_t kGpuReserveBytes = int64_t(256) << 20;

// One measurement: a variant on a problem (variant null: the data alone).
struct RowWork {
  const Variant* variant = nullptr;
  Problem problem;
  Params params = Params::object();  // overrides; resolved against the variant's defaults here
  bool labels = false;               // labels materialised (verification, --store-labels)
  bool verify = false;               // the FP64 reference runs on the host
  // --chunk-points C: out of core with chunks of C points even where the data would fit;
  // --out-of-core: out of core with the largest chunks that fit. Neither: in core when it
  // fits, else out of core with the largest chunks that fit.
  int64_t chunk_points = 0;
  bool out_of_core = false;
};

// Out-of-core chunks are at most this many bytes of points: past it the copies are long
// enough to hide every per-chunk launch (a chunk of 1 GiB takes ~19 ms at 55 GB/s), and a
// chunk slot's device buffers stay modest.
inline constexpr int64_t kMaxChunkBytes = int64_t(1) << 30;
// Below this many points a chunk's launches and synchronisation would cost more than its
// copy: the plan refuses rather than run chunks this small.
inline constexpr int64_t kMinChunkPoints = 4096;

enum class PlanMode { InCore, OutOfCore, Refused };
const char* to_string(PlanMode mode);

struct MemoryPlan {
  PlanMode mode = PlanMode::InCore;
  bool host_exceeded = false;
  bool gpu_exceeded = false;
  DeviceFootprint host;  // what the host holds: the points, the reference, a CPU variant's buffers
  DeviceFootprint gpu;   // what the GPU holds: the variant's device_footprint
  int64_t host_usable = 0;  // 0 when not checked
  int64_t gpu_usable = 0;   // 0 when no GPU is planned
  std::string message;      // for a refusal: the sizes, the limits and the way out
  int64_t chunk_points = 0;  // out-of-core: points per chunk (the last may be shorter)
  int64_t chunks = 0;        // out-of-core: how many

  bool in_core() const { return mode == PlanMode::InCore; }
  bool out_of_core() const { return mode == PlanMode::OutOfCore; }
  bool runs() const { return mode != PlanMode::Refused; }
  std::string summary() const;  // "in core" | "out of core: 32M points in 8 chunks of 4M"
  // Nothing when the plan runs (in core or out of core); InputError (exit 2) when the host
  // cannot hold it, else UnsupportedError (exit 3, the code of every refusal made before any
  // work).
  void enforce() const;
};

// In core when everything fits (and out of core is not asked for); else out of core when
// the variant can take streamed chunks (Problem::streamed) and two chunk runs fit the GPU
// (one on a CPU variant, whose "device" is the host), with the largest chunks that do, up to
// kMaxChunkBytes; else refused, with the sizes and the way out. The points themselves stay
// whole in host memory either way (they are streamed from there), except a mappable file's,
// which out of core are streamed from the mapped file, and a generable source's without
// --verify, whose chunks are generated where they are needed; neither is counted.
MemoryPlan plan_memory(const DataSource& data, const RowWork& work, const DeviceInfo& device,
                       const MemoryLimits& limits);

// Whether the points of a run whose rows planned `plans` on `data` need not be held: at least one
// plan runs, none runs in core, and the source is a C-order .npy (its chunks then come from the
// memory mapping, load_npy_mapped) or a generator without `verifying` (each chunk generated where
// it is read, generate_on_demand). The plans counted no host memory for the points then.
bool points_stay_unheld(const DataSource& data, bool verifying, const std::vector<MemoryPlan>& plans);

}  // namespace mk
