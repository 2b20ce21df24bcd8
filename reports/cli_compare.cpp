// `mkbench compare BASELINE.json CANDIDATE.json [--threshold 5%] [--alpha 0.05]
//                  [--format md|table|json] [--force] [--ignore-params] [--allow-missing]`
// Exit 0: every baseline row judged, none slower; 1: a row slower or broken; 2: unusable input,
// including a baseline row that could not be judged (unless --allow-missing).
#include <iostream>
#include <memory>

#include "harness/command.hpp"
#include "core/errors.hpp"
#include "harness/results.hpp"
#include "reports/compare.hpp"
#include "reports/results_io.hpp"

namespace {

struct CompareArguments {
  std::string baseline, candidate;
  std::string threshold = "5%";
  double alpha = 0.05;
  std::string format = "md";
  std::string out_path;
  bool force = false;
  bool ignore_params = false;
  bool allow_missing = false;
};

std::function<int()> setup_compare(CLI::App& sub) {
  auto args = std::make_shared<CompareArguments>();
  sub.add_option("baseline", args->baseline, "Baseline result file")->required();
  sub.add_option("candidate", args->candidate, "Candidate result file")->required();
  sub.add_option("--threshold", args->threshold,
                 "Smallest change of the median that counts, e.g. 5% or 0.05 (default 5%)");
  sub.add_option("--alpha", args->alpha, "Significance level of the Mann-Whitney U test (default 0.05)");
  sub.add_option("--format", args->format, "md (CI log / PR comment), table (plain text) or json");
  sub.add_option("--out", args->out_path, "Also write the rendered comparison to this file");
  sub.add_flag("--force", args->force, "Compare even across devices or datasets");
  sub.add_flag("--ignore-params", args->ignore_params,
               "Expect parameter changes (a tuned-config run against a defaults run of the same suite): "
               "rows paired by variant, shape and dataset get their timing verdict, not PARAMS-CHANGED");
  sub.add_flag("--allow-missing", args->allow_missing,
               "Exit 0 even when baseline rows cannot be judged (missing in the candidate, not ok in the "
               "baseline, or without timing samples); they are still listed");
  return [args]() -> int {
    using namespace mk::reports;
    try {
      if (args->format != "md" && args->format != "table" && args->format != "json")
        throw mk::InputError("--format must be md, table or json (got \"" + args->format + "\")");
      if (!(args->alpha > 0 && args->alpha < 1))
        throw mk::InputError("--alpha must be between 0 and 1 (got " + std::to_string(args->alpha) + ")");
      CompareOptions options;
      options.threshold = parse_fraction(args->threshold, "--threshold");
      options.alpha = args->alpha;
      options.force = args->force;
      options.ignore_params = args->ignore_params;
      options.allow_missing = args->allow_missing;
      if (!args->out_path.empty()) mk::check_writable(args->out_path);
      const auto baseline = load_results_file(args->baseline);
      const auto candidate = load_results_file(args->candidate);
      const ComparisonReport report = compare_results(baseline, candidate, options);
      std::string text;
      if (args->format == "md") text = render_compare_markdown(report, options);
      else if (args->format == "table") text = render_compare_table(report, options);
      else text = compare_to_json(report, options).dump(2) + "\n";
      std::cout << text;
      if (!args->out_path.empty()) mk::write_text_atomically(args->out_path, text);
      if (report.regressions() > 0)
        std::cerr << "mkbench compare: regression: " << report.regressions() << " row(s) slower or broken\n";
      if (report.unjudged() > 0)
        std::cerr << "mkbench compare: " << report.unjudged() << " of " << report.baseline_rows
                  << " baseline rows could not be judged ("
                  << report.missing.size() << " missing in the candidate, " << report.count(Verdict::Skipped)
                  << " SKIPPED)" << (args->allow_missing ? "; accepted by --allow-missing\n"
                                                         : "; the gate cannot pass on them (--allow-missing accepts that)\n");
      return report.exit_code();
    } catch (const mk::Error& error) {
      std::cerr << "mkbench compare: " << error.what() << "\n";
      return mk::kExitBadInput;  // every refusal is "unusable input" for the gate
    } catch (const std::exception& error) {
      std::cerr << "mkbench compare: " << error.what() << "\n";
      return mk::kExitBadInput;
    }
  };
}

}  // namespace

MKBENCH_REGISTER_COMMAND("compare",
                         "Compare two result files row by row (Mann-Whitney U); exit 1 if a row got SLOWER or BROKEN",
                         setup_compare);
