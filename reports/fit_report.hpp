#pragma once
// `mkbench report fit.json`: the per-K table of a `mkbench fit` (docs/fit.md) as Markdown, CSV,
// or HTML with the per-K curves drawn by reports/fit_plots.py (matplotlib), the way the
// results reports draw theirs. Reads fit.json as JSON only: reports/ does not include apps/.
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace mk::reports {

inline constexpr const char* kFitReportSchema = "mkbench.fit/1";

// True when the file is a JSON object whose "schema" is mkbench.fit/1 (false for anything else,
// including unreadable files: the results path then reports those).
bool is_fit_file(const std::string& path);

// Throws InputError naming the file and the missing or ill-typed key.
nlohmann::json load_fit_file(const std::string& path);

ReportTable fit_table(const LoadedResults& file);
std::string render_fit_csv(const std::vector<LoadedResults>& files);

// Where fit_plots.py lives: beside plots.py.
std::string locate_fit_plots_script();

// The whole command for fit files; same contract as run_report.
int run_fit_report(const std::vector<std::string>& paths, const ReportOptions& options, const std::string& out_path,
                   std::ostream& out, std::ostream& err);

}  // namespace mk::reports
