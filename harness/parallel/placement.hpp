#pragma once
// `--device`: where a command's rows run, and over how many shards (docs/multi-gpu.md).
//   0            one GPU (the default); on a machine without one, the host CPU, as before
//   0,1,3 | all  one shard per GPU, all driven by this process (NCCL)
//   cpu          the host CPU, one shard
//   cpu:N        the host CPU split into N shards, each a rank of an in-process group (what
//                CI tests sharding with)
// Under mpirun (several ranks), each rank is one shard: rank r of a host takes entry r of
// the GPU list (all = every GPU of the host), or the host CPU with `cpu` or without a GPU.
// One parser and one factory serve `run`, the suites and `fit`.
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "harness/parallel/mpi_communicator.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace mk {

struct DeviceSpec {
  bool cpu = false;
  int cpu_shards = 0;     // cpu:N; 0 = plain `cpu`
  bool all_gpus = false;  // all
  std::vector<int> gpus;  // 0,1,3
};
// Syntax only (no GPU is queried). InputError naming the option for anything else, a
// repeated ordinal, or cpu:0.
DeviceSpec parse_device_spec(const std::string& text);

struct Placement {
  std::string text;             // as given
  bool gpu = false;             // shards run on GPUs (else on the host CPU)
  std::vector<int> gpus;        // this process's GPUs, one shard each (one entry under MPI)
  int cpu_shards = 1;           // this process's host shards (1 under MPI)
  MpiLaunch mpi;                // active: one shard per rank, ranks in MPI_COMM_WORLD
  std::vector<DeviceInfo> devices;  // this process's devices, peaks filled (host CPU: one entry)

  int local_shards() const { return gpu ? int(gpus.size()) : cpu_shards; }
  int total_shards() const { return mpi.active ? mpi.world_size : local_shards(); }
  // Whether rows go through a ShardedRun. One GPU, or the plain host CPU, in one process run
  // the variant itself, exactly as before `--device` took a list.
  bool sharded() const { return mpi.active || local_shards() > 1 || (!gpu && cpu_shards_given); }
  // The device rows are planned for and the results file's header names (the first shard's).
  const DeviceInfo& primary() const { return devices.front(); }
  std::string describe() const;  // "GPUs 0,1 (NCCL, one process)", "host CPU, 4 shards (in-process)"

  bool cpu_shards_given = false;  // cpu:N was written, even cpu:1
};

// Parses, checks the GPUs exist (InputError, exit 2: "--device 3 does not exist (2 CUDA
// GPU(s))"), queries each device, fills peaks from the cache (measuring them once when
// `measure_peaks` and none is cached), joins MPI when launched by mpirun, and selects the
// primary GPU.
Placement resolve_placement(const std::string& text, bool measure_peaks);

// The one device of a command that runs on one (seed, quantize, explore): GPU `ordinal`, made
// current, or the host CPU on a machine without a GPU, where only ordinal 0 (the default) means
// it, as in resolve_placement. Another ordinal is InputError.
DeviceInfo resolve_single_device(int ordinal);

// The one `--device` option of run, the suites and fit.
CLI::Option* add_device_option(CLI::App& app, std::string& text);

}  // namespace mk
