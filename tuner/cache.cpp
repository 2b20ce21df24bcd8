#include "tuner/cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "core/errors.hpp"
#include "core/input_file.hpp"
#include "tuner/search_space.hpp"

namespace mk::tuner {

using nlohmann::json;

DeviceKey DeviceKey::of(const DeviceInfo& device) {
  DeviceKey key;
  key.name = device.name;
  key.cc = std::to_string(device.cc_major) + "." + std::to_string(device.cc_minor);
  key.sm_count = device.sm_count;
  key.driver = device.driver;
  return key;
}

DeviceKey DeviceKey::from_json(const json& j) {
  if (!j.is_object()) throw InputError("device must be an object");
  DeviceKey key;
  try {
    key.name = j.at("name").get<std::string>();
    key.cc = j.at("cc").get<std::string>();
    key.sm_count = j.at("sm_count").get<int>();
    key.driver = j.value("driver", std::string());
  } catch (const json::exception& error) {
    throw InputError(std::string("device: ") + error.what());
  }
  return key;
}

json DeviceKey::to_json() const {
  return {{"name", name}, {"cc", cc}, {"sm_count", sm_count}, {"driver", driver}};
}

std::string DeviceKey::str() const {
  return name + "/cc" + cc + "/" + std::to_string(sm_count) + "sm/driver " + driver;
}

std::string DeviceKey::slug() const {
  DeviceInfo info;
  info.name = name;
  info.is_gpu = cc != "0.0";
  return info.slug();
}

json device_limits_of(const DeviceInfo& device) {
  return {{"global_mem_bytes", device.global_mem_bytes},
          {"l2_bytes", device.l2_bytes},
          {"smem_per_block_optin", device.smem_per_block_optin},
          {"smem_per_sm", device.smem_per_sm},
          {"regs_per_sm", device.regs_per_sm},
          {"max_threads_per_sm", device.max_threads_per_sm}};
}

DeviceInfo device_info_of(const DeviceKey& key, const json& limits) {
  DeviceInfo info;
  info.name = key.name;
  info.driver = key.driver;
  info.sm_count = key.sm_count;
  info.is_gpu = key.cc != "0.0";
  if (std::sscanf(key.cc.c_str(), "%d.%d", &info.cc_major, &info.cc_minor) != 2) info.cc_major = info.cc_minor = 0;
  if (limits.is_object()) {
    info.global_mem_bytes = limits.value("global_mem_bytes", int64_t(0));
    info.l2_bytes = limits.value("l2_bytes", int64_t(0));
    info.smem_per_block_optin = limits.value("smem_per_block_optin", int64_t(0));
    info.smem_per_sm = limits.value("smem_per_sm", int64_t(0));
    info.regs_per_sm = limits.value("regs_per_sm", 0);
    info.max_threads_per_sm = limits.value("max_threads_per_sm", 0);
  }
  return info;
}

std::string problem_key(const Problem& problem) {
  return "n=" + std::to_string(problem.n) + ",k=" + problem.k.str() + ",m=" + std::to_string(problem.m);
}

json problem_to_json(const Problem& problem) {
  return {{"n", problem.n}, {"k_min", problem.k.kmin}, {"k_max", problem.k.kmax},
          {"sum_k", problem.k.sum()}, {"m", problem.m}};
}

Problem problem_from_json(const json& j, const std::string& where) {
  // Whole numbers in range only: get<int>() of 1e300 or of 2^40 would wrap or be undefined.
  const auto whole = [&](const char* key, int64_t most) {
    if (!j.is_object() || !j.contains(key) || !j.at(key).is_number_integer() ||
        (j.at(key).is_number_unsigned() && j.at(key).get<uint64_t>() > uint64_t(most)) ||
        (!j.at(key).is_number_unsigned() && (j.at(key).get<int64_t>() < 1 || j.at(key).get<int64_t>() > most)))
      throw InputError(where + ": problem " + j.dump() + ": '" + key + "' must be a whole number from 1 to " +
                       std::to_string(most));
    return j.at(key).get<int64_t>();
  };
  Problem problem;
  problem.n = static_cast<int>(whole("n", INT32_MAX));
  problem.k.kmin = static_cast<int>(whole("k_min", kMaxK));
  problem.k.kmax = static_cast<int>(whole("k_max", kMaxK));
  problem.m = whole("m", INT64_MAX);
  if (problem.k.kmax < problem.k.kmin)
    throw InputError(where + ": problem " + j.dump() + " is not a valid shape");
  return problem;
}

std::string cache_key(const DeviceKey& device, const std::string& variant, const Problem& problem,
                      const Params& params) {
  return device.str() + "|" + problem_key(problem) + "|" + candidate_key(variant, params);
}

std::string CacheRecord::key() const { return cache_key(device, variant, problem, params); }

json record_to_json(const CacheRecord& record) {
  json out = {{"device", record.device.to_json()},
              {"variant", record.variant},
              {"params", record.params},
              {"problem", problem_to_json(record.problem)},
              {"bucket", record.bucket},
              {"ok", record.measurement.ok},
              {"reason", record.measurement.reason},
              {"median_ms", record.measurement.median_ms},
              {"samples_ms", record.measurement.samples_ms},
              {"strategy", record.strategy},
              {"time", record.time},
              {"eval_seconds", record.eval_seconds}};
  if (!record.device_limits.is_null()) out["device_limits"] = record.device_limits;
  return out;
}

CacheRecord record_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": not a JSON object");
  CacheRecord record;
  try {
    record.device = DeviceKey::from_json(j.at("device"));
    record.variant = j.at("variant").get<std::string>();
    record.params = j.at("params");
    if (!record.params.is_object()) throw InputError(where + ": params must be an object");
    record.problem = problem_from_json(j.at("problem"), where);
    record.bucket = j.value("bucket", std::string());
    record.measurement.ok = j.at("ok").get<bool>();
    record.measurement.reason = j.value("reason", std::string());
    record.measurement.samples_ms = j.at("samples_ms").get<std::vector<double>>();
    record.measurement.median_ms = j.at("median_ms").get<double>();
    record.strategy = j.value("strategy", std::string());
    record.time = j.value("time", std::string());
    record.eval_seconds = j.value("eval_seconds", 0.0);
    record.device_limits = j.value("device_limits", json());
  } catch (const json::exception& error) {
    throw InputError(where + ": " + error.what());
  }
  if (record.measurement.ok && !(record.measurement.median_ms > 0))
    throw InputError(where + ": an ok record needs a positive median_ms");
  if (!(record.eval_seconds >= 0) || !std::isfinite(record.eval_seconds))
    throw InputError(where + ": eval_seconds must be a finite number >= 0");
  if (!record.device_limits.is_null() && !record.device_limits.is_object())
    throw InputError(where + ": device_limits must be an object");
  return record;
}

