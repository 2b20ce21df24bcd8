#include "tuner/replay.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/errors.hpp"

namespace mk::tuner {
namespace {

using PointsByProblem = std::map<std::string, std::vector<Params>>;  // problem_key -> recorded params

// What a replay knows about the device the table was recorded on: enough to ask the
// registered variants for their default points, or why not.
struct RecordedDevice {
  DeviceInfo info;
  bool limits_recorded = false;       // the records carry device_limits
  std::optional<std::string> unknown;  // why no default can be worked out at all
};

RecordedDevice recorded_device_of(const std::vector<CacheRecord>& records) {
  RecordedDevice device;
  const CacheRecord* with_limits = nullptr;
  for (const CacheRecord& record : records)
    if (record.device_limits.is_object()) {
      with_limits = &record;
      break;
    }
  device.limits_recorded = with_limits != nullptr;
  device.info = device_info_of(records.front().device, with_limits ? with_limits->device_limits : nlohmann::json());
  if (device.info.cc_major == 0 && device.info.is_gpu)
    device.unknown = "the table records no usable compute capability ('" + records.front().device.cc + "')";
  else if (device.info.is_gpu && device.info.sm_count < 1)
    device.unknown = "the table records no SM count for its device";
  return device;
}

// The same device with every limit that older caches do not record set far from 0.
DeviceInfo with_large_limits(DeviceInfo info) {
  info.global_mem_bytes = int64_t(1) << 42;
  info.l2_bytes = int64_t(1) << 32;
  info.smem_per_block_optin = int64_t(1) << 32;
  info.smem_per_sm = int64_t(1) << 32;
  info.regs_per_sm = 1 << 24;
  info.max_threads_per_sm = 1 << 20;
  return info;
}

class RecordedVariant : public Variant {
 public:
  RecordedVariant(std::string name, bool gpu, std::shared_ptr<const PointsByProblem> points,
                  std::shared_ptr<const RecordedDevice> device)
      : name_(std::move(name)), gpu_(gpu), points_(std::move(points)), device_(std::move(device)) {}

  std::string name() const override { return name_; }
  std::string description() const override { return "recorded timings of " + name_ + " (replay)"; }
  bool runs_on_gpu() const override { return gpu_; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo&) const override {
    if (!points_->count(problem_key(problem))) return "nothing recorded for " + problem.str();
    return std::nullopt;
  }

  ParamSpace param_space(const Problem& problem, const DeviceInfo&) const override {
    ParamSpace space;
    auto found = points_->find(problem_key(problem));
    if (found == points_->end()) return space;
    // Axes in recorded-value order (numbers ascending), so "adjacent" means what it
    // meant for the real variant's axis.
    std::map<std::string, std::vector<nlohmann::json>> values;
    auto recorded = std::make_shared<std::unordered_set<std::string>>();
    for (const Params& params : found->second) {
      recorded->insert(params.dump());
      for (auto it = params.begin(); it != params.end(); ++it) {
        auto& list = values[it.key()];
        if (std::find(list.begin(), list.end(), it.value()) == list.end()) list.push_back(it.value());
      }
    }
    for (auto& [name, list] : values) {
      std::sort(list.begin(), list.end());
      space.axes.push_back({name, list, "recorded values"});
    }
    space.restrictions.push_back({"recorded in the replay table", [recorded](const Params& params) {
                                    return recorded->count(params.dump()) > 0;
                                  }});
    return space;
  }

  // The registered variant's default on the recorded device. UnsupportedError when that
  // cannot be known: the variant is not in this build, the table lacks the device's CC or
  // SM count, or (tables without device_limits) the default depends on a limit that was
  // not recorded, which shows as a different answer with those limits at 0 and far from 0.
  Params default_params(const Problem& problem, const DeviceInfo&) const override {
    if (device_->unknown) throw UnsupportedError(*device_->unknown);
    const Variant* real = Registry::instance().find(name_);
    if (!real) throw UnsupportedError(name_ + " is not a variant of this build");
    Params params = real->default_params(problem, device_->info);
    if (!device_->limits_recorded && params != real->default_params(problem, with_large_limits(device_->info)))
      throw UnsupportedError("it depends on device limits (shared memory, L2, memory size) that the table does "
                             "not record");
    return params;
  }

