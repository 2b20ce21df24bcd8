// Formatting and row views shared by the report's tables (reports/report_rows.hpp).
#include "reports/report_rows.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "reports/results_io.hpp"

namespace mk::reports::detail {

using nlohmann::json;
namespace fs = std::filesystem;

std::string fixed(double value, int decimals) {
  if (!std::isfinite(value)) return kMissing;
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string ms_text(double ms) {
  if (!std::isfinite(ms)) return kMissing;
  const double magnitude = std::fabs(ms);
  return fixed(ms, magnitude >= 100 ? 2 : magnitude >= 1 ? 3 : 4);
}

std::string speedup_text(double speedup) {
  if (!std::isfinite(speedup) || speedup <= 0) return kMissing;
  return fixed(speedup, speedup >= 100 ? 0 : speedup >= 10 ? 1 : 2) + "x";
}

std::string lower(std::string text) {
  for (char& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string short_device(const json& doc) {
  std::string name = device_label(doc);
  for (const char* prefix : {"NVIDIA ", "Tesla "})
    if (name.rfind(prefix, 0) == 0 && name.size() > std::string(prefix).size())
      name = name.substr(std::string(prefix).size());
  return name;
}

double mean_of(const std::vector<double>& values) {
  double sum = 0;
  int count = 0;
  for (double v : values)
    if (std::isfinite(v)) sum += v, ++count;
  return count ? sum / count : NAN;
}

ProblemKey problem_of(const json& row) {
  const json problem = row.contains("problem") && row["problem"].is_object() ? row["problem"] : json::object();
  ProblemKey key;
  key.n = int64_t(number_or(problem, "n", 0));
  key.k_min = int64_t(number_or(problem, "k_min", number_or(problem, "k", 0)));
  key.k_max = int64_t(number_or(problem, "k_max", double(key.k_min)));
  key.m = int64_t(number_or(problem, "m", 0));
  key.batch = int64_t(number_or(problem, "batch", 1));
  return key;
}

double row_gops(const json& row) {
  return row.contains("metrics") ? number_or(row["metrics"], "gops", NAN) : NAN;
}

const json& params_of(const json& row) {
  static const json empty = json::object();
  return row.contains("params") && row["params"].is_object() ? row["params"] : empty;
}

std::string role_tag(const json& row) {
  std::string tag = string_or(row, "suite_role", "");
  if (tag.empty()) tag = string_or(row, "k_mode", "");
  return lower(tag);
}

bool is_cpu_row(const json& row) {
  const std::string variant = lower(string_or(row, "variant", ""));
  return role_tag(row) == "cpu" || variant.rfind("cpu", 0) == 0;
}

std::vector<const json*> ok_rows(const json& doc) {
  std::vector<const json*> rows;
  for (const json& row : doc["rows"])
    if (row_status(row) == "ok" && std::isfinite(row_median_ms(row))) rows.push_back(&row);
  return rows;
}

std::string dataset_summary(const std::vector<const json*>& rows) {
  std::vector<std::string> seen;
  for (const json* row : rows) {
    const json dataset = row->contains("dataset") ? (*row)["dataset"] : json::object();
    const std::string text = describe_dataset(dataset);
    if (std::find(seen.begin(), seen.end(), text) == seen.end()) seen.push_back(text);
  }
  if (seen.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < seen.size() && i < 3; ++i) out += (i ? "; " : "") + seen[i];
  if (seen.size() > 3) out += "; +" + std::to_string(seen.size() - 3) + " more";
  return out;
}

std::string provenance_line(const LoadedResults& file, const std::vector<const json*>& rows) {
  const json& doc = file.doc;
  const json& device = doc["device"];
  const json build = doc.contains("build") && doc["build"].is_object() ? doc["build"] : json::object();
  std::ostringstream line;
  line << "device: " << device_label(doc);
  const std::string slug = device_slug(doc);
  std::string details = slug;
  const std::string driver = string_or(device, "driver", "");
  const std::string runtime = string_or(device, "cuda_runtime", "");
  if (!driver.empty()) details += (details.empty() ? "" : ", ") + std::string("driver ") + driver;
  if (!runtime.empty()) details += (details.empty() ? "" : ", ") + std::string("CUDA ") + runtime;
  if (!details.empty()) line << " (" << details << ")";
  line << " · commit: " << string_or(build, "git_sha", "unknown");
  const std::string build_type = string_or(build, "build_type", "");
  if (!build_type.empty()) line << " (" << build_type << ")";
  line << " · dataset: " << dataset_summary(rows);
  line << " · date: " << string_or(doc, "created", "unknown");
  line << " · file: " << fs::path(file.path).filename().string();
  return line.str();
}

// "3..7" / "3...7" / "5" -> (kmin, kmax); nullopt when unreadable.
std::optional<std::pair<int64_t, int64_t>> parse_k_text(const json& value) {
  if (value.is_number_integer()) return std::make_pair(value.get<int64_t>(), value.get<int64_t>());
  if (!value.is_string()) return std::nullopt;
  const std::string text = value.get<std::string>();
  try {
    const size_t dots = text.find("..");
    if (dots == std::string::npos) {
      const int64_t k = std::stoll(text);
      return std::make_pair(k, k);
    }
    const size_t end = text.find_first_not_of('.', dots);
    return std::make_pair(int64_t(std::stoll(text.substr(0, dots))), int64_t(std::stoll(text.substr(end))));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string load_text_or_empty(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace mk::reports::detail
