// `mkbench explore`: the run (explore.hpp).
#include "apps/explore/explore.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "apps/explore/baseline.hpp"
#include "apps/explore/labelled_table.hpp"
#include "apps/explore/scoring.hpp"
#include "apps/explore/subsets.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "core/problem.hpp"
#include "harness/build_info.hpp"
#include "harness/measure.hpp"
#include "harness/parallel/placement.hpp"
#include "harness/results.hpp"
#include "variants/subset_batch/subset_batch.hpp"

namespace mk::explore {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The JSON lists at most this many copies and distinct subsets in detail (the best ones);
// every copy's accuracy is kept in `accuracy_by_copy` for the distribution.
constexpr size_t kListed = 1000;

double rounded(double value, int decimals = 6) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

struct EngineChoice {
  const batch::SubsetBatchEngine* engine = nullptr;
  std::string reason;
};

EngineChoice choose_engine(const std::string& requested, const batch::SubsetShape& shape, const DeviceInfo& device) {
  const batch::SubsetBatchEngine& cuda = batch::subset_engine("cuda");
  const batch::SubsetBatchEngine& cpu = batch::subset_engine("cpu-openmp");
  if (requested == "cpu-openmp") return {&cpu, "asked for"};
  const auto refusal = cuda.can_run(shape, device);
  if (requested == "cuda") {
    if (refusal) throw UnsupportedError("--engine cuda: " + *refusal);
    return {&cuda, "asked for"};
  }
  if (!refusal) return {&cuda, "auto: a CUDA GPU (" + device.name + ")"};
  return {&cpu, "auto: cuda cannot run here (" + *refusal + ")"};
}

double quantile(std::vector<double> sorted, double q) {
  if (sorted.empty()) return 0;
  const double at = q * double(sorted.size() - 1);
  const size_t low = size_t(std::floor(at)), high = std::min(low + 1, sorted.size() - 1);
  return sorted[low] + (at - double(low)) * (sorted[high] - sorted[low]);
}

nlohmann::json columns_json(const std::vector<int32_t>& columns, size_t first, int s) {
  return std::vector<int32_t>(columns.begin() + first * s, columns.begin() + (first + 1) * s);
}

}  // namespace

