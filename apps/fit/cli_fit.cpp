// `mkbench fit`: cluster data to convergence for every K of a range in one fused multi-K
// pass, score each K, choose one, and write centroids, labels and fit.json (docs/fit.md).
#include "apps/fit/cli_fit.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <memory>
#include <utility>

#include <CLI/CLI.hpp>

#include "apps/fit/fit.hpp"
#include "apps/fit/fit_output.hpp"
#include "apps/fit/fit_plan.hpp"
#include "apps/fit/progress_line.hpp"
#include "apps/fit/sample_weights.hpp"
#include "apps/stream/cli_stream.hpp"
#include "core/errors.hpp"
#include "core/problem.hpp"
#include "datasets/dataset.hpp"
#include "harness/command.hpp"
#include "harness/measure.hpp"
#include "harness/memory_plan.hpp"
#include "harness/parallel/mpi_communicator.hpp"
#include "harness/parallel/placement.hpp"
#include "harness/parallel/sharded_run.hpp"
#include "variants/chunked/chunked_run.hpp"
#include "variants/tuned_params.hpp"

namespace mk {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void add_fit_options(CLI::App& app, FitOptions& options) {
  app.add_option("--dataset", options.dataset,
                 "uniform | blobs:centers=10,spread=1.5 | csv:PATH[:header][:label=COL] | npy:PATH | idx:PATH")
      ->required();
  app.add_option("--dims,-n", options.dims,
                 "N for generators (default 8); files give their own, which this must match")
      ->check(CLI::PositiveNumber);  // 0 is the unset default, not a value (it ran N=8 silently)
  app.add_option("--points,-m", options.points,
                 "M for generators (default 32M = 2^25); files give their own, which this must match");
  app.add_option("--k,-k", options.k, "K or a range A..B fitted together")->capture_default_str();
  app.add_option("--init", options.init, "first | random | k-means++ | k-means|| | npy:PATH (kmax x N; the first k rows seed k)")
      ->capture_default_str();
  app.add_option("--init-sample", options.init_sample,
                 "k-means++ seeds from a stratified sample of this many rows (scikit-learn MiniBatchKMeans' "
                 "init_size); default: every row, or the largest sample the GPU holds when the data exceed it");
  app.add_option("--max-iter", options.max_iter, "steps at most per K")->capture_default_str();
  app.add_option("--tol", options.tol,
                 "converged when a step moves the centroids by at most tol x the mean per-feature variance "
                 "(squared Frobenius norm, as scikit-learn)")
      ->capture_default_str();
  app.add_option("--n-init", options.n_init, "seedings per K; the lowest final inertia wins")->capture_default_str();
  app.add_option("--seed", options.seed, "dataset, seeding and sampling seed")
      ->check(CLI::NonNegativeNumber)  // a 64-bit seed: strtoull would wrap -1 to 2^64 - 1
      ->capture_default_str();
  app.add_option("--variant", options.variant, "auto, or a variant that splits its step (see `mkbench list`)")
      ->capture_default_str();
  app.add_option("--empty", options.empty,
                 "an empty cluster: keep its centroid, move it to the farthest point (scikit-learn) or to a "
                 "random point")
      ->capture_default_str()
      ->each([&options](const std::string&) { options.empty_given = true; });
  app.add_option("--silhouette-sample", options.silhouette_sample,
                 "points in the silhouette's sample (0: no silhouette)")
      ->capture_default_str()
      ->each([&options](const std::string&) { options.silhouette_given = true; });
  app.add_flag("--stream", options.stream,
               "seed 001's one-pass streaming k-means: chunks reduced by k-means#, then weighted k-means++ and "
               "Lloyd on the weighted centres (one K; docs/streaming.md)");
  app.add_option("--chunk-points", options.chunk_points,
                 "--stream: points per chunk (default max(sqrt(M*K), 4*K*ceil(3 ln K))); otherwise exact Lloyd out of "
                 "core in chunks of this many points (default: in core, or 1 GiB chunks when the GPU cannot hold the "
                 "data)");
  app.add_flag("--hold-points", options.hold_points,
               "out of core, hold the points in host memory and copy each chunk from there (without it, a "
               "generator's rows are generated where they are read and a .npy's read from its mapping)");
  app.add_option("--weights", options.weights,
                 "npy:PATH: one non-negative weight per point (a 1-D float32/float64 array), scikit-learn's "
                 "sample_weight");
  app.add_option("--out", options.out, "write fit.json, centroids_k<K>.npy and labels_k<K>.npy here");
  app.add_flag("--quiet", options.quiet, "no progress line per step");
  add_device_option(app, options.device);
  app.add_flag("!--no-tuned", options.use_tuned, "ignore tuned configurations; use the variant's defaults");
}

namespace {

// The fit's data. `unheld`: a C-order .npy stays in its memory mapping, a generator's rows are
// made where they are read (load_dataset_spec_unheld).
Dataset load_fit_data(const FitOptions& options, bool unheld) {
  if (!is_file_dataset_spec(options.dataset)) {
    const int64_t m = parse_count(options.points.empty() ? kFitDefaultPoints : options.points);
    const int n = options.dims > 0 ? options.dims : kFitDefaultDims;
    return unheld ? load_dataset_spec_unheld(options.dataset, m, n, options.seed)
                  : load_dataset_spec(options.dataset, m, n, options.seed);
  }
  // A file sets N and M itself (as for `run`): --dims and --points may only agree with it.
  Dataset data = unheld ? load_dataset_spec_unheld(options.dataset, 0, 0, options.seed)
                        : load_dataset_spec(options.dataset, 0, 0, options.seed);
  const std::string advice = " (a file sets N and M itself: leave out --dims and --points, or give the file's values)";
  if (options.dims > 0 && data.n != options.dims)
    throw InputError("--dims " + std::to_string(options.dims) + " does not match dataset '" + options.dataset +
                     "', which has " + std::to_string(data.n) + " dimensions per point" + advice);
  if (!options.points.empty() && parse_count(options.points) != data.m)
    throw InputError("--points " + options.points + " does not match dataset '" + options.dataset + "', which has " +
                     std::to_string(data.m) + " points" + advice);
  return data;
}

// Whether the fit will run out of core on points that need not be held, judged before any point
// is read (from a .npy's header, or a generator's shape): a C-order .npy then stays in its memory
// mapping and a generator's rows are made where they are read (docs/out-of-core.md), so no host
// memory holds a copy of the points. Anything this cannot settle (no such file, a bad shape) is
// left to the fit's own plan on the loaded data, which reports it.
bool fit_leaves_points_unheld(const FitOptions& options, const KRange& k,
                              const std::shared_ptr<const Placement>& placement, const DeviceInfo& gpu_device,
                              int64_t chunk_points) {
  if (options.hold_points || !options.weights.empty()) return false;  // a weighted fit runs in core
  const bool from_file = is_file_dataset_spec(options.dataset);
  DataSource source;
  try {
    source = from_file ? describe_data_source(options.dataset, 0, 0)
                       : describe_data_source(options.dataset,
                                              parse_count(options.points.empty() ? kFitDefaultPoints : options.points),
                                              options.dims > 0 ? options.dims : kFitDefaultDims);
  } catch (const Error&) {
    return false;
  }
  if (!(source.mappable || source.generable) || source.m < 1 || source.n < 1) return false;
  Problem problem;
  problem.m = source.m;
  problem.n = source.n;
  problem.k = k;
  try {
    validate(problem);
    return plan_fit(options.variant, problem, placement, gpu_device, options.use_tuned, nullptr, chunk_points)
               .chunk_points > 0;
  } catch (const Error&) {
    return false;
  }
}

std::string fixed(double value, int decimals) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string optional_text(const std::optional<double>& value, int decimals) {
  return value ? fixed(*value, decimals) : "-";
}

void print_summary(std::ostream& out, const FitResult& result) {
  out << "    K  iters  converged        inertia  Calinski-H  Davies-B  silhouette\n";
  for (size_t index = 0; index < result.per_k.size(); ++index) {
    const KFit& fit = result.per_k[index];
    const KScores& s = result.scores.per_k[index];
    char line[160];
    std::snprintf(line, sizeof line, "%5d  %5d  %9s  %13.6e  %10s  %8s  %10s%s\n", fit.k, fit.iterations,
                  fit.converged ? "yes" : "no", fit.inertia, optional_text(s.calinski_harabasz, 1).c_str(),
                  optional_text(s.davies_bouldin, 4).c_str(), optional_text(s.silhouette, 4).c_str(),
                  result.best.k && *result.best.k == fit.k ? "  <- best_k" : "");
    out << line;
  }
  out << "best_k: " << (result.best.k ? std::to_string(*result.best.k) : "none (" + result.best.reason + ")")
      << " (rule: " << result.best.rule << ")";
  if (result.scores.elbow_k) out << "; inertia elbow (kneedle): " << *result.scores.elbow_k;
  out << "\n";
  if (!result.seeding_sample_reason.empty())
    out << "seeding: " << result.seeding_method << " from a stratified sample of " << result.seeding_sample_rows
        << " rows (" << result.seeding_sample_reason << ")\n";
  const FitSeconds& t = result.seconds;
  out << "time: load " << fixed(t.load, 3) << " s, upload " << fixed(t.upload, 3) << " s, seeding "
      << fixed(t.seeding, 3) << " s, iterations " << fixed(t.iterations, 3) << " s ("
      << result.steps << " steps), labels " << fixed(t.labels, 3) << " s, metrics " << fixed(t.metrics, 3) << " s\n";
}

// fit_k_range, with a sharded step's refusal of an empty cluster (harness/parallel/
// sharded_run.hpp: farthest and random would move it to a different point on each shard)
// told as fit's: exit 3 (docs/fit.md), naming the placement; the refusal names the ways out.
FitResult fit_sharded_or_explain(std::unique_ptr<PreparedRun> run, const Dataset& data, const FitSettings& settings,
                                 const DeviceInfo& device, const FitPlan& plan) {
  try {
    return fit_k_range(std::move(run), data, settings, device);
  } catch (const ShardedEmptyClusterError& e) {
    throw UnsupportedError("fit --device " + plan.placement->text + " (" + std::to_string(plan.shards()) +
                           " shards) stopped at a step that left a cluster empty: " + e.what());
  }
}

}  // namespace

int fit_command(const FitOptions& options) {
  if (options.stream) return stream_fit_command(options);
  int64_t chunk_points = kFitChunksWhenNeeded;
  if (!options.chunk_points.empty()) {
    try {
      chunk_points = parse_count(options.chunk_points);
    } catch (const InputError& e) {
      throw InputError(std::string("--chunk-points: ") + e.what());
    }
    if (chunk_points < 1) throw InputError("--chunk-points must be at least 1 point, got " + options.chunk_points);
  }
  check_fit_options(options);
  FitSettings settings;
  settings.k = parse_k_range(options.k);
  settings.init = options.init;
  settings.init_sample = options.init_sample.empty() ? 0 : parse_count(options.init_sample);
  settings.max_iter = options.max_iter;
  settings.tol = options.tol;
  settings.n_init = options.n_init;
  settings.seed = options.seed;
  settings.empty = parse_empty_policy(options.empty);
  settings.silhouette_sample = options.silhouette_sample;

  // The same placement `run` resolves (exit 2 for a GPU that is not there, a repeated one,
  // cpu:0); `--device N` alone is one device, unsharded, as before the option took a list.
  const auto placement = std::make_shared<const Placement>(resolve_placement(options.device, false));
  const DeviceInfo& gpu_device = placement->primary();
  // A named GPU variant on a machine without one fails before any data is read.
  refuse_gpu_variant_on_host(options.variant, gpu_device,
                             gpu_count() == 0 ? no_gpu_reason() : "--device " + options.device + " is the host CPU");
  // Under mpirun only rank 0 prints progress and writes files (every rank fits the same).
  const bool speaks = writes_outputs();

  const bool unheld = fit_leaves_points_unheld(options, settings.k, placement, gpu_device, chunk_points);
  const auto load_start = std::chrono::steady_clock::now();
  const Dataset data = load_fit_data(options, unheld);
  check_finite(data);
  const double load_seconds = seconds_since(load_start);
  if (!options.weights.empty()) {
    settings.weights = std::make_shared<const std::vector<float>>(load_sample_weights(options.weights, data.m));
    settings.weights_spec = options.weights;
  }
  Problem problem;
  problem.m = data.m;
  problem.n = data.n;
  problem.k = settings.k;
  problem.sparsity = data.sparsity;
  validate(problem);  // K > M and the like: InputError

  set_tuned_configs_enabled(options.use_tuned);
  const FitPlan plan = plan_fit(options.variant, problem, placement, gpu_device, options.use_tuned,
                                [](const std::string& why) { std::cerr << "fit: warning: " << why << "\n"; },
                                chunk_points);
  const Variant& variant = *plan.variant;
  const DeviceInfo& device = plan.device;
  const Params& params = plan.params;
  const std::string& tuned_from = plan.tuned_from;
  if (!options.quiet && speaks)
    std::cerr << "fit: " << variant.name() << " (" << plan.choice.reason << ") with " << params_label(params)
              << (tuned_from.empty() ? "" : " (tuned: " + tuned_from + ")") << " on "
              << (plan.sharded() ? placement->describe() : device.name) << "\n";

  if (plan.chunk_points > 0) {
    // An out-of-core step sees one chunk at a time, so it cannot move an empty cluster to a
    // point of the whole data (variants/chunked); it keeps the cluster's centroid.
    if (options.empty_given && settings.empty != EmptyPolicy::Keep)
      throw InputError("--empty " + options.empty + ": an out-of-core fit (" + std::to_string(plan.chunk_points) +
                       " points a chunk) keeps empty clusters' centroids; use --empty keep");
    if (settings.weights) throw UnsupportedError("--weights: a weighted fit out of core is not built; it runs in core");
    settings.empty = EmptyPolicy::Keep;
    if (speaks)
      std::cerr << "fit: out of core, " << plan.chunk_points << " points a chunk"
                << (plan.out_of_core_reason.empty() ? std::string(" (--chunk-points)")
                                                    : " (in core was refused: " + plan.out_of_core_reason + ")")
                << (data.is_mapped()      ? ", read from the file's memory mapping"
                    : data.is_on_demand() ? ", each generated where it is read"
                                          : "")
                << "; empty clusters keep their centroids\n";
  }

  if (settings.n_init > 1 && !init_depends_on_seed(settings.init)) {
    if (speaks)
      std::cerr << "fit: warning: --init " << settings.init << " gives the same centroids for every seed; running one "
              << "seeding instead of --n-init " << settings.n_init << "\n";
    settings.n_init = 1;
  }
  const auto upload_start = std::chrono::steady_clock::now();
  std::unique_ptr<PreparedRun> run = prepare_fit(plan, problem, data);
  const double upload_seconds = seconds_since(upload_start);
  nlohmann::json out_of_core;  // null in core
  if (auto* chunked = dynamic_cast<ChunkedRun*>(run.get())) out_of_core = chunked->info().to_json();
  settings.metrics_on_gpu = device.is_gpu;
  std::optional<ParallelInfo> parallel;
  if (plan.sharded())
    settings.before_release = [&parallel](PreparedRun& done) {
      // Every fit step is a timed step here; a collective under mpirun (each rank calls it).
      if (auto* sharded = dynamic_cast<ShardedRun*>(&done)) parallel = sharded->parallel_info(SIZE_MAX);
    };
  if (!options.quiet && speaks)
    settings.on_step = [&options](int restart, int iteration, const StepSummary& step,
                                  const std::vector<uint8_t>& active) {
      std::cerr << progress_line(restart, options.n_init, iteration, step, active) << "\n";
    };
  FitResult result = fit_sharded_or_explain(std::move(run), data, settings, device, plan);
  result.seconds.load = load_seconds;
  result.seconds.upload = upload_seconds;

  FitRecord record;
  record.result = &result;
  record.data = &data;
  record.device = device;
  record.variant = variant.name();
  record.params = params;
  record.variant_reason = plan.choice.reason;
  record.tuned_config = tuned_from;
  record.settings = settings;
  record.settings.on_step = nullptr;
  record.settings.before_release = nullptr;
  record.device_option = options.device;
  record.parallel = parallel;
  record.out_of_core = out_of_core;
  if (!options.out.empty() && speaks) write_fit_outputs(options.out, record);
  print_summary(std::cout, result);
  return kExitOk;
}

namespace {

MKBENCH_REGISTER_COMMAND("fit",
                         "cluster data to convergence for every K of a range at once, score each K and choose one "
                         "(centroids, labels, fit.json)",
                         [](CLI::App& sub) -> std::function<int()> {
                           auto options = std::make_shared<FitOptions>();
                           add_fit_options(sub, *options);
                           return [options] { return fit_command(*options); };
                         });

}  // namespace

}  // namespace mk
