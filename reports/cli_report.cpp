// `mkbench report RESULTS.json... [--format md|csv|html] [--out FILE] [--merge] [--price ...]
// (or FIT.json... from `mkbench fit`: its per-K table and curves, reports/fit_report.hpp)`
#include <iostream>
#include <memory>

#include "harness/command.hpp"
#include "core/errors.hpp"
#include "reports/fit_report.hpp"
#include "reports/report.hpp"

namespace {

struct ReportArguments {
  std::vector<std::string> paths;
  std::string out_path;
  std::string prices;
  mk::reports::ReportOptions options;
};

std::function<int()> setup_report(CLI::App& sub) {
  auto args = std::make_shared<ReportArguments>();
  sub.add_option("results", args->paths, "Result files (reports/SCHEMA.md), or fit.json files of mkbench fit")->required();
  sub.add_option("--format", args->options.format, "md (seed tables), csv (spreadsheet rows) or html "
                                                   "(one self-contained page with plots)");
  sub.add_option("--out", args->out_path, "Write here (atomically) instead of stdout");
  sub.add_flag("--merge", args->options.merge,
               "One cross-GPU table over all files (the seed's Table 3): Gops/s and ms per file, "
               "speedup against the first file");
  sub.add_option("--price", args->prices,
                 "Relative price per GPU for the cost-performance column, e.g. H100=1,T4=0.17 "
                 "(matched by substring of the device name or slug)");
  sub.add_option("--published", args->options.published_table1,
                 "Published seed Table 1 JSON shown beside table1 results (default: "
                 "reports/published/table1_t4.json; \"none\" leaves it out)");
  sub.add_option("--published-table3", args->options.published_table3,
                 "Published seed Table 3 JSON (T4, A100) shown beside a table3 file (default: "
                 "reports/published/table3_t4_a100.json; \"none\" leaves it out)");
  sub.add_flag("--require-plots", args->options.require_plots,
               "html: exit 2 if the plots cannot be drawn (no python3/matplotlib)");
  return [args]() -> int {
    try {
      if (!args->prices.empty()) args->options.prices = mk::reports::parse_prices(args->prices);
    } catch (const mk::Error& error) {
      std::cerr << "mkbench report: " << error.what() << "\n";
      return error.exit_code;
    }
    // fit.json files (mkbench fit) get their per-K table and curves; they do not mix with result files.
    size_t fits = 0;
    for (const auto& path : args->paths) fits += mk::reports::is_fit_file(path) ? 1 : 0;
    if (fits > 0 && fits < args->paths.size()) {
      std::cerr << "mkbench report: fit.json files and result files cannot be reported together\n";
      return mk::kExitBadInput;
    }
    if (fits > 0)
      return mk::reports::run_fit_report(args->paths, args->options, args->out_path, std::cout, std::cerr);
    return mk::reports::run_report(args->paths, args->options, args->out_path, std::cout, std::cerr);
  };
}

}  // namespace

MKBENCH_REGISTER_COMMAND("report", "Seed-style tables (md), CSV, or a self-contained HTML page with plots",
                         setup_report);