nlohmann::json run_explore(const ExploreOptions& options, std::ostream& log) {
  const auto total_start = Clock::now();
  check_explore_options(options);
  const int64_t points = options.points.empty() ? 0 : parse_count(options.points);
  if (!options.points.empty() && points < 1) throw InputError("--points must be at least 1, got " + options.points);

  const int gpus = gpu_count();
  if (options.engine == "cuda" && gpus == 0)
    throw UnsupportedError("--engine cuda needs a CUDA GPU, and there is none: " + no_gpu_reason());
  const DeviceInfo device = resolve_single_device(options.device);

  auto progress = [&](const std::string& line) {
    if (!options.quiet) log << "mkbench explore: " << line << "\n" << std::flush;
  };

  auto start = Clock::now();
  const LabelledTable table = load_labelled_table(options.dataset, options.labels, points, options.dims, options.seed);
  const Dataset& data = table.data;
  const double load_seconds = seconds_since(start);
  const int s = options.subset_size;
  if (s > data.n)
    throw InputError("--subset-size " + std::to_string(s) + " is larger than the " + std::to_string(data.n) +
                     " attributes of the table");
  if (options.k > data.m)
    throw InputError("K=" + std::to_string(options.k) + " exceeds the " + std::to_string(data.m) + " rows of the table");
  progress(std::to_string(data.m) + " rows x " + std::to_string(data.n) + " attributes, " +
           std::to_string(table.classes()) + " classes, loaded in " + std::to_string(load_seconds) + " s");

  start = Clock::now();
  std::vector<int32_t> columns;
  if (options.all) {
    const int64_t count = subset_count(data.n, s);
    if (count > kMaxCopies)
      throw InputError("--all: C(" + std::to_string(data.n) + ", " + std::to_string(s) + ") = " +
                       (count == INT64_MAX ? std::string("more than 2^63") : std::to_string(count)) +
                       " subsets exceed the " + std::to_string(kMaxCopies) + " copies of one run; use --copies");
    columns = all_subsets(data.n, s);
  } else {
    columns = random_subsets(data.n, s, options.copies, options.seed);
  }
  const int64_t copies = int64_t(columns.size()) / s;
  batch::SubsetProblems problems;
  problems.s = s;
  problems.k = options.k;
  problems.count = copies;
  problems.columns = columns;
  problems.centroids = initial_centroids(data, columns, s, options.k, options.seed);
  const std::vector<double> variances = attribute_variances(data);
  problems.thresholds = convergence_thresholds(variances, columns, s, options.tol);
  const double draw_seconds = seconds_since(start);

  const batch::SharedTable shared{&data, &table.labels, table.classes()};
  const batch::SubsetShape shape{data.m, data.n, s, options.k, table.classes(), copies};
  const EngineChoice choice = choose_engine(options.engine, shape, device);
  progress(std::to_string(copies) + " copies of " + std::to_string(s) + " attributes, k=" + std::to_string(options.k) +
           ", engine " + choice.engine->name() + " (" + choice.reason + ")");

  batch::SubsetOutcome outcome;
  std::vector<double> cluster_runs, step_runs, score_runs;
  double prepare_seconds = 0;
  for (int r = 0; r < options.repeat; ++r) {
    start = Clock::now();
    std::unique_ptr<batch::SubsetBatchRun> run = choice.engine->prepare(shared, problems, device);
    prepare_seconds = seconds_since(start);
    start = Clock::now();
    for (int step = 0; step < options.max_iter; ++step)
      if (run->step() == 0) break;
    const double steps_seconds = seconds_since(start);
    const auto score_start = Clock::now();
    run->score();
    outcome = run->read_back();
    score_runs.push_back(seconds_since(score_start));
    step_runs.push_back(steps_seconds);
    cluster_runs.push_back(seconds_since(start));
    progress("solve " + std::to_string(r + 1) + "/" + std::to_string(options.repeat) + ": " +
             std::to_string(cluster_runs.back()) + " s (steps " + std::to_string(steps_seconds) + " s, score " +
             std::to_string(score_runs.back()) + " s)");
  }

  start = Clock::now();
  const std::vector<double> accuracy = copy_accuracies(outcome, data.m);
  const std::vector<RankedSubset> ranked = rank_subsets(columns, s, accuracy);
  const std::vector<int64_t> order = rank_copies(accuracy);
  const std::vector<AttributeSummary> attributes = summarise_attributes(data.n, columns, s, accuracy);
  const double rank_seconds = seconds_since(start);

  nlohmann::json baseline = nullptr;
  double baseline_seconds = 0;
  if (options.baseline) {
    const BaselineResult result =
        run_baseline(table, options.k, options.max_iter, options.tol, options.seed, copies, device);
    baseline = {{"accuracy", rounded(result.accuracy)}, {"variant", result.variant}, {"steps", result.steps},
                {"converged", result.converged}, {"inertia", result.inertia}, {"attributes", data.n}};
    baseline_seconds = result.seconds;
    progress("baseline on all " + std::to_string(data.n) + " attributes (" + result.variant + "): accuracy " +
             std::to_string(result.accuracy));
  }

  nlohmann::json doc;
  doc["schema"] = "mkbench.explore/2";
  doc["created"] = utc_now_iso();
  doc["build"] = current_build_info().to_json();
  doc["device"] = device.to_json();
  doc["options"] = {{"dataset", options.dataset},     {"labels", options.labels},     {"subset_size", s},
                    {"copies", options.all ? nlohmann::json("all") : nlohmann::json(options.copies)},
                    {"k", options.k},                 {"max_iter", options.max_iter}, {"tol", options.tol},
                    {"seed", options.seed},           {"engine", options.engine},     {"repeat", options.repeat}};
  std::vector<double> shares;
  for (int64_t size : table.class_sizes) shares.push_back(rounded(double(size) / double(data.m)));
  doc["dataset"] = {{"identity", data.identity}, {"labels", table.labels_identity}, {"m", data.m}, {"n", data.n},
                    {"classes", table.classes()}, {"class_values", table.class_values}, {"class_shares", shares}};
  if (!table.attribute_roles.empty()) doc["dataset"]["attribute_roles"] = table.attribute_roles;
  const double majority = double(*std::max_element(table.class_sizes.begin(), table.class_sizes.end())) / double(data.m);
  doc["majority_class_share"] = rounded(majority);
  doc["engine"] = {{"name", choice.engine->name()}, {"reason", choice.reason}};
  std::vector<double> sorted_runs = cluster_runs;
  std::sort(sorted_runs.begin(), sorted_runs.end());
  doc["time_s"] = {{"load", load_seconds},          {"draw", draw_seconds},
                   {"prepare", prepare_seconds},    {"cluster", quantile(sorted_runs, 0.5)},
                   {"cluster_runs", cluster_runs},  {"steps_runs", step_runs},
                   {"score_runs", score_runs},      {"rank", rank_seconds},
                   {"baseline", baseline_seconds},  {"total", seconds_since(total_start)}};
  doc["baseline"] = baseline;

  std::vector<double> sorted_accuracy = accuracy;
  std::sort(sorted_accuracy.begin(), sorted_accuracy.end());
  int64_t converged = 0, steps = 0;
  for (int64_t b = 0; b < copies; ++b) converged += outcome.converged[size_t(b)], steps += outcome.steps[size_t(b)];
  double mean = 0;
  for (double a : accuracy) mean += a;
  doc["summary"] = {{"copies", copies},
                    {"distinct_subsets", ranked.size()},
                    {"converged", converged},
                    {"mean_steps", double(steps) / double(copies)},
                    {"accuracy",
                     {{"min", rounded(sorted_accuracy.front())}, {"p25", rounded(quantile(sorted_accuracy, 0.25))},
                      {"median", rounded(quantile(sorted_accuracy, 0.5))}, {"p75", rounded(quantile(sorted_accuracy, 0.75))},
                      {"max", rounded(sorted_accuracy.back())}, {"mean", rounded(mean / double(copies))}}}};

  nlohmann::json subsets = nlohmann::json::array();
  for (size_t r = 0; r < ranked.size() && r < kListed; ++r)
    subsets.push_back({{"rank", r + 1}, {"columns", ranked[r].columns}, {"best", rounded(ranked[r].best)},
                       {"mean", rounded(ranked[r].mean)}, {"worst", rounded(ranked[r].worst)},
                       {"copies", ranked[r].copies}, {"best_copy", ranked[r].best_copy}});
  doc["subsets"] = subsets;
  // The worst distinct subsets too (seed 000's Table 4 shows the five worst beside the five best).
  nlohmann::json worst = nlohmann::json::array();
  for (size_t r = ranked.size() > 5 ? ranked.size() - 5 : 0; r < ranked.size(); ++r)
    worst.push_back({{"rank", r + 1}, {"columns", ranked[r].columns}, {"best", rounded(ranked[r].best)},
                     {"mean", rounded(ranked[r].mean)}, {"copies", ranked[r].copies}});
  doc["worst_subsets"] = worst;
  nlohmann::json listed = nlohmann::json::array();
  for (size_t r = 0; r < order.size() && r < kListed; ++r) {
    const int64_t b = order[r];
    listed.push_back({{"rank", r + 1}, {"copy", b}, {"columns", columns_json(columns, size_t(b), s)},
                      {"accuracy", rounded(accuracy[size_t(b)])}, {"inertia", outcome.inertia[size_t(b)]},
                      {"steps", outcome.steps[size_t(b)]}, {"converged", outcome.converged[size_t(b)] != 0}});
  }
  doc["copies"] = listed;
  std::vector<double> by_copy(accuracy.size());
  std::transform(accuracy.begin(), accuracy.end(), by_copy.begin(), [](double a) { return rounded(a); });
  doc["accuracy_by_copy"] = by_copy;
  nlohmann::json attribute_rows = nlohmann::json::array();
  for (const AttributeSummary& a : attributes) {
    nlohmann::json row = {{"attribute", a.attribute}, {"copies", a.copies}, {"mean", rounded(a.mean)}, {"best", rounded(a.best)}};
    if (!table.attribute_roles.empty()) row["role"] = table.attribute_roles[size_t(a.attribute)];
    attribute_rows.push_back(row);
  }
  doc["attributes"] = attribute_rows;
  doc["time_s"]["total"] = seconds_since(total_start);
  return doc;
}

}  // namespace mk::explore
