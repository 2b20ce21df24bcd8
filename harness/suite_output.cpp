// How a suite's results are printed: the generic results table, or Table 1 of seed 000
// beside the published T4 figures.
#include <fstream>
#include <iostream>
#include <sstream>

#include "harness/build_info.hpp"
#include "harness/suite.hpp"

namespace mk {
namespace {

nlohmann::json load_published(const SuiteDefinition& suite) {
  std::string relative = suite.published.empty() ? "reports/published/table1_t4.json" : suite.published;
  const std::string path = source_data_path(relative);
  if (path.empty()) return nullptr;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    auto document = nlohmann::json::parse(text.str());
    if (document.is_object() && document.contains("rows") && document.at("rows").is_array()) return document;
  } catch (const std::exception&) {
  }
  std::cerr << "mkbench: warning: ignoring malformed published table " << path << "\n";
  return nullptr;
}

}  // namespace

void print_suite_output(std::ostream& out, const SuiteDefinition& suite, const ResultFile& file, OutputFormat format,
                        bool cpu_fallback) {
  if (cpu_fallback && suite.report_kind == "table1" && format != OutputFormat::Json)
    std::cerr << "mkbench: the table1 view needs the GPU rows; printing the CPU baseline rows instead\n";
  if (format == OutputFormat::Json || suite.report_kind != "table1" || cpu_fallback) {
    print_results(out, file, format);
    if (suite.report_kind != "generic" && suite.report_kind != "table1" && format != OutputFormat::Json)
      std::cerr << "mkbench: `mkbench report` on the results file renders the " << suite.report_kind << " view\n";
    return;
  }
  const nlohmann::json published = load_published(suite);
  if (format == OutputFormat::Table || format == OutputFormat::Markdown) {
    std::string device = file.device.value("name", std::string("unknown device"));
    out << "Table 1 (seed 000) on " << device << "\n";
    if (published.is_object())
      out << "T4 columns: published (T4, seed 000) — another GPU"
          << (published.contains("source") ? " [" + published.at("source").dump() + "]" : std::string()) << "\n";
    out << "\n";
  }
  print_table(out, table1_view(file.rows, published), format);
}

TextTable table1_view(const std::vector<ResultRow>& rows, const nlohmann::json& published) {
  TextTable table;
  table.header = {"Grid", "Points/thread", "Time ms", "Gops/s", "% FP32 peak", "best"};
  table.right_align = {true, true, true, true, true, false};
  const bool with_published = published.is_object() && published.contains("rows") && published.at("rows").is_array();
  if (with_published) {
    for (const char* h : {"T4 grid", "T4 points/thread", "T4 time ms", "T4 Gops/s"}) {
      table.header.push_back(h);
      table.right_align.push_back(true);
    }
  }
  double best = 0;
  size_t best_index = rows.size();
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].ok() && (best_index == rows.size() || rows[i].summary.median_ms < best)) {
      best = rows[i].summary.median_ms;
      best_index = i;
    }
  auto int_param = [](const Params& p, const char* key) -> std::optional<int64_t> {
    auto it = p.find(key);
    if (it == p.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int64_t>();
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const ResultRow& row = rows[i];
    // 0 (or absent) means "derived from the other one", as registers-multik declares.
    auto positive = [](std::optional<int64_t> v) { return v && *v > 0 ? v : std::nullopt; };
    auto grid = positive(int_param(row.params, "grid"));
    const auto block = positive(int_param(row.params, "block"));
    auto ppt = positive(int_param(row.params, "ppt"));
    if (!ppt) ppt = positive(int_param(row.params, "points_per_thread"));
    if (!ppt && grid && block) ppt = (row.problem.m + *grid * *block - 1) / (*grid * *block);
    if (!grid && ppt && block) grid = (row.problem.m + *ppt * *block - 1) / (*ppt * *block);
    std::vector<std::string> cells = {grid ? std::to_string(*grid) : "-", ppt ? std::to_string(*ppt) : "-"};
    if (row.ok()) {
      cells.push_back(format_number(row.summary.median_ms, 3));
      cells.push_back(format_number(row.metrics.gops, 1));
      cells.push_back(format_number(row.metrics.pct_fp32_theoretical, 1));
      cells.push_back(i == best_index ? "*" : "");
    } else {
      cells.insert(cells.end(), {"-", "-", "-", row.status});
    }
    if (with_published) {
      const auto& pub = published.at("rows");
      if (i < pub.size() && pub[i].is_object()) {
        auto num = [&](const char* key, int decimals) {
          const auto& r = pub[i];
          if (!r.contains(key) || !r.at(key).is_number()) return std::string("-");
          return r.at(key).is_number_integer() ? std::to_string(r.at(key).get<int64_t>())
                                               : format_number(r.at(key).get<double>(), decimals);
        };
        cells.insert(cells.end(), {num("grid", 0), num("points_per_thread", 0), num("time_ms", 2), num("gops", 2)});
      } else {
        cells.insert(cells.end(), {"", "", "", ""});
      }
    }
    table.rows.push_back(std::move(cells));
  }
  return table;
}

}  // namespace mk
