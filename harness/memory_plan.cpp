#include "harness/memory_plan.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "core/byte_size.hpp"
#include "core/errors.hpp"
#include "core/input_file.hpp"
#include "core/host_memory.hpp"
#include "variants/common/pinned_staging.hpp"

namespace mk {
namespace {

std::optional<int64_t> host_memory_override;

struct NpyShape {
  int64_t m = 0;
  int n = 0;
  bool fortran_order = false;
};

// Just enough of the .npy header to size the load; the loader checks everything else.
std::optional<NpyShape> peek_npy_header(const std::string& path) {
  require_regular_file(path, "data file");  // before the open, which waits on a FIFO
  std::ifstream in(path, std::ios::binary);
  unsigned char preamble[12] = {};
  if (!in.read(reinterpret_cast<char*>(preamble), 10) || preamble[0] != 0x93) return std::nullopt;
  size_t header_bytes = size_t(preamble[8]) | size_t(preamble[9]) << 8;
  if (preamble[6] >= 2) {
    if (!in.read(reinterpret_cast<char*>(preamble + 10), 2)) return std::nullopt;
    header_bytes |= size_t(preamble[10]) << 16 | size_t(preamble[11]) << 24;
  }
  if (header_bytes > (size_t(1) << 20)) return std::nullopt;
  std::string header(header_bytes, '\0');
  if (!in.read(header.data(), std::streamsize(header_bytes))) return std::nullopt;
  static const std::regex shape(R"('shape'\s*:\s*\(\s*([0-9]+)\s*,\s*([0-9]+)\s*,?\s*\))");
  std::smatch match;
  if (!std::regex_search(header, match, shape)) return std::nullopt;
  NpyShape out;
  out.m = std::strtoll(match[1].str().c_str(), nullptr, 10);
  out.n = int(std::strtol(match[2].str().c_str(), nullptr, 10));
  out.fortran_order = std::regex_search(header, std::regex(R"('fortran_order'\s*:\s*True)"));
  return out;
}

// The path of a csv: spec (its options are peeled off the end, as the loader does).
std::string csv_path(const std::string& rest) {
  std::string path = rest;
  static const std::regex option(R"(:(header|label=[0-9]+|cols=[0-9,]+|delim=[^:]+)$)");
  std::smatch match;
  while (std::regex_search(path, match, option)) path = path.substr(0, size_t(match.position(0)));
  return path;
}

int64_t file_bytes(const std::string& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  return error ? 0 : int64_t(size);
}

// Rounded down to whole binary units, so "at most about" never promises too much.
std::string about_count(double value) {
  int64_t count = int64_t(std::max(0.0, value));
  if (count >= (int64_t(1) << 20)) count = count >> 20 << 20;
  else if (count >= 1024) count = count >> 10 << 10;
  return format_count(count);
}

Params resolved_or_defaults(const Variant& variant, const Problem& problem, const DeviceInfo& device,
                            const Params& overrides) {
  try {
    return resolve_params(variant, problem, device, overrides);
  } catch (const Error&) {
    // The measurement refuses these params with its own message; size the defaults.
  }
  try {
    Params params = variant.default_params(problem, device);
    for (auto it = overrides.begin(); it != overrides.end(); ++it) params[it.key()] = it.value();
    return params;
  } catch (const std::exception&) {
    return overrides;
  }
}

}  // namespace

DataSource describe_data_source(const std::string& spec, int64_t m, int n) {
  DataSource source;
  source.spec = spec;
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "npy") {
    const int64_t bytes = file_bytes(rest);
    source.description = "npy " + rest + " (" + format_bytes(double(bytes)) + " file)";
    if (auto shape = peek_npy_header(rest)) {
      source.m = shape->m;
      source.n = shape->n;
      const double array = double(shape->m) * shape->n * 4.0;
      source.host_bytes = int64_t(shape->fortran_order ? 2.0 * array : array);
      source.mappable = !shape->fortran_order;
      source.description = "npy " + rest + " (" + format_count(shape->m) + " × " + std::to_string(shape->n) +
                           " float32" + (shape->fortran_order ? ", Fortran order converted in a second copy" : "") +
                           ")";
    } else {
      source.host_bytes = bytes;
    }
  } else if (kind == "csv") {
    const std::string path = csv_path(rest);
    const int64_t bytes = file_bytes(path);
    source.host_bytes = bytes + 2 * bytes;  // the text, then ≤ one 4-byte float per 2 bytes of it
    source.description = "csv " + path + " (" + format_bytes(double(bytes)) + " of text)";
  } else if (kind == "idx") {
    // The header gives the shape (gzipped files too); the loader checks the rest.
    const DataShape shape = idx_shape(rest);
    source.m = shape.m;
    source.n = shape.n;
    source.host_bytes = int64_t(double(shape.m) * shape.n * 4.0);
    source.description = "idx " + rest + " (" + format_count(shape.m) + " × " + std::to_string(shape.n) + " float32)";
  } else {
    source.m = m;
    source.n = n;
    source.host_bytes = int64_t(double(m) * n * 4.0);
    source.generable = kind == "uniform" || kind == "blobs";
    source.description = kind + " " + format_count(m) + " × " + std::to_string(n) + " float32";
  }
  return source;
}

