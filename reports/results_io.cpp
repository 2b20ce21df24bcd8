#include "reports/results_io.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"
#include "core/input_file.hpp"
#include "harness/results.hpp"
#include "reports/stats.hpp"

namespace mk::reports {

using nlohmann::json;

json parse_results_text(const std::string& text, const std::string& origin) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& error) {  // parse_error, and out_of_range for a number like 1e999
    throw InputError(origin + ": not valid JSON (" + error.what() + ")");
  }
  if (!doc.is_object()) throw InputError(origin + ": expected a JSON object at the top level");
  const auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_string())
    throw InputError(origin + ": no \"schema\" field; expected \"" + mk::kResultsSchema +
                     "\" (is this an mkbench result file?)");
  if (!mk::is_readable_results_schema(schema->get<std::string>()))
    throw InputError(origin + ": schema is \"" + schema->get<std::string>() + "\", this mkbench reads \"" +
                     mk::kResultsSchema + "\" and \"" + mk::kResultsSchemaV1 + "\"");
  const auto device = doc.find("device");
  if (device == doc.end() || !device->is_object())
    throw InputError(origin + ": missing \"device\" object");
  const auto rows = doc.find("rows");
  if (rows == doc.end() || !rows->is_array()) throw InputError(origin + ": missing \"rows\" array");
  for (size_t i = 0; i < rows->size(); ++i) {
    const json& row = (*rows)[i];
    if (!row.is_object()) throw InputError(origin + ": rows[" + std::to_string(i) + "] is not an object");
    if (!row.contains("variant") || !row["variant"].is_string())
      throw InputError(origin + ": rows[" + std::to_string(i) + "] has no \"variant\" string");
    for (const char* key : {"params", "problem", "dataset", "timing", "summary", "metrics"}) {
      if (row.contains(key) && !row[key].is_object() && !row[key].is_null())
        throw InputError(origin + ": rows[" + std::to_string(i) + "]." + key + " is not an object");
    }
    if (row.contains("timing") && row["timing"].is_object()) {
      const json& timing = row["timing"];
      for (const char* key : {"samples_ms", "sm_clock_mhz"}) {
        if (!timing.contains(key)) continue;
        if (!timing[key].is_array())
          throw InputError(origin + ": rows[" + std::to_string(i) + "].timing." + key + " is not an array");
        // A time or a clock is finite, not negative and within reason: compare took 1e308 ms
        // and -1 ms and printed -100 % and +inf % (a bad-input audit at 04dfbaa).
        for (const json& value : timing[key])
          if (!value.is_number() || !(value.get<double>() >= 0.0) || !(value.get<double>() <= 1e12))
            throw InputError(origin + ": rows[" + std::to_string(i) + "].timing." + key + " holds " + value.dump() +
                             ", not a number in [0, 1e12]");
      }
    }
  }
  return doc;
}

json load_results_file(const std::string& path) {
  mk::require_regular_file(path, "results file", /*pipes=*/true);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open for reading");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(path + ": read error");
  return parse_results_text(text.str(), path);
}

std::string dataset_digest_key(const json& dataset) {
  for (const char* key : {"xxh3_128", "sha256"})
    if (dataset.is_object() && dataset.contains(key) && dataset[key].is_string() &&
        !dataset[key].get<std::string>().empty())
      return key;
  return "";
}

bool same_file_across_digests(const json& a, const json& b) {
  const std::string key_a = dataset_digest_key(a), key_b = dataset_digest_key(b);
  if (key_a.empty() || key_b.empty() || key_a == key_b) return false;
  const auto file_name = [](const json& d) {
    return std::filesystem::path(string_or(d, "path", "")).filename().string();
  };
  return string_or(a, "format", "") == string_or(b, "format", "") && a.value("bytes", json()) == b.value("bytes", json()) &&
         file_name(a) == file_name(b);
}

std::string dataset_identity(const json& dataset) {
  if (!dataset.is_object()) return dataset.dump();
  if (!dataset_digest_key(dataset).empty()) {
    json identity = dataset;
    identity.erase("path");  // same bytes under another path are the same data
    return identity.dump();
  }
  return dataset.dump();  // nlohmann objects are key-sorted, so this is canonical
}

