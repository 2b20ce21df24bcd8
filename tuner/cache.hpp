#pragma once
// The tuning cache: an append-only JSON-lines file with one line per evaluation (the raw
// timing samples, not just a verdict), so an interrupted tune resumes without measuring a
// point twice and a recorded table can be replayed to compare strategies offline.
#include <iosfwd>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "variants/variant.hpp"
#include "tuner/evaluator.hpp"

namespace mk::tuner {

inline constexpr const char* kCacheSchema = "mkbench.tune-cache/1";

// What makes timings comparable across runs: the same chip model, configuration and driver.
struct DeviceKey {
  std::string name;
  std::string cc;  // "9.0"
  int sm_count = 0;
  std::string driver;

  static DeviceKey of(const DeviceInfo& device);
  static DeviceKey from_json(const nlohmann::json& json);  // InputError on missing keys
  nlohmann::json to_json() const;
  std::string str() const;   // "NVIDIA H100 80GB HBM3/cc9.0/132sm/driver 580.1"
  std::string slug() const;  // file-name form of the name, like DeviceInfo::slug
  bool operator==(const DeviceKey& other) const { return str() == other.str(); }
};

// "n=8,k=3..7,m=33554432": exact shape, used in keys (timings of different shapes that
// share a bucket are not interchangeable).
std::string problem_key(const Problem& problem);
nlohmann::json problem_to_json(const Problem& problem);
Problem problem_from_json(const nlohmann::json& json, const std::string& where);

// Device properties that variant heuristics read besides the key (memory sizes, shared
// memory, threads per SM). Stored with each record, outside the key because they follow
// from the chip, so that a replay can work out the variants' default points.
nlohmann::json device_limits_of(const DeviceInfo& device);
// The recorded device as a DeviceInfo: name, CC, SM count and driver from the key, plus
// `limits` (an object from device_limits_of) when recorded; null limits leave them 0.
DeviceInfo device_info_of(const DeviceKey& key, const nlohmann::json& limits);

struct CacheRecord {
  DeviceKey device;
  nlohmann::json device_limits;  // device_limits_of the device; null in older caches
  std::string variant;
  Params params = Params::object();
  Problem problem;
  std::string bucket;  // Bucket::label of the problem, for readers grouping by bucket
  Measurement measurement;
  std::string strategy;
  std::string time;  // UTC ISO-8601 of the measurement
  // Wall time the evaluation took (data generation, warm-up and timed iterations): a
  // resumed tune charges it to the time budget when it reuses the point. 0 in older caches.
  double eval_seconds = 0;

  std::string key() const;
};

std::string cache_key(const DeviceKey& device, const std::string& variant, const Problem& problem,
                      const Params& params);
nlohmann::json record_to_json(const CacheRecord& record);
CacheRecord record_from_json(const nlohmann::json& json, const std::string& where);

struct CacheLoadReport {
  size_t lines = 0;            // complete lines read
  size_t records = 0;          // evaluation records kept
  size_t skipped = 0;          // unparsable or incomplete complete-lines, each warned about
  bool torn_tail = false;      // the file ended inside a line (a write cut short)
  size_t torn_tail_bytes = 0;
  size_t valid_bytes = 0;      // length of the prefix made of whole lines
  std::vector<std::string> warnings;
};

// Reads every complete record; a final line without its '\n' is what a kill during a
// write leaves, so it is ignored with a warning (written to `warnings` when not null).
// A missing file gives no records. InputError when the file exists but cannot be read.
std::vector<CacheRecord> load_cache_records(const std::string& path, std::ostream* warnings,
                                            CacheLoadReport* report = nullptr);

class TuneCache {
 public:
  // Loads `path` and prepares it for appending: a torn final line is cut off (after the
  // warning) so the next record starts on a line of its own.
  explicit TuneCache(std::string path, std::ostream* warnings);
  ~TuneCache();
  TuneCache(const TuneCache&) = delete;
  TuneCache& operator=(const TuneCache&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<CacheRecord>& records() const { return records_; }
  const CacheLoadReport& load_report() const { return report_; }
  // The latest record with this key, if any.
  const CacheRecord* find(const std::string& key) const;

  // The whole line and its '\n' go out in one write(), then fsync: a crash leaves either
  // the complete line or a torn tail that the next load ignores. InputError on I/O failure.
  void append(const CacheRecord& record);

 private:
  std::string path_;
  std::vector<CacheRecord> records_;
  std::unordered_map<std::string, size_t> latest_;
  CacheLoadReport report_;
  int fd_ = -1;
};

}  // namespace mk::tuner