namespace {

void warn(std::ostream* warnings, CacheLoadReport& report, const std::string& text) {
  report.warnings.push_back(text);
  if (warnings) *warnings << "warning: " << text << "\n";
}

}  // namespace

std::vector<CacheRecord> load_cache_records(const std::string& path, std::ostream* warnings,
                                            CacheLoadReport* report_out) {
  CacheLoadReport report;
  std::vector<CacheRecord> records;
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    if (report_out) *report_out = report;
    return records;
  }
  require_regular_file(path, "tune cache", /*pipes=*/true);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open tune cache " + path + ": " + std::strerror(errno));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();

  size_t start = 0;
  size_t line_number = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    ++line_number;
    if (end == std::string::npos) {
      report.torn_tail = true;
      report.torn_tail_bytes = text.size() - start;
      warn(warnings, report,
           path + ": ignoring the last line (" + std::to_string(report.torn_tail_bytes) +
               " bytes without a newline): a write was cut short, that point will be measured again");
      break;
    }
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    report.valid_bytes = start;
    ++report.lines;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(line_number);
    try {
      json parsed = json::parse(line);
      if (parsed.is_object() && parsed.contains("schema")) {
        // A header line (fixtures describe themselves); only the schema matters here.
        if (parsed.at("schema") != kCacheSchema)
          throw InputError(where + ": unknown cache schema " + parsed.at("schema").dump());
        continue;
      }
      records.push_back(record_from_json(parsed, where));
    } catch (const json::exception& bad) {
      ++report.skipped;
      warn(warnings, report, where + ": skipping unparsable line: " + bad.what());
    } catch (const InputError& bad) {
      ++report.skipped;
      warn(warnings, report, std::string("skipping record: ") + bad.what());
    }
  }
  report.records = records.size();
  if (report_out) *report_out = report;
  return records;
}

TuneCache::TuneCache(std::string path, std::ostream* warnings) : path_(std::move(path)) {
  records_ = load_cache_records(path_, warnings, &report_);
  for (size_t i = 0; i < records_.size(); ++i) latest_[records_[i].key()] = i;

  namespace fs = std::filesystem;
  const fs::path folder = fs::path(path_).parent_path();
  std::error_code error;
  if (!folder.empty()) fs::create_directories(folder, error);
  if (error) throw InputError("cannot create folder " + folder.string() + " for the tune cache: " + error.message());
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw InputError("cannot open tune cache " + path_ + " for appending: " + std::strerror(errno));
  if (report_.torn_tail) {
    // Without this the next record would be glued onto the torn fragment and both lost.
    if (::ftruncate(fd_, off_t(report_.valid_bytes)) != 0 || ::fsync(fd_) != 0)
      throw InputError("cannot cut the torn last line off " + path_ + ": " + std::strerror(errno));
  }
}

TuneCache::~TuneCache() {
  if (fd_ >= 0) ::close(fd_);
}

const CacheRecord* TuneCache::find(const std::string& key) const {
  auto it = latest_.find(key);
  return it == latest_.end() ? nullptr : &records_[it->second];
}

void TuneCache::append(const CacheRecord& record) {
  const std::string line = record_to_json(record).dump() + "\n";
  const ssize_t written = ::write(fd_, line.data(), line.size());
  if (written != ssize_t(line.size()))
    throw InputError("cannot append to tune cache " + path_ + ": " +
                     (written < 0 ? std::strerror(errno) : "short write (disk full?)"));
  if (::fsync(fd_) != 0) throw InputError("cannot fsync tune cache " + path_ + ": " + std::strerror(errno));
  latest_[record.key()] = records_.size();
  records_.push_back(record);
}

}  // namespace mk::tuner
