// `mkbench explore --dataset SPEC [--labels SPEC] [--subset-size s] [--copies R | --all] [--k K]
//  [--max-iter I] [--tol T] [--seed S] [--engine auto|cuda|cpu-openmp] [--out DIR]`
// (docs/explore.md).
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>

#include "apps/explore/explore.hpp"
#include "core/errors.hpp"
#include "harness/command.hpp"
#include "harness/results.hpp"
#include "reports/explore_report.hpp"

namespace mk::explore {

void print_explore_summary(const nlohmann::json& doc, int top, std::ostream& out) {
  const auto& time = doc.at("time_s");
  const auto& summary = doc.at("summary");
  out << "explore: " << summary.at("copies").get<int64_t>() << " copies (" << summary.at("distinct_subsets").get<int64_t>()
      << " distinct subsets) on " << doc.at("dataset").at("m").get<int64_t>() << " rows x "
      << doc.at("dataset").at("n").get<int>() << " attributes, engine " << doc.at("engine").at("name").get<std::string>()
      << "\n";
  out << std::fixed << std::setprecision(4) << "time: cluster " << time.at("cluster").get<double>() << " s (median of "
      << time.at("cluster_runs").size() << "), prepare " << time.at("prepare").get<double>() << " s, load "
      << time.at("load").get<double>() << " s, total " << time.at("total").get<double>() << " s\n";
  out << "accuracy: min " << summary.at("accuracy").at("min").get<double>() << ", median "
      << summary.at("accuracy").at("median").get<double>() << ", max " << summary.at("accuracy").at("max").get<double>()
      << "; majority class " << doc.at("majority_class_share").get<double>();
  if (!doc.at("baseline").is_null())
    out << "; all attributes " << doc.at("baseline").at("accuracy").get<double>() << " ("
        << doc.at("baseline").at("variant").get<std::string>() << ")";
  out << "\n";
  const auto& subsets = doc.at("subsets");
  for (size_t r = 0; r < subsets.size() && int(r) < top; ++r) {
    const auto& row = subsets[r];
    out << std::setw(4) << r + 1 << "  " << std::setw(8) << row.at("best").get<double>() << "  attributes";
    for (int column : row.at("columns")) out << " " << column;
    out << "  (" << row.at("copies").get<int64_t>() << " copies, mean " << row.at("mean").get<double>() << ")\n";
  }
  out.unsetf(std::ios::floatfield);
}

namespace {

int explore_command(const ExploreOptions& options) {
  const std::string json_path = options.out.empty() ? "" : options.out + "/explore.json";
  if (!json_path.empty()) {  // before the work, not after
    check_writable(json_path);
    check_writable(options.out + "/explore.md");
    check_writable(options.out + "/explore.html");
  }
  const nlohmann::json doc = run_explore(options, std::cerr);
  print_explore_summary(doc, std::min(options.top, 10), std::cout);
  if (json_path.empty()) return kExitOk;
  write_text_atomically(json_path, doc.dump(1) + "\n");
  write_text_atomically(options.out + "/explore.md", reports::render_explore_markdown(doc, options.top));
  std::string plots_note;
  write_text_atomically(options.out + "/explore.html",
                        reports::render_explore_html(doc, json_path, options.top, &plots_note));
  if (!plots_note.empty()) std::cerr << "mkbench explore: note: the html has tables only; " << plots_note << "\n";
  std::cout << "wrote " << json_path << ", explore.md and explore.html\n";
  return kExitOk;
}

MKBENCH_REGISTER_COMMAND(
    "explore", "k-means copies on attribute subsets of a labelled table, ranked by majority-vote accuracy (seed 000)",
    [](CLI::App& sub) -> std::function<int()> {
      auto options = std::make_shared<ExploreOptions>();
      sub.add_option("--dataset", options->dataset,
                     "susy[:informative=A,B,C,...] | csv:PATH:label=COL | npy:PATH | idx:PATH (the last two with --labels)")
          ->required();
      sub.add_option("--labels", options->labels, "labels of npy:/idx: data: npy:PATH | idx:PATH | csv:PATH[:label=COL]");
      sub.add_option("--points,-m", options->points, "susy: rows (default 5000000, SUSY's); a file's must agree");
      sub.add_option("--dims,-n", options->dims, "susy: attributes (default 18); a file's must agree")
          ->check(CLI::PositiveNumber);  // 0 is the unset default, not a value
      sub.add_option("--subset-size,-s", options->subset_size, "attributes per copy")->capture_default_str();
      auto* copies = sub.add_option("--copies", options->copies, "random subsets, one copy each (drawn with repeats)")
                         ->capture_default_str();
      sub.add_flag("--all", options->all, "every C(n, s) subset once, instead of --copies");
      sub.add_option("--k,-k", options->k, "clusters per copy")->capture_default_str();
      sub.add_option("--max-iter", options->max_iter, "steps at most per copy (seed 000: 5)")->capture_default_str();
      sub.add_option("--tol", options->tol,
                     "a copy stops after a step that moves its centroids by at most tol x the mean variance of its "
                     "columns (as fit)")
          ->capture_default_str();
      sub.add_option("--seed", options->seed, "the generator's, the subsets' and the initial centroids' seed")
          ->check(CLI::NonNegativeNumber)  // a 64-bit seed: strtoull would wrap -1 to 2^64 - 1
          ->capture_default_str();
      sub.add_option("--engine", options->engine, "auto | cuda | cpu-openmp")->capture_default_str();
      sub.add_flag("!--no-baseline", options->baseline, "skip the all-attributes baseline");
      sub.add_option("--top", options->top, "subsets in the report's table")->capture_default_str();
      sub.add_option("--repeat", options->repeat, "solve this many times and report the median time")
          ->capture_default_str();
      sub.add_option("--out", options->out, "write explore.json, explore.md and explore.html into this folder");
      sub.add_option("--device", options->device, "CUDA device ordinal")->capture_default_str();
      sub.add_flag("--quiet", options->quiet, "no progress lines");
      return [options, copies] {
        options->copies_given = copies->count() > 0;
        return explore_command(*options);
      };
    });

}  // namespace
}  // namespace mk::explore
