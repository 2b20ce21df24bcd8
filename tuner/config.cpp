#include "tuner/config.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <map>
#include <sstream>

#include "harness/build_info.hpp"
#include "core/errors.hpp"
#include "core/input_file.hpp"
#include "harness/results.hpp"

namespace mk::tuner {

using nlohmann::json;

namespace {

json choice_to_json(const ConfigChoice& choice) {
  return {{"variant", choice.variant}, {"params", choice.params}, {"median_ms", choice.median_ms},
          {"gops", choice.gops}, {"samples", choice.samples}, {"default", choice.is_default}};
}

// Typed optional fields: a value of the wrong type is an InputError naming the key, never
// a nlohmann exception or a float cast that overflows (a count of 1e300).
std::string text_field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j.at(key).is_null()) return {};
  if (!j.at(key).is_string()) throw InputError(where + ": '" + key + "' must be a string, got " + j.at(key).dump());
  return j.at(key).get<std::string>();
}

uint64_t count_field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j.at(key).is_null()) return 0;
  const json& value = j.at(key);
  if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<int64_t>() >= 0))
    throw InputError(where + ": '" + key + "' must be a whole number >= 0, got " + value.dump());
  return value.get<uint64_t>();
}

double number_field(const json& j, const char* key, const std::string& where, bool required) {
  if (!j.contains(key) || j.at(key).is_null()) {
    if (required) throw InputError(where + ": missing '" + key + "'");
    return 0;
  }
  if (!j.at(key).is_number()) throw InputError(where + ": '" + key + "' must be a number, got " + j.at(key).dump());
  return j.at(key).get<double>();
}

ConfigChoice choice_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": expected an object, got " + j.dump());
  ConfigChoice choice;
  if (!j.contains("variant") || !j.at("variant").is_string()) throw InputError(where + ": 'variant' must be a string");
  choice.variant = j.at("variant").get<std::string>();
  if (!j.contains("params") || !j.at("params").is_object()) throw InputError(where + ": params must be an object");
  choice.params = j.at("params");
  choice.median_ms = number_field(j, "median_ms", where, true);
  choice.gops = number_field(j, "gops", where, false);
  choice.samples = static_cast<size_t>(count_field(j, "samples", where));
  if (j.contains("default") && !j.at("default").is_boolean())
    throw InputError(where + ": 'default' must be true or false, got " + j.at("default").dump());
  choice.is_default = j.value("default", false);
  return choice;
}

// How far apart two shapes of one bucket are: log-ratios, so 2x more points weighs like
// 2x more dimensions.
double shape_distance(const Problem& a, const Problem& b) {
  return std::fabs(std::log(double(a.m) / double(b.m))) + std::fabs(std::log(double(a.n) / double(b.n))) +
         std::fabs(std::log(double(a.k.sum()) / double(b.k.sum()))) +
         std::fabs(std::log(double(a.k.count()) / double(b.k.count())));
}

}  // namespace

void TunedConfig::merge(ConfigEntry entry) {
  const std::string shape = problem_key(entry.problem);
  auto same = std::find_if(entries.begin(), entries.end(),
                           [&](const ConfigEntry& e) { return problem_key(e.problem) == shape; });
  if (same != entries.end()) {
    // A tune of some variants must not erase what an earlier tune found for another: when
    // the old best's variant was not measured this time, the faster of the two bests stays
    // best and the other becomes the runner-up (replacing a runner-up of the best's own
    // variant), each with the reason it was chosen.
    const ConfigEntry& old = *same;
    const auto measured = [&](const std::string& variant) {
      return entry.best.variant == variant || (entry.runner_up && entry.runner_up->variant == variant);
    };
    if (!measured(old.best.variant)) {
      if (old.best.median_ms < entry.best.median_ms) {
        entry.runner_up = entry.best;
        entry.runner_up_chosen = entry.chosen;
        entry.best = old.best;
        entry.chosen = old.chosen;
      } else if (!entry.runner_up || entry.runner_up->variant == entry.best.variant) {
        entry.runner_up = old.best;
        entry.runner_up_chosen = old.chosen;
      }
    }
    *same = std::move(entry);
  } else {
    entries.push_back(std::move(entry));
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const ConfigEntry& a, const ConfigEntry& b) { return a.bucket < b.bucket; });
}

std::vector<const ConfigEntry*> TunedConfig::nearest(const Problem& problem) const {
  std::vector<const ConfigEntry*> out;
  if (entries.empty()) return out;
  const Bucket wanted = Bucket::of(problem);
  int best_distance = -1;
  Bucket chosen;
  // Ties in distance go to the first bucket in file order (bucket-sorted), so the choice
  // does not depend on the order entries were tuned in.
  for (const auto& entry : entries) {
    const int distance = entry.bucket.distance(wanted);
    if (best_distance < 0 || distance < best_distance) {
      best_distance = distance;
      chosen = entry.bucket;
    }
  }
  for (const auto& entry : entries)
    if (entry.bucket == chosen) out.push_back(&entry);
  std::stable_sort(out.begin(), out.end(), [&](const ConfigEntry* a, const ConfigEntry* b) {
    return shape_distance(a->problem, problem) < shape_distance(b->problem, problem);
  });
  return out;
}

