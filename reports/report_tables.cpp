// build_report_tables: which tables a results file gets (by its suite), and the generic one-row-per-
// result table every file can have.
#include "reports/report_tables.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "reports/report_rows.hpp"
#include "reports/results_io.hpp"

namespace mk::reports::detail {

using nlohmann::json;
namespace fs = std::filesystem;

ReportTable generic_table(const LoadedResults& file) {
  ReportTable table;
  const std::string suite = string_or(file.doc, "suite", "");
  table.title = (suite.empty() ? std::string("Results") : "Suite " + suite) + " — " +
                short_device(file.doc);
  std::vector<const json*> all;
  for (const json& row : file.doc["rows"]) all.push_back(&row);
  table.provenance.push_back(provenance_line(file, all));
  table.header = {"Row", "Status", "Median (ms)", "Min (ms)", "Q3 (ms)", "Gops/s", "GB/s",
                  "% FP32", "% DRAM", "Bound"};
  table.numeric = {false, false, true, true, true, true, true, true, true, false};
  for (const json* row : all) {
    const json summary = row->contains("summary") && (*row)["summary"].is_object() ? (*row)["summary"] : json::object();
    const json metrics = row->contains("metrics") && (*row)["metrics"].is_object() ? (*row)["metrics"] : json::object();
    std::string status = row_status(*row);
    const std::string reason = string_or(*row, "reason", "");
    if (status != "ok" && !reason.empty()) status += ": " + reason;
    // 0 means "no peak known" (SCHEMA.md), e.g. on a CPU-only machine.
    auto percent = [&](const char* measured, const char* theoretical) {
      const double value = number_or(metrics, measured, 0) > 0 ? number_or(metrics, measured, NAN)
                                                               : number_or(metrics, theoretical, NAN);
      return value > 0 ? value : NAN;
    };
    const double pct_fp32 = percent("pct_fp32_measured", "pct_fp32_theoretical");
    const double pct_dram = percent("pct_dram_measured", "pct_dram_theoretical");
    std::string bound = string_or(metrics, "roofline_limit", "");
    if (bound.empty()) bound = kMissing;
    // A refused or failed row has no timing: zeros in its summary must not read as 0 ms.
    const bool measured = row_status(*row) == "ok";
    const double none = NAN;
    table.rows.push_back({row_name(*row), status, ms_text(measured ? row_median_ms(*row) : none),
                          ms_text(measured ? number_or(summary, "min_ms", NAN) : none),
                          ms_text(measured ? number_or(summary, "q3_ms", NAN) : none),
                          fixed(measured ? number_or(metrics, "gops", NAN) : none, 2),
                          fixed(measured ? number_or(metrics, "effective_gbps", NAN) : none, 1),
                          fixed(measured ? pct_fp32 : none, 1), fixed(measured ? pct_dram : none, 1),
                          measured ? bound : std::string(kMissing)});
    table.bold.push_back(false);
  }
  table.notes.push_back("% FP32 and % DRAM use the measured peak (mkbench peak) when the file has one, "
                        "else the theoretical peak; — where no peak is known.");
  return table;
}

}  // namespace mk::reports::detail

namespace mk::reports {

std::vector<ReportTable> build_report_tables(const std::vector<LoadedResults>& files,
                                             const ReportOptions& options) {
  if (files.empty()) throw InputError("no result files given");
  for (const auto& file : files)
    if (file.doc.at("rows").empty()) throw InputError(file.path + ": has no rows to report");
  std::vector<ReportTable> tables;
  if (options.merge) {
    tables.push_back(detail::merged_table(files, options));
    return tables;
  }
  for (const auto& file : files) {
    const std::string suite = string_or(file.doc, "suite", "");
    std::vector<ReportTable> special;
    if (suite == "table1") special = detail::table1_tables(file, options);
    else if (suite == "table2") special = detail::table2_tables(file);
    else if (suite == "table3") {
      const detail::PublishedTable3 published = detail::load_published_table3(
          options.published_table3.empty() ? default_published_path("table3_t4_a100.json") : options.published_table3);
      special = {detail::merged_table({file}, options, &published)};
    }
    const bool has_special = !special.empty();
    if (!has_special) special.push_back(detail::generic_table(file));
    for (auto& table : special) tables.push_back(std::move(table));
    if (has_special && options.all_rows) {
      ReportTable all = detail::generic_table(file);
      all.title = "All rows — " + all.title;
      tables.push_back(std::move(all));
    }
  }
  return tables;
}

}  // namespace mk::reports