static std::string scalar_text(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

std::string describe_dataset(const json& dataset) {
  if (!dataset.is_object() || dataset.empty()) return "unknown dataset";
  const std::string kind = string_or(dataset, "kind", "");
  std::ostringstream text;
  if (kind == "file") {
    const std::string path = string_or(dataset, "path", "?");
    text << "file " << std::filesystem::path(path).filename().string();
    const std::string key = dataset_digest_key(dataset);
    if (!key.empty()) text << " " << key << "=" << string_or(dataset, key.c_str(), "").substr(0, 12);
    return text.str();
  }
  text << string_or(dataset, "generator", kind.empty() ? "dataset" : kind);
  if (dataset.contains("seed")) text << " seed=" << scalar_text(dataset["seed"]);
  if (dataset.contains("params") && dataset["params"].is_object())
    for (const auto& [key, value] : dataset["params"].items()) text << " " << key << "=" << scalar_text(value);
  return text.str();
}

// A shape field as text: whole numbers as integers, anything else (1e300 in a damaged file,
// which no integer type holds) as the number it is.
static std::string shape_text(const json& problem, const char* key) {
  const double value = number_or(problem, key, 0);
  if (std::isfinite(value) && std::fabs(value) < 9e18 && value == std::floor(value))
    return std::to_string(static_cast<int64_t>(value));
  std::ostringstream text;
  text << value;
  return text.str();
}

std::string row_name(const json& row) {
  const std::string name = string_or(row, "name", "");
  if (!name.empty()) return name;
  std::string label = string_or(row, "variant", "?");
  if (row.contains("problem") && row["problem"].is_object()) {
    const json& p = row["problem"];
    label += "/" + shape_text(p, "n") + "/" + shape_text(p, "k_min") + ".." + shape_text(p, "k_max");
  }
  if (row.contains("params")) label += "/" + params_text(row["params"]);
  return label;
}

std::string row_status(const json& row) { return string_or(row, "status", "ok"); }

static std::vector<double> timing_array(const json& row, const char* key) {
  std::vector<double> values;
  if (!row.contains("timing") || !row["timing"].is_object()) return values;
  const json& timing = row["timing"];
  if (!timing.contains(key) || !timing[key].is_array()) return values;
  for (const json& value : timing[key])
    if (value.is_number()) values.push_back(value.get<double>());
  return values;
}

std::vector<double> row_samples_ms(const json& row) { return timing_array(row, "samples_ms"); }
std::vector<double> row_sm_clocks(const json& row) {
  std::vector<double> clocks;
  for (double clock : timing_array(row, "sm_clock_mhz"))
    if (clock > 0) clocks.push_back(clock);  // 0 = "not reported for this sample"
  return clocks;
}

double row_median_ms(const json& row) {
  if (row.contains("summary") && row["summary"].is_object()) {
    const double median_ms = number_or(row["summary"], "median_ms", NAN);
    if (std::isfinite(median_ms)) return median_ms;
  }
  const auto samples = row_samples_ms(row);
  return samples.empty() ? NAN : median(samples);
}

double number_or(const json& object, const char* key, double fallback) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return fallback;
  return it->get<double>();
}

std::string string_or(const json& object, const char* key, const std::string& fallback) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}

std::string params_text(const json& params, const std::vector<std::string>& skip) {
  if (!params.is_object()) return "";
  std::string text;
  for (const auto& [key, value] : params.items()) {
    bool skipped = false;
    for (const auto& s : skip) skipped = skipped || s == key;
    if (skipped) continue;
    if (!text.empty()) text += ",";
    text += key + "=" + scalar_text(value);
  }
  return text;
}

std::string device_label(const json& results) {
  const json& device = results.contains("device") ? results["device"] : json::object();
  std::string name = string_or(device, "name", "");
  if (name.empty()) name = string_or(device, "slug", "unknown device");
  return name;
}

std::string device_slug(const json& results) {
  const json& device = results.contains("device") ? results["device"] : json::object();
  return string_or(device, "slug", "");
}

}  // namespace mk::reports
