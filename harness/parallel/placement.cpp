#include "harness/parallel/placement.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include <CLI/CLI.hpp>

#include "core/errors.hpp"
#include "harness/measure.hpp"
#include "harness/peak.hpp"

namespace mk {

namespace {

bool all_digits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

int parse_index(const std::string& item, const std::string& text) {
  if (!all_digits(item) || item.size() > 6)
    throw InputError("--device expects a GPU ordinal, a list like 0,1, all, cpu or cpu:N; got '" + text + "'");
  return std::stoi(item);
}

std::string join(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

}  // namespace

DeviceSpec parse_device_spec(const std::string& text) {
  DeviceSpec spec;
  if (text == "all") {
    spec.all_gpus = true;
    return spec;
  }
  if (text == "cpu") {
    spec.cpu = true;
    return spec;
  }
  if (text.rfind("cpu:", 0) == 0) {
    spec.cpu = true;
    spec.cpu_shards = parse_index(text.substr(4), text);
    if (spec.cpu_shards < 1) throw InputError("--device cpu:N needs N >= 1, got '" + text + "'");
    return spec;
  }
  std::set<int> seen;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const int ordinal = parse_index(item, text);
    if (!seen.insert(ordinal).second) throw InputError("--device names GPU " + item + " twice: '" + text + "'");
    spec.gpus.push_back(ordinal);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return spec;
}

std::string Placement::describe() const {
  std::string where = gpu ? (gpus.size() == 1 ? "GPU " : "GPUs ") + join(gpus) : std::string("host CPU");
  if (mpi.active)
    return where + ", rank " + std::to_string(mpi.world_rank) + " of " + std::to_string(mpi.world_size) + " (mpirun)";
  if (!sharded()) return where;
  return where + ", " + std::to_string(local_shards()) + " shard(s) in this process";
}

Placement resolve_placement(const std::string& text, bool measure_peaks) {
  const DeviceSpec spec = parse_device_spec(text);
  Placement placement;
  placement.text = text;
  placement.mpi = detect_mpi_launch();
  const int gpus = gpu_count();
  const bool legacy_single = !spec.cpu && !spec.all_gpus && spec.gpus.size() == 1;

  if (spec.cpu || gpus == 0) {
    // Ordinal 0 on a machine without a GPU keeps meaning "the host CPU" (the default
    // `--device 0` of every CPU CI run); another ordinal, a list or `all` asks for GPUs that
    // are not there.
    if (!spec.cpu && !(legacy_single && spec.gpus.front() == 0))
      throw InputError("--device " + text + " names GPUs, and this machine has none: " + no_gpu_reason());
    placement.gpu = false;
    placement.cpu_shards_given = spec.cpu_shards > 0;
    placement.cpu_shards = std::max(1, spec.cpu_shards);
    if (placement.mpi.active && placement.cpu_shards > 1)
      throw InputError("--device " + text + ": under mpirun every rank is one shard; give --device cpu");
    placement.devices.push_back(query_host_cpu());
  } else {
    std::vector<int> wanted = spec.all_gpus ? std::vector<int>{} : spec.gpus;
    if (spec.all_gpus)
      for (int i = 0; i < gpus; ++i) wanted.push_back(i);
    for (int ordinal : wanted)
      if (ordinal >= gpus)
        throw InputError("--device " + std::to_string(ordinal) + " does not exist (" + std::to_string(gpus) +
                         " CUDA GPU(s))");
    if (placement.mpi.active) {
      // One GPU a rank: the list is indexed by the rank's place on its host.
      if (wanted.size() < size_t(placement.mpi.local_size))
        throw InputError("mpirun started " + std::to_string(placement.mpi.local_size) +
                         " ranks on this host but --device " + text + " names " + std::to_string(wanted.size()) +
                         " GPU(s): each rank needs its own (give --device all or a list of that many)");
      wanted = {wanted[size_t(placement.mpi.local_rank)]};
    }
    placement.gpu = true;
    placement.gpus = wanted;
    for (int ordinal : wanted) {
      DeviceInfo device = query_device(ordinal);
      select_device(ordinal);
      ensure_measured_peaks(device, measure_peaks);
      placement.devices.push_back(device);
    }
    select_device(wanted.front());
  }
  if (placement.mpi.active) ensure_mpi_initialized();
  return placement;
}

DeviceInfo resolve_single_device(int ordinal) {
  const int gpus = gpu_count();
  if (gpus == 0) {
    if (ordinal != 0)
      throw InputError("--device " + std::to_string(ordinal) + " names a GPU, and this machine has none: " +
                       no_gpu_reason());
    return query_host_cpu();
  }
  if (ordinal < 0 || ordinal >= gpus)
    throw InputError("--device " + std::to_string(ordinal) + " does not exist (" + std::to_string(gpus) +
                     " CUDA GPU(s))");
  DeviceInfo device = query_device(ordinal);
  select_device(ordinal);
  return device;
}

CLI::Option* add_device_option(CLI::App& app, std::string& text) {
  return app
      .add_option("--device", text,
                  "where to run: a CUDA ordinal, a list 0,1,... or all (one shard per GPU, all-reduced with NCCL), "
                  "cpu, or cpu:N (the host CPU split into N shards); under mpirun each rank is one shard")
      ->capture_default_str();
}

}  // namespace mk