const AutoMeasurement* TunedConfig::nearest_auto(const Problem& problem) const {
  const Bucket wanted = Bucket::of(problem);
  const AutoMeasurement* best = nullptr;
  double best_shape = 0;
  for (const AutoMeasurement& measured : auto_table) {
    // Only the problem's own N and K classes: a table that measured other shape classes says
    // nothing about this one, and the built-in order is the better guess there. Its M class,
    // or any M class above 1M points when the problem is there too: past 1M points every
    // variant fills the GPU and the order is each point's cost (H200, mid-n.json at 76de9f5
    // against mainstream-suite.json's 16M rows and registers-multik-/tensor-multik-N32-K8-M10M.json
    // at 7ab2d42: at N=32 the order and the ratio held, K=8 registers-multik 0.331 ms against tensor-multik's 0.633 at 8M, 0.401
    // against 0.785 at 10M; gemm-window 1.35x ahead of registers-multik at K=64 16M, 1.99x at
    // K=48 8M). Below 1M, launch and latency decide, so the class must match there.
    const Bucket at = Bucket::of(measured.problem);
    if (at.n_class != wanted.n_class || at.k_class != wanted.k_class) continue;
    const bool same_m = at.m_class == wanted.m_class;
    if (!same_m && (at.m_class == 0 || wanted.m_class == 0)) continue;
    // A shape of the problem's own bucket comes before any of another M class.
    const double shape = shape_distance(measured.problem, problem) + (same_m ? 0.0 : 1e6);
    if (!best || shape < best_shape) {
      best = &measured;
      best_shape = shape;
    }
  }
  return best;
}

json config_to_json(const TunedConfig& config) {
  json entries = json::array();
  for (const auto& e : config.entries) {
    entries.push_back({{"bucket", e.bucket.label()},
                       {"problem", problem_to_json(e.problem)},
                       {"best", choice_to_json(e.best)},
                       {"runner_up", e.runner_up ? choice_to_json(*e.runner_up) : json(nullptr)},
                       {"chosen", e.chosen},
                       {"evals", {{"new", e.evals_new}, {"cached", e.evals_cached}, {"space_size", e.space_size}}},
                       {"strategy", e.strategy},
                       {"seed", e.seed},
                       {"budget", e.budget},
                       {"stop_reason", e.stop_reason},
                       {"date", e.date},
                       {"device", e.device}});
    if (!e.runner_up_chosen.empty()) entries.back()["runner_up_chosen"] = e.runner_up_chosen;
  }
  json out = {{"schema", config.schema}, {"device", config.device}, {"updated", config.updated}, {"entries", entries}};
  if (!config.auto_table.empty()) {
    json table = json::array();
    for (const AutoMeasurement& measured : config.auto_table) {
      json times = json::object();
      for (const auto& [variant, ms] : measured.times_ms) times[variant] = ms;
      table.push_back({{"problem", problem_to_json(measured.problem)}, {"times_ms", times}, {"source", measured.source}});
    }
    out["auto"] = table;
  }
  return out;
}

