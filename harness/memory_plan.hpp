#pragma once
// Memory planning before any allocation (docs/memory-planning.md). Every measuring command
// asks the planner before it generates or loads points and before a variant prepares: the
// plan adds up what the host and the GPU will hold, compares that with the host's limit
// (core/host_memory.hpp, or --host-memory) and the GPU's free memory, and either runs in
// core or refuses with the sizes and the way out. Refusing instead of trying is what keeps
// a 256 GiB request on a 128 GiB host from ending in the OOM killer (issue 38). Issue 34's
// out-of-core Lloyd adds a third outcome here, chunked execution, where this refuses.
#include <cstdint>
#include <optional>
#include <string>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "datasets/dataset.hpp"
#include "variants/variant.hpp"

namespace mk {

// Where a run's points come from and what holding them costs the host.
struct DataSource {
  std::string spec;
  int64_t m = 0;  // the points' shape; 0 when a file's shape is only known once it is parsed (CSV)
  int n = 0;
  int64_t host_bytes = 0;  // peak host bytes while the points are made or loaded, and then held
  std::string description;  // "uniform 1G × 64 float32", "npy /data/x.npy (1.0 GiB file)"
};

// Generators: M·N floats. .npy: the array (read from the header; twice for Fortran order,
// which is converted to row-major). CSV: the text, read whole, plus at most one float per two
// bytes of it. A file that cannot be found counts nothing here: its loader reports it.
DataSource describe_data_source(const std::string& spec, int64_t m, int n);
// Points already in memory (a measurement's plan: the data is loaded, the variant is not).
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
};

enum class PlanMode { InCore, Refused };  // issue 34 adds chunked (out-of-core) execution

struct MemoryPlan {
  PlanMode mode = PlanMode::InCore;
  bool host_exceeded = false;
  bool gpu_exceeded = false;
  DeviceFootprint host;  // what the host holds: the points, the reference, a CPU variant's buffers
  DeviceFootprint gpu;   // what the GPU holds: the variant's device_footprint
  int64_t host_usable = 0;  // 0 when not checked
  int64_t gpu_usable = 0;   // 0 when no GPU is planned
  std::string message;      // for a refusal: the sizes, the limits and the way out

  bool in_core() const { return mode == PlanMode::InCore; }
  // Nothing when in core; InputError (exit 2) when the host cannot hold the plan, else
  // UnsupportedError (exit 3, the code of every refusal made before any work).
  void enforce() const;
};

MemoryPlan plan_memory(const DataSource& data, const RowWork& work, const DeviceInfo& device,
                       const MemoryLimits& limits);

}  // namespace mk
