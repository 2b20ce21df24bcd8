#pragma once
// `mkbench report`: turns result files into the seed's tables (Markdown), spreadsheet rows
// (CSV) or one self-contained HTML page with plots. Tables are built once as data
// (ReportTable) and rendered by format, so md and html always show the same numbers.
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace mk::reports {

struct LoadedResults {
  std::string path;
  nlohmann::json doc;  // validated by load_results_file
};

struct ReportTable {
  std::string title;
  std::vector<std::string> provenance;  // one line per source file
  std::vector<std::string> header;
  std::vector<bool> numeric;            // per column: right-aligned
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> bold;               // per row: the best row of table1
  std::vector<std::string> notes;       // printed under the table
};

struct ReportOptions {
  std::string format = "md";  // md | csv | html
  bool merge = false;         // one cross-device table over all files (seed Table 3)
  // Relative cloud price per device, matched by case-insensitive substring of the device
  // name or slug ("H100=1,T4=0.17").
  std::vector<std::pair<std::string, double>> prices;
  // Published seed Table 1 (another GPU) shown next to table1 results; empty = the
  // repository copy, "none" = leave the column out.
  std::string published_table1;
  // Published seed Table 3 (T4 and A100) shown beside a single table3 file; same rules.
  std::string published_table3;
  bool require_plots = false;
  // Append the one-row-per-result table after suite tables (html does, md stays the seed's).
  bool all_rows = false;
};

std::vector<std::pair<std::string, double>> parse_prices(const std::string& text);
std::string default_published_path(const std::string& file_name);  // reports/published/<file_name>
std::string default_published_table1_path();

std::vector<ReportTable> build_report_tables(const std::vector<LoadedResults>& files,
                                             const ReportOptions& options);

std::string render_markdown(const std::vector<ReportTable>& tables);
std::string render_csv(const std::vector<LoadedResults>& files);

struct Plot {
  std::string caption;
  std::string png;  // file bytes
};
struct PlotOutcome {
  std::vector<Plot> plots;
  std::string unavailable;  // why there are no plots (empty when plots were made)
};
// Runs reports/plots.py (matplotlib) in a temporary folder and reads back the PNGs.
// Never throws for a missing Python/matplotlib: that is reported in `unavailable`.
PlotOutcome render_plots(const std::vector<LoadedResults>& files, const std::string& published_path);
// The same for any plotting script of plots.py's interface (--in FILES --outdir DIR [extra],
// DIR/manifest.json): reports/fit_plots.py draws a fit.json's per-K curves, explore_plots.py an
// explore.json's accuracy distribution. Only the files' paths are read.
PlotOutcome run_plot_script(const std::string& script, const std::vector<LoadedResults>& files,
                            const std::vector<std::string>& extra_args);

std::string render_html(const std::vector<ReportTable>& tables, const PlotOutcome& plots,
                        const std::vector<LoadedResults>& files);

// The whole command: load, build, render, write (atomically to out_path, or to `out` when
// out_path is empty). Returns the exit code; messages go to `err`.
int run_report(const std::vector<std::string>& paths, ReportOptions options,
               const std::string& out_path, std::ostream& out, std::ostream& err);

std::string base64_encode(std::string_view bytes);
std::string html_escape(std::string_view text);

// Where plots.py lives: $MKBENCH_REPORTS_DIR, else the source tree this binary came from.
std::string locate_plots_script();
// $MKBENCH_PYTHON if set, else the first of python3, /usr/bin/python3 that imports
// matplotlib (pyenv shims often hide the distribution's python3-matplotlib). Empty if none;
// `tried` lists what was tried.
std::string find_python_with_matplotlib(std::string* tried = nullptr);

}  // namespace mk::reports