TunedConfig config_from_json(const json& j, const std::string& source) {
  if (!j.is_object()) throw InputError(source + ": a tuned config must be a JSON object");
  TunedConfig config;
  config.schema = text_field(j, "schema", source);
  if (config.schema != kConfigSchema)
    throw InputError(source + ": schema is '" + config.schema + "', expected " + kConfigSchema);
  config.device = j.value("device", json::object());
  if (!config.device.is_object()) throw InputError(source + ": 'device' must be an object");
  config.updated = text_field(j, "updated", source);
  if (!j.contains("entries") || !j.at("entries").is_array()) throw InputError(source + ": 'entries' must be an array");
  size_t index = 0;
  for (const json& e : j.at("entries")) {
    const std::string where = source + ": entries[" + std::to_string(index++) + "]";
    if (!e.is_object()) throw InputError(where + ": not an object");
    ConfigEntry entry;
    if (!e.contains("bucket") || !e.at("bucket").is_string()) throw InputError(where + ": 'bucket' must be a string");
    if (!e.contains("problem")) throw InputError(where + ": missing 'problem'");
    if (!e.contains("best")) throw InputError(where + ": missing 'best'");
    entry.bucket = Bucket::parse(e.at("bucket").get<std::string>());
    entry.problem = problem_from_json(e.at("problem"), where);
    entry.best = choice_from_json(e.at("best"), where + ".best");
    if (e.contains("runner_up") && !e.at("runner_up").is_null())
      entry.runner_up = choice_from_json(e.at("runner_up"), where + ".runner_up");
    entry.chosen = text_field(e, "chosen", where);
    entry.runner_up_chosen = text_field(e, "runner_up_chosen", where);
    if (e.contains("evals") && !e.at("evals").is_null()) {
      const json& evals = e.at("evals");
      if (!evals.is_object()) throw InputError(where + ": 'evals' must be an object");
      entry.evals_new = static_cast<size_t>(count_field(evals, "new", where + ".evals"));
      entry.evals_cached = static_cast<size_t>(count_field(evals, "cached", where + ".evals"));
      entry.space_size = static_cast<size_t>(count_field(evals, "space_size", where + ".evals"));
    }
    entry.strategy = text_field(e, "strategy", where);
    entry.seed = count_field(e, "seed", where);
    entry.budget = text_field(e, "budget", where);
    entry.stop_reason = text_field(e, "stop_reason", where);
    entry.date = text_field(e, "date", where);
    entry.device = text_field(e, "device", where);
    config.entries.push_back(std::move(entry));
  }
  if (j.contains("auto") && !j.at("auto").is_null()) {
    if (!j.at("auto").is_array()) throw InputError(source + ": 'auto' must be an array");
    index = 0;
    for (const json& a : j.at("auto")) {
      const std::string where = source + ": auto[" + std::to_string(index++) + "]";
      if (!a.is_object()) throw InputError(where + ": not an object");
      if (!a.contains("problem")) throw InputError(where + ": missing 'problem'");
      if (!a.contains("times_ms") || !a.at("times_ms").is_object() || a.at("times_ms").empty())
        throw InputError(where + ": 'times_ms' must be an object of variant: median ms, not empty");
      AutoMeasurement measured;
      measured.problem = problem_from_json(a.at("problem"), where);
      for (const auto& [variant, ms] : a.at("times_ms").items()) {
        if (!ms.is_number() || !(ms.get<double>() > 0) || !std::isfinite(ms.get<double>()))
          throw InputError(where + ".times_ms." + variant + ": must be a positive number of ms, got " + ms.dump());
        measured.times_ms.emplace_back(variant, ms.get<double>());
      }
      std::stable_sort(measured.times_ms.begin(), measured.times_ms.end(),
                       [](const auto& x, const auto& y) { return x.second < y.second; });
      measured.source = text_field(a, "source", where);
      config.auto_table.push_back(std::move(measured));
    }
  }
  return config;
}

TunedConfig parse_config_text(const std::string& text, const std::string& source) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::exception& error) {
    throw InputError("tuned config " + source + " is not valid JSON: " + error.what());
  }
  return config_from_json(document, source);
}

TunedConfig load_config(const std::string& path) {
  require_regular_file(path, "tuned config", /*pipes=*/true);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open tuned config " + path + ": " + std::strerror(errno));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_config_text(buffer.str(), path);
}

std::shared_ptr<const TunedConfig> load_config_cached(const std::string& path) {
  struct Version {
    std::uintmax_t size = 0;
    std::filesystem::file_time_type modified;
    std::shared_ptr<const TunedConfig> config;
  };
  static std::mutex mutex;
  static std::map<std::string, Version> versions;
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  const auto modified = error ? std::filesystem::file_time_type{} : std::filesystem::last_write_time(path, error);
  if (error) return std::make_shared<const TunedConfig>(load_config(path));  // load_config names the problem
  std::lock_guard<std::mutex> lock(mutex);
  auto found = versions.find(path);
  if (found != versions.end() && found->second.size == size && found->second.modified == modified)
    return found->second.config;
  auto config = std::make_shared<const TunedConfig>(load_config(path));
  versions[path] = Version{size, modified, config};
  return config;
}

void save_config_atomically(const std::string& path, const TunedConfig& config) {
  write_text_atomically(path, config_to_json(config).dump(2) + "\n");
}

std::string default_config_dir() {
  if (const char* dir = std::getenv("MKBENCH_CONFIG_DIR"); dir && *dir) return dir;
  std::string source = source_data_path("configs");
  return source.empty() ? std::string("configs") : source;
}

std::string default_config_path(const std::string& device_slug) {
  return (std::filesystem::path(default_config_dir()) / (device_slug + ".json")).string();
}

std::string default_cache_path(const std::string& device_slug) {
  return (std::filesystem::path(default_config_dir()) / "cache" / (device_slug + ".jsonl")).string();
}

std::optional<std::string> find_config_for(const std::string& device_slug) {
  std::error_code error;
  if (const char* dir = std::getenv("MKBENCH_CONFIG_DIR"); dir && *dir) {
    const auto candidate = std::filesystem::path(dir) / (device_slug + ".json");
    if (std::filesystem::is_regular_file(candidate, error)) return candidate.string();
  }
  std::string source = source_data_path("configs/" + device_slug + ".json");
  if (!source.empty()) return source;
  return std::nullopt;
}

}  // namespace mk::tuner