  std::unique_ptr<PreparedRun> prepare(const Problem&, const Dataset&, const Params&,
                                       const DeviceInfo&) const override {
    throw UnsupportedError(name_ + " is a recorded stand-in from a replay table and cannot run");
  }

 private:
  std::string name_;
  bool gpu_;
  std::shared_ptr<const PointsByProblem> points_;
  std::shared_ptr<const RecordedDevice> device_;
};

std::string replay_key(const Problem& problem, const std::string& variant, const Params& params) {
  return problem_key(problem) + "|" + candidate_key(variant, params);
}

}  // namespace

struct ReplayTable::Data {
  std::string source;
  std::vector<CacheRecord> records;
  std::shared_ptr<std::unordered_map<std::string, Measurement>> measurements;
  std::vector<std::unique_ptr<RecordedVariant>> variants;
};

ReplayTable::ReplayTable() : data_(std::make_unique<Data>()) {}
ReplayTable::ReplayTable(ReplayTable&&) noexcept = default;
ReplayTable& ReplayTable::operator=(ReplayTable&&) noexcept = default;
ReplayTable::~ReplayTable() = default;

ReplayTable ReplayTable::load(const std::string& path, std::ostream* warnings) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) throw InputError("replay table " + path + " does not exist");
  return from_records(load_cache_records(path, warnings), path);
}

ReplayTable ReplayTable::from_records(std::vector<CacheRecord> records, std::string source) {
  if (records.empty()) throw InputError("replay table " + source + " holds no evaluation records");
  ReplayTable table;
  table.data_->source = std::move(source);
  table.data_->measurements = std::make_shared<std::unordered_map<std::string, Measurement>>();
  std::map<std::string, std::shared_ptr<PointsByProblem>> points_by_variant;
  std::vector<std::string> variant_order;
  for (const CacheRecord& record : records) {
    if (!(record.device == records.front().device))
      throw InputError("replay table " + table.data_->source + " mixes devices (" + records.front().device.str() +
                       " and " + record.device.str() + "); replay one device at a time");
    const std::string key = replay_key(record.problem, record.variant, record.params);
    // The latest record of a point wins, as in the cache.
    const bool first_time = table.data_->measurements->count(key) == 0;
    (*table.data_->measurements)[key] = record.measurement;
    auto& points = points_by_variant[record.variant];
    if (!points) {
      points = std::make_shared<PointsByProblem>();
      variant_order.push_back(record.variant);
    }
    if (first_time) (*points)[problem_key(record.problem)].push_back(record.params);
  }
  const bool gpu = records.front().device.cc != "0.0";
  const auto device = std::make_shared<const RecordedDevice>(recorded_device_of(records));
  for (const std::string& name : variant_order)
    table.data_->variants.push_back(std::make_unique<RecordedVariant>(name, gpu, points_by_variant[name], device));
  table.data_->records = std::move(records);
  return table;
}

const std::string& ReplayTable::source() const { return data_->source; }
const std::vector<CacheRecord>& ReplayTable::records() const { return data_->records; }

std::vector<Problem> ReplayTable::problems() const {
  std::vector<Problem> out;
  std::set<std::string> seen;
  for (const auto& record : data_->records)
    if (seen.insert(problem_key(record.problem)).second) out.push_back(record.problem);
  return out;
}

DeviceKey ReplayTable::device() const { return data_->records.front().device; }

std::vector<const Variant*> ReplayTable::variants() const {
  std::vector<const Variant*> out;
  for (const auto& variant : data_->variants) out.push_back(variant.get());
  return out;
}

SearchSpace ReplayTable::space_for(const Problem& problem, const Params& pinned) const {
  DeviceInfo unused;
  return SearchSpace::build(variants(), problem, unused, pinned);
}

Evaluator ReplayTable::evaluator() const {
  auto measurements = data_->measurements;
  return [measurements](const Variant& variant, const Params& params, const Problem& problem) {
    auto found = measurements->find(replay_key(problem, variant.name(), params));
    if (found == measurements->end())
      return Measurement{{}, 0, false, "not recorded in the replay table"};
    return found->second;
  };
}

}  // namespace mk::tuner