bool points_stay_unheld(const DataSource& data, bool verifying, const std::vector<MemoryPlan>& plans) {
  if (!data.mappable && !(data.generable && !verifying)) return false;
  bool any_runs = false;
  for (const MemoryPlan& plan : plans) {
    if (plan.in_core()) return false;
    any_runs |= plan.runs();
  }
  return any_runs;
}

DataSource held_whole(DataSource source) {
  source.mappable = false;
  source.generable = false;
  return source;
}

DataSource describe_loaded_data(const Dataset& data) {
  DataSource source;
  source.m = data.m;
  source.n = data.n;
  // In a mapped file or made on demand: what an in-core run would have to hold (out of core
  // counts nothing).
  const bool not_held = data.is_mapped() || data.is_on_demand();
  source.host_bytes = not_held ? int64_t(double(data.m) * data.n * sizeof(float))
                               : int64_t(data.values.size() * sizeof(float));
  source.mappable = data.is_mapped();
  source.generable = data.is_on_demand();
  source.description = format_count(data.m) + " × " + std::to_string(data.n) + " float32 " +
                       (data.is_mapped() ? "(in its memory-mapped file)"
                                         : data.is_on_demand() ? "(generated chunk by chunk)" : "(loaded)");
  return source;
}

void set_host_memory_override(std::optional<int64_t> bytes) { host_memory_override = bytes; }

MemoryLimits current_memory_limits(const DeviceInfo& device) {
  MemoryLimits limits;
  if (host_memory_override) {
    limits.host_limit_bytes = *host_memory_override;
    limits.host_source = "--host-memory";
  } else {
    const HostMemoryLimit host = read_host_memory_limit();
    limits.host_limit_bytes = host.bytes;
    limits.host_source = host.source;
  }
  if (!device.is_gpu) return limits;
  limits.gpu = true;
  limits.gpu_name = device.name;
  limits.gpu_total_bytes = device.global_mem_bytes;
  if (const char* fake = std::getenv("MKBENCH_FAKE_GPU_FREE_BYTES"); fake && *fake) {
    limits.gpu_free_bytes = parse_byte_size(fake, "MKBENCH_FAKE_GPU_FREE_BYTES");
    limits.gpu_source = "MKBENCH_FAKE_GPU_FREE_BYTES";
    return limits;
  }
  size_t free_bytes = 0, total_bytes = 0;
  const cudaError_t status = device.ordinal >= 0 ? cudaSetDevice(device.ordinal) : cudaSuccess;
  if (status != cudaSuccess || cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();
    throw DeviceError("cannot read the free memory of " + device.name + " (cudaMemGetInfo failed)");
  }
  limits.gpu_free_bytes = int64_t(free_bytes);
  limits.gpu_total_bytes = int64_t(total_bytes);
  limits.gpu_source = "cudaMemGetInfo";
  return limits;
}

