#pragma once
// The per-device tuned configuration (configs/<device-slug>.json) that `mkbench tune`
// writes and `mkbench run` reads: per bucket, the best and runner-up (variant, params)
// with the measurement that chose them.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "variants/variant.hpp"
#include "tuner/buckets.hpp"
#include "tuner/cache.hpp"

namespace mk::tuner {

inline constexpr const char* kConfigSchema = "mkbench.tuned-config/1";

struct ConfigChoice {
  std::string variant;
  Params params = Params::object();
  double median_ms = 0;
  double gops = 0;
  size_t samples = 0;
  // The variant's default point: `mkbench run` then applies the variant's default_params
  // heuristic for the shape at hand, which is what this point is for the tuned shape.
  bool is_default = false;
};

struct ConfigEntry {
  Bucket bucket;
  Problem problem;  // the shape that was tuned for this bucket
  ConfigChoice best;
  std::optional<ConfigChoice> runner_up;
  // Why `best` is what it is against its variant's default (default_gate.hpp), e.g.
  // "tuned: 7.5% faster than default, p=0.0002"; the same for a runner-up of another
  // variant in runner_up_chosen (empty when there was nothing to judge).
  std::string chosen;
  std::string runner_up_chosen;
  size_t evals_new = 0;
  size_t evals_cached = 0;
  size_t space_size = 0;
  std::string strategy;
  uint64_t seed = 0;
  std::string budget;       // Budget::str of the share this shape got
  std::string stop_reason;
  std::string date;         // UTC ISO-8601 of the tune
  std::string device;       // device name, repeated per entry so a merged file stays readable
};

// Issue 32's measured rule for `auto`: at one measured shape, every variant's median time
// (scripts/fit-auto-table.py writes them from a suite's results files, e.g. the auto-check
// stage's). auto tries the variants of the nearest measured shape, fastest first.
struct AutoMeasurement {
  Problem problem;
  std::vector<std::pair<std::string, double>> times_ms;  // variant, median ms; fastest first
  std::string source;                                     // the results file(s) and commit(s)
};

struct TunedConfig {
  std::string schema = kConfigSchema;
  nlohmann::json device = nlohmann::json::object();  // DeviceKey::to_json plus "slug"
  std::string updated;
  std::vector<ConfigEntry> entries;
  std::vector<AutoMeasurement> auto_table;  // the "auto" key; empty when the file has none

  // Replaces the entry tuned on the same shape, or adds one; entries stay bucket-sorted.
  void merge(ConfigEntry entry);
  // Entries of the nearest bucket (exact first, else least Bucket::distance), ordered by
  // how close their tuned shape is to `problem`; empty when there are no entries.
  std::vector<const ConfigEntry*> nearest(const Problem& problem) const;
  // The auto_table shape closest to `problem` among those of its N and K classes: its own
  // bucket's first, else (both above 1M points) another M class's above 1M; ties to the first in
  // file order. nullptr when the table measured no such shape.
  const AutoMeasurement* nearest_auto(const Problem& problem) const;
};

nlohmann::json config_to_json(const TunedConfig& config);
// InputError naming `source` and the key for anything malformed.
TunedConfig config_from_json(const nlohmann::json& json, const std::string& source);
TunedConfig load_config(const std::string& path);  // InputError if missing or malformed
// load_config once per version of the file (its size and modification time): every fit and run
// asks for the tuned parameters, and parsing the 64 KB H200 config each time cost milliseconds
// of a Python fit's planning. Thread-safe; the config is shared, never modified.
std::shared_ptr<const TunedConfig> load_config_cached(const std::string& path);
TunedConfig parse_config_text(const std::string& text, const std::string& source);  // the file's text
void save_config_atomically(const std::string& path, const TunedConfig& config);

// Where configs live: $MKBENCH_CONFIG_DIR, else <source dir>/configs, else ./configs.
std::string default_config_dir();
std::string default_config_path(const std::string& device_slug);
std::string default_cache_path(const std::string& device_slug);
// The config `mkbench run` should read for this device: $MKBENCH_CONFIG_DIR/<slug>.json,
// then <source dir>/configs/<slug>.json; nullopt when neither exists.
std::optional<std::string> find_config_for(const std::string& device_slug);

}  // namespace mk::tuner
