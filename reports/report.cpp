// `mkbench report` (reports/report.hpp): the command itself (load, build the tables, render, write), the
// --price parser and where the published seed tables live. The tables are built in
// reports/report_tables.cpp and the table*_*.cpp files, rendered by render_markdown_csv.cpp and,
// with plots, plot_rendering.cpp.
#include "reports/report.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/errors.hpp"
#include "harness/results.hpp"
#include "reports/results_io.hpp"

namespace mk::reports {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------
// Public entry points

std::vector<std::pair<std::string, double>> parse_prices(const std::string& text) {
  std::vector<std::pair<std::string, double>> prices;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    if (item.empty()) continue;
    const size_t equals = item.find('=');
    if (equals == std::string::npos || equals == 0)
      throw InputError("--price entry \"" + item + "\" is not DEVICE=PRICE (e.g. H100=1,T4=0.17)");
    const std::string value_text = item.substr(equals + 1);
    double value = 0;
    size_t used = 0;
    try {
      value = std::stod(value_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value_text.size() || !(value > 0) || !std::isfinite(value))
      throw InputError("--price entry \"" + item + "\": the price must be a positive number");
    prices.push_back({item.substr(0, equals), value});
  }
  if (prices.empty()) throw InputError("--price is empty; expected e.g. H100=1,T4=0.17");
  return prices;
}

std::string default_published_path(const std::string& file_name) {
  if (const char* dir = std::getenv("MKBENCH_REPORTS_DIR"); dir && *dir)
    return (fs::path(dir) / "published" / file_name).string();
#ifdef MKBENCH_SOURCE_DIR
  return (fs::path(MKBENCH_SOURCE_DIR) / "reports" / "published" / file_name).string();
#else
  return "reports/published/" + file_name;
#endif
}

std::string default_published_table1_path() { return default_published_path("table1_t4.json"); }

int run_report(const std::vector<std::string>& paths, ReportOptions options,
               const std::string& out_path, std::ostream& out, std::ostream& err) {
  try {
    if (options.format != "md" && options.format != "csv" && options.format != "html")
      throw InputError("--format must be md, csv or html (got \"" + options.format + "\")");
    if (!out_path.empty()) mk::check_writable(out_path);  // before rendering (plots take seconds)
    std::vector<LoadedResults> files;
    for (const auto& path : paths) files.push_back({path, load_results_file(path)});
    std::string text;
    if (options.format == "csv") {
      for (const auto& file : files)
        if (file.doc.at("rows").empty()) throw InputError(file.path + ": has no rows to report");
      text = render_csv(files);
    } else if (options.format == "md") {
      text = render_markdown(build_report_tables(files, options));
    } else {
      options.all_rows = true;
      const auto tables = build_report_tables(files, options);
      const std::string published =
          options.published_table1.empty() ? default_published_table1_path() : options.published_table1;
      const PlotOutcome plots = render_plots(files, published);
      if (plots.plots.empty()) {
        if (options.require_plots) {
          err << "mkbench report: plots unavailable and --require-plots was given: "
              << plots.unavailable << "\n";
          return kExitBadInput;
        }
        err << "mkbench report: note: the html has tables only; plots unavailable: "
            << plots.unavailable << "\n";
      }
      text = render_html(tables, plots, files);
    }
    if (out_path.empty())
      out << text;
    else
      mk::write_text_atomically(out_path, text);
    return kExitOk;
  } catch (const Error& error) {
    err << "mkbench report: " << error.what() << "\n";
    return error.exit_code;
  } catch (const std::exception& error) {
    err << "mkbench report: " << error.what() << "\n";
    return kExitBadInput;
  }
}

}  // namespace mk::reports