void MemoryPlan::enforce() const {
  if (runs()) return;
  if (host_exceeded) throw InputError(message);
  throw UnsupportedError(message);
}

const char* to_string(PlanMode mode) {
  switch (mode) {
    case PlanMode::InCore: return "in core";
    case PlanMode::OutOfCore: return "out of core";
    case PlanMode::Refused: return "refused";
  }
  return "?";
}

std::string MemoryPlan::summary() const {
  if (mode != PlanMode::OutOfCore) return to_string(mode);
  return "out of core: chunks of " + format_count(chunk_points) + " points (" + std::to_string(chunks) +
         (chunks == 1 ? " chunk" : " chunks") + ")";
}

namespace {

// The in-core plan: what issue 38's planner adds up.
MemoryPlan in_core_plan(const DataSource& data, const RowWork& work, const DeviceInfo& device,
                        const MemoryLimits& limits) {
  MemoryPlan plan;
  plan.host.add("points: " + data.description, double(data.host_bytes));
  const Problem& problem = work.problem;
  const double m = double(problem.m), kcount = problem.k.count();
  if (work.verify && problem.m > 0) {
    // reference_step keeps labels (4 B) and the best and second distances (8 B each) per
    // point and K; the verified run's labels come back beside them (4 B). A batch's problems
    // are checked one at a time against labels read back for all of them.
    plan.host.add("FP64 reference", kcount * m * 20.0);
    plan.host.add("labels read back", kcount * double(problem.total_points()) * 4.0);
  }
  const bool sized = work.variant && problem.m > 0 && problem.n > 0;
  const Params params = sized ? resolved_or_defaults(*work.variant, problem, device, work.params) : Params();
  if (sized && !work.variant->runs_on_gpu()) {
    for (const auto& part : work.variant->device_footprint(problem, params, device, work.labels).parts)
      plan.host.add(work.variant->name() + " " + part.what, double(part.bytes));
  }
  if (sized && work.variant->runs_on_gpu() && limits.gpu)
    plan.gpu = work.variant->device_footprint(problem, params, device, work.labels);
  return plan;
}

// One chunk slot of an out-of-core run: the variant's footprint on a chunk of `chunk` points.
DeviceFootprint slot_footprint(const RowWork& work, const DeviceInfo& device, int64_t chunk) {
  const Problem problem = chunk_problem(work.problem, chunk);
  const Params params = resolved_or_defaults(*work.variant, problem, device, work.params);
  return work.variant->device_footprint(problem, params, device, work.labels);
}

// The out-of-core plan for chunks of `chunk` points.
MemoryPlan out_of_core_plan(const DataSource& data, const RowWork& work, const DeviceInfo& device,
                            const MemoryLimits& limits, int64_t chunk) {
  MemoryPlan plan;
  plan.mode = PlanMode::OutOfCore;
  const Problem& problem = work.problem;
  plan.chunk_points = std::min(chunk, problem.m);
  plan.chunks = (problem.m + plan.chunk_points - 1) / plan.chunk_points;
  const double m = double(problem.m), kcount = problem.k.count();
  // The points stay whole in host memory, and the chunks are streamed from there; a C-order
  // .npy's chunks come from the memory-mapped file instead, whose pages are the kernel's to
  // read in and drop (clean and file-backed), so a file larger than the host can be clustered.
  if (data.mappable)
    plan.host.add("points: " + data.description + " (streamed from the memory-mapped file, not held)", 0.0);
  else if (data.generable && !work.verify)
    plan.host.add("points: " + data.description + " (each chunk generated where it is needed, not held)", 0.0);
  else
    plan.host.add("points: " + data.description + " (streamed from host memory)", double(data.host_bytes));
  if (work.verify) {
    plan.host.add("FP64 reference", kcount * m * 20.0);
    plan.host.add("labels read back", kcount * m * 4.0);
  } else if (work.labels) {
    plan.host.add("labels read back", kcount * m * 4.0);
  }
  const DeviceFootprint slot = slot_footprint(work, device, plan.chunk_points);
  const bool on_gpu = work.variant->runs_on_gpu();
  if (on_gpu) {
    // Where the host refuses to page-lock the points for direct DMA, the chunks are staged
    // through a pinned ring: planned for, so the fallback cannot exceed the limit.
    plan.host.add("pinned staging ring",
                  double(gpu::PinnedStaging::kBuffers) * double(gpu::PinnedStaging::kPieceBytes));
    if (limits.gpu)
      for (int s = 0; s < kGpuChunkSlots; ++s)
        for (const auto& part : slot.parts) plan.gpu.add("chunk slot " + std::to_string(s) + " " + part.what, double(part.bytes));
  } else {
    for (const auto& part : slot.parts) plan.host.add(work.variant->name() + " chunk " + part.what, double(part.bytes));
  }
  return plan;
}

// Marks what exceeds the limits; true when the plan fits.
bool check_limits(MemoryPlan& plan, const MemoryLimits& limits) {
  if (limits.host_limit_bytes > 0) {
    plan.host_usable = int64_t(kHostUsableFraction * double(limits.host_limit_bytes));
    plan.host_exceeded = plan.host.total() > plan.host_usable;
  }
  if (limits.gpu) {
    plan.gpu_usable = std::max<int64_t>(0, limits.gpu_free_bytes - kGpuReserveBytes);
    plan.gpu_exceeded = plan.gpu.total() > plan.gpu_usable;
  }
  return !plan.host_exceeded && !plan.gpu_exceeded;
}

// The largest chunk (a multiple of 1024 points, at most kMaxChunkBytes of points and M) whose
// plan fits, from the slot footprint's slope between two sizes; 0 when not even
// kMinChunkPoints fits.
int64_t largest_fitting_chunk(const DataSource& data, const RowWork& work, const DeviceInfo& device,
                              const MemoryLimits& limits) {
  const Problem& problem = work.problem;
  int64_t chunk = std::min<int64_t>(problem.m, std::max<int64_t>(1, kMaxChunkBytes / (int64_t(problem.n) * 4)));
  if (chunk > 1024 && chunk < problem.m) chunk = chunk / 1024 * 1024;
  for (int attempt = 0; attempt < 64 && chunk >= std::min(problem.m, kMinChunkPoints); ++attempt) {
    MemoryPlan plan = out_of_core_plan(data, work, device, limits, chunk);
    if (check_limits(plan, limits)) return chunk;
    // Scale by what is over, with room for the parts that do not shrink with the chunk.
    double ratio = 0.9;
    if (plan.gpu_exceeded && plan.gpu.total() > 0) ratio = std::min(ratio, 0.9 * double(plan.gpu_usable) / double(plan.gpu.total()));
    if (plan.host_exceeded && plan.host.total() > 0)
      ratio = std::min(ratio, 0.9 * double(plan.host_usable) / double(plan.host.total()));
    int64_t next = int64_t(double(chunk) * std::max(0.05, ratio));
    if (next > 1024) next = next / 1024 * 1024;
    if (next >= chunk) next = chunk - 1;
    chunk = next;
  }
  return 0;
}

// Whether the variant takes streamed chunks of this problem (its can_implement on the chunk
// problem); the reason when not.
std::optional<std::string> streaming_refusal(const RowWork& work, const DeviceInfo& device, int64_t chunk) {
  if (!work.variant) return "no variant";
  return work.variant->can_implement(chunk_problem(work.problem, chunk), device);
}

void refuse(MemoryPlan& plan, const DataSource& data, const RowWork& work, const MemoryLimits& limits,
            const std::string& out_of_core_note) {
  plan.mode = PlanMode::Refused;
  const Problem& problem = work.problem;
  const double m = double(problem.m), kcount = problem.k.count();
  const int64_t host_bytes = plan.host.total();
  const int64_t gpu_bytes = plan.gpu.total();
  const std::string shape = problem.m > 0 ? problem.str() : data.description;
  const std::string who = work.variant ? work.variant->name() + " on " + shape : shape;
  std::string message;
  std::optional<double> most_points;
  if (plan.host_exceeded) {
    message = who + " needs " + format_bytes(double(host_bytes)) + " of host memory (" + plan.host.describe() +
              "), more than the " + format_bytes(double(plan.host_usable)) + " usable of this host's " +
              format_bytes(double(limits.host_limit_bytes)) + " limit (" + limits.host_source + ", " +
              std::to_string(int(kHostUsableFraction * 100)) + " % of it planned)";
    if (problem.m > 0) most_points = m * double(plan.host_usable) / double(host_bytes);
  }
  if (plan.gpu_exceeded) {
    message += std::string(message.empty() ? who + " needs " : "; it also needs ") + format_bytes(double(gpu_bytes)) +
               " of GPU memory (" + plan.gpu.describe() + "), more than the " +
               format_bytes(double(plan.gpu_usable)) + " usable on " + limits.gpu_name + " (" +
               format_bytes(double(limits.gpu_free_bytes)) + " free by " + limits.gpu_source + " of " +
               format_bytes(double(limits.gpu_total_bytes)) + ", " + format_bytes(double(kGpuReserveBytes)) +
               " kept in reserve)";
    const double gpu_points = m * double(plan.gpu_usable) / double(gpu_bytes);
    if (problem.m > 0) most_points = most_points ? std::min(*most_points, gpu_points) : gpu_points;
  }
  if (!plan.host_exceeded && !plan.gpu_exceeded) {
    // In core would fit: out of core was asked for and cannot be had.
    plan.message = who + ": out of core was asked for (--chunk-points/--out-of-core), but " + out_of_core_note;
    return;
  }
  message += ". Way out: fewer points";
  if (most_points && problem.n > 0 && (plan.host_exceeded || plan.gpu_exceeded))
    message += " (about " + about_count(*most_points) + " of " + std::to_string(problem.n) + " dimensions fit)";
  if (plan.host_exceeded) message += ", or --host-memory SIZE if this host's limit was misread";
  if (plan.gpu_exceeded && work.variant && work.labels)
    message += ", or no --verify/--store-labels (the labels take " + format_bytes(kcount * m * 4.0) + ")";
  if (!out_of_core_note.empty() && (plan.host_exceeded || plan.gpu_exceeded))
    message += "; out of core (the points streamed in chunks): " + out_of_core_note;
  plan.message = message;
}

}  // namespace

