// The text renderings of `mkbench report`: the tables as Markdown (the seed's layout) and every
// result row as CSV (a spreadsheet's columns, schema order first). html is reports/plot_rendering.cpp's.
#include "reports/report.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "reports/report_rows.hpp"
#include "reports/results_io.hpp"

namespace mk::reports {

using nlohmann::json;

std::string render_markdown(const std::vector<ReportTable>& tables) {
  std::ostringstream md;
  for (const auto& table : tables) {
    md << "## " << table.title << "\n\n";
    for (const auto& line : table.provenance) md << "_Provenance — " << line << "_\n\n";
    auto cell_text = [](std::string text) {
      std::string out;
      for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
      return out;
    };
    md << "|";
    for (const auto& h : table.header) md << " " << cell_text(h) << " |";
    md << "\n|";
    for (size_t c = 0; c < table.header.size(); ++c)
      md << (c < table.numeric.size() && table.numeric[c] ? "---:|" : "---|");
    md << "\n";
    for (size_t r = 0; r < table.rows.size(); ++r) {
      const bool bold = r < table.bold.size() && table.bold[r];
      md << "|";
      for (const auto& cell : table.rows[r]) {
        const bool mark = bold && !cell.empty() && cell != detail::kMissing;
        md << " " << (mark ? "**" : "") << cell_text(cell) << (mark ? "**" : "") << " |";
      }
      md << "\n";
    }
    md << "\n";
    for (const auto& note : table.notes) md << note << "\n\n";
  }
  return md.str();
}

namespace {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_value(const json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  return value.dump();
}

// Known columns first, in schema order; anything newer appended so no metric is dropped.
std::vector<std::string> union_of_keys(const std::vector<LoadedResults>& files, const char* section,
                                       std::vector<std::string> ordered) {
  std::set<std::string> extra;
  for (const auto& file : files)
    for (const json& row : file.doc["rows"])
      if (row.contains(section) && row[section].is_object())
        for (const auto& item : row[section].items())
          if (std::find(ordered.begin(), ordered.end(), item.key()) == ordered.end()) extra.insert(item.key());
  ordered.insert(ordered.end(), extra.begin(), extra.end());
  return ordered;
}

}  // namespace

std::string render_csv(const std::vector<LoadedResults>& files) {
  const auto summary_keys = union_of_keys(
      files, "summary", {"count", "median_ms", "min_ms", "max_ms", "mean_ms", "q1_ms", "q3_ms", "iqr_ms"});
  const auto metric_keys = union_of_keys(
      files, "metrics",
      {"gops", "effective_gbps", "pct_fp32_theoretical", "pct_fp32_measured", "pct_dram_theoretical",
       "pct_dram_measured", "arithmetic_intensity", "roofline_bound_ms", "roofline_limit"});
  std::vector<std::string> header = {"file", "suite", "created", "device_name", "device_slug",
                                     "git_sha", "build_type", "name", "variant", "params", "n",
                                     "k_min", "k_max", "sum_k", "m", "batch", "dataset", "status", "reason",
                                     "clock", "warmup", "l2_flushed", "samples"};
  for (const auto& key : summary_keys) header.push_back(key);
  for (const auto& key : metric_keys) header.push_back(key);
  header.push_back("verify");

  std::ostringstream csv;
  for (size_t i = 0; i < header.size(); ++i) csv << (i ? "," : "") << csv_field(header[i]);
  csv << "\n";
  for (const auto& file : files) {
    const json& doc = file.doc;
    const json build = doc.contains("build") && doc["build"].is_object() ? doc["build"] : json::object();
    for (const json& row : doc["rows"]) {
      auto section = [&](const char* key) {
        return row.contains(key) && row[key].is_object() ? row[key] : json::object();
      };
      const json problem = section("problem"), timing = section("timing");
      const json summary = section("summary"), metrics = section("metrics");
      auto field = [](const json& object, const std::string& key) {
        return object.contains(key) ? csv_value(object[key]) : std::string();
      };
      std::vector<std::string> cells = {
          file.path, csv_value(doc.value("suite", json())), field(doc, "created"),
          device_label(doc), device_slug(doc), field(build, "git_sha"), field(build, "build_type"),
          row_name(row), field(row, "variant"), params_text(detail::params_of(row)), field(problem, "n"),
          field(problem, "k_min"), field(problem, "k_max"), field(problem, "sum_k"), field(problem, "m"),
          problem.contains("batch") ? csv_value(problem["batch"]) : std::string("1"),
          row.contains("dataset") ? row["dataset"].dump() : "", row_status(row), field(row, "reason"),
          field(timing, "clock"), field(timing, "warmup"), field(timing, "l2_flushed"),
          std::to_string(row_samples_ms(row).size())};
      for (const auto& key : summary_keys) cells.push_back(field(summary, key));
      for (const auto& key : metric_keys) cells.push_back(field(metrics, key));
      std::string verify;
      if (row.contains("verify") && !row["verify"].is_null()) verify = row["verify"].dump();
      cells.push_back(verify);
      for (size_t i = 0; i < cells.size(); ++i) csv << (i ? "," : "") << csv_field(cells[i]);
      csv << "\n";
    }
  }
  return csv.str();
}

}  // namespace mk::reports