MemoryPlan plan_memory(const DataSource& data, const RowWork& work, const DeviceInfo& device,
                       const MemoryLimits& limits) {
  const Problem& problem = work.problem;
  const bool forced = work.chunk_points > 0 || work.out_of_core;
  MemoryPlan in_core = in_core_plan(data, work, device, limits);
  const bool fits = check_limits(in_core, limits);
  if (fits && !forced) return in_core;

  // Out of core needs a variant, a known shape, and the variant's consent to streamed chunks.
  const bool sized = work.variant && problem.m > 0 && problem.n > 0;
  const bool device_ok = work.variant && (!work.variant->runs_on_gpu() || limits.gpu);
  std::string note;
  if (!sized || !device_ok) {
    note = forced ? "out of core needs a variant and the points' shape" : "";
  } else if (auto why = streaming_refusal(work, device, work.chunk_points > 0 ? work.chunk_points
                                                                               : std::min<int64_t>(problem.m, 1 << 20))) {
    note = work.variant->name() + " cannot stream its points: " + *why;
  } else {
    const int64_t chunk = work.chunk_points > 0 ? std::min(work.chunk_points, problem.m)
                                                : largest_fitting_chunk(data, work, device, limits);
    if (chunk > 0) {
      MemoryPlan plan = out_of_core_plan(data, work, device, limits, chunk);
      if (check_limits(plan, limits)) return plan;
      if (forced) {
        refuse(plan, data, work, limits, "chunks of " + format_count(chunk) + " points do not fit either");
        return plan;
      }
    }
    note = "not even chunks of " + format_count(std::min(problem.m, kMinChunkPoints)) + " points fit";
  }
  refuse(in_core, data, work, limits, note);
  return in_core;
}

}  // namespace mk
