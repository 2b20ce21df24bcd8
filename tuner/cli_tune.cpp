// `mkbench tune`: search each problem shape's (variant, params) space with a strategy,
// under a budget, caching every measurement, and write the per-device tuned config that
// `mkbench run` reads. `--replay` runs the same machinery over a recorded cache.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "datasets/dataset.hpp"
#include "harness/cli_run.hpp"
#include "harness/command.hpp"
#include "core/errors.hpp"
#include "harness/measure.hpp"
#include "harness/memory_plan.hpp"
#include "harness/results.hpp"
#include "harness/suite.hpp"
#include "variants/tuned_params.hpp"
#include "tuner/buckets.hpp"
#include "tuner/cache.hpp"
#include "tuner/config.hpp"
#include "tuner/default_gate.hpp"
#include "tuner/replay.hpp"
#include "tuner/strategy.hpp"
#include "tuner/tune_loop.hpp"
#include "tuner/tune_shapes.hpp"

namespace mk::tuner {
namespace {

struct TuneCliOptions {
  std::string suite;
  int dims = 0;
  std::string k;
  std::string points;
  std::vector<std::string> variants;
  std::string strategy = "anneal";
  std::string budget;
  int64_t max_evals = 0;
  std::string cache;
  std::string config_out;
  uint64_t seed = 1;
  int samples = 10;
  int warmup = 3;
  std::string dataset = "uniform";
  uint64_t data_seed = 42;
  bool verify = false;
  int device = 0;
  std::string replay;
  bool compare = false;
  int repeats = 5;
  double tolerance = 0.05;
  std::vector<std::string> fix;  // axis=value pins
  // Which options the user actually gave (defaults must not override suite values).
  CLI::Option* max_evals_option = nullptr;
  CLI::Option* dataset_option = nullptr;
};

// One shape to tune and the variants allowed for it.
struct TuneJob {
  Problem problem;
  std::vector<std::string> variants;  // empty = every registered variant
  std::string dataset;
  uint64_t data_seed = 42;
  bool verify = false;  // the suite asks for verification
};

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::vector<TuneJob> jobs_from_cli(const TuneCliOptions& options) {
  const bool shape_given = options.dims > 0 || !options.k.empty() || !options.points.empty();
  if (!options.suite.empty() && shape_given)
    throw InputError("give either --suite or --dims/--k/--points, not both");
  std::vector<TuneJob> jobs;
  if (!options.suite.empty()) {
    const SuiteDefinition suite = load_suite(options.suite);
    std::map<std::string, size_t> index_by_shape;
    for (const SuiteCase& suite_case : suite.cases) {
      const std::string case_dataset = options.dataset_option && options.dataset_option->count()
                                           ? options.dataset
                                           : suite_case.dataset.value_or(suite.dataset);
      // A file dataset sets N and M (as `suite` plans it); a case's own dims/points must agree.
      std::vector<int> case_dims = suite_case.dims;
      std::vector<std::string> case_points = suite_case.points;
      if (is_file_dataset_spec(case_dataset)) {
        const DataShape shape = file_dataset_shape(case_dataset);
        for (int dims : case_dims)
          if (dims != shape.n)
            throw InputError("suite " + suite.name + ": dims " + std::to_string(dims) + " does not match dataset '" +
                             case_dataset + "', which has " + std::to_string(shape.n) + " dimensions per point");
        for (const std::string& points : case_points)
          if (parse_count(points) != shape.m)
            throw InputError("suite " + suite.name + ": points " + points + " does not match dataset '" +
                             case_dataset + "', which has " + std::to_string(shape.m) + " points");
        case_dims = {shape.n};
        case_points = {std::to_string(shape.m)};
      }
      for (int dims : case_dims)
        for (const std::string& k : suite_case.k)
          for (const std::string& points : case_points) {
            TuneJob job;
            job.problem.n = dims;
            job.problem.k = parse_k_range(k);
            job.problem.m = parse_count(points);
            validate(job.problem);
            job.dataset = case_dataset;
            job.data_seed = suite.seed;
            job.verify = suite_case.verify.value_or(suite.verify);
            const bool all = suite_case.variants.empty() ||
                             std::find(suite_case.variants.begin(), suite_case.variants.end(), "all") !=
                                 suite_case.variants.end();
            if (!all) job.variants = expand_variant_names(suite_case.variants);
            const std::string shape = problem_key(job.problem);
            auto found = index_by_shape.find(shape);
            if (found == index_by_shape.end()) {
              index_by_shape[shape] = jobs.size();
              jobs.push_back(job);
              continue;
            }
            jobs[found->second].verify = jobs[found->second].verify || job.verify;
            if (jobs[found->second].variants.empty() || job.variants.empty()) {
              jobs[found->second].variants.clear();  // one case allows all variants
            } else {
              for (const auto& name : job.variants)
                if (std::find(jobs[found->second].variants.begin(), jobs[found->second].variants.end(), name) ==
                    jobs[found->second].variants.end())
                  jobs[found->second].variants.push_back(name);
            }
          }
    }
    if (jobs.empty()) throw InputError("suite " + suite.name + " has no cases to tune");
  } else if (shape_given) {
    if (options.dims < 1 || options.k.empty() || options.points.empty())
      throw InputError("a single shape needs all of --dims, --k and --points");
    TuneJob job;
    job.problem.n = options.dims;
    job.problem.k = parse_k_range(options.k);
    job.problem.m = parse_count(options.points);
    validate(job.problem);
    job.dataset = options.dataset;
    job.data_seed = options.data_seed;
    jobs.push_back(job);
  }
  if (!options.variants.empty())
    for (auto& job : jobs) job.variants = options.variants;
  return jobs;
}

// The config is per GPU: a suite's CPU-baseline rows (cpu-openmp) are not tuned into it.
std::vector<TuneJob> without_cpu_variants(std::vector<TuneJob> jobs) {
  std::vector<TuneJob> kept;
  for (auto& job : jobs) {
    if (job.variants.empty()) {
      for (const Variant* variant : Registry::instance().all())
        if (variant->runs_on_gpu()) job.variants.push_back(variant->name());
    } else {
      std::vector<std::string> gpu_only;
      for (const auto& name : job.variants)
        if (Registry::instance().get(name).runs_on_gpu()) gpu_only.push_back(name);
      if (gpu_only.empty())
        std::cerr << "[tune] " << job.problem.str() << ": CPU-baseline rows are not tuned into a GPU's config\n";
      job.variants = std::move(gpu_only);
    }
    if (!job.variants.empty()) kept.push_back(std::move(job));
  }
  return kept;
}

Budget budget_from_cli(const TuneCliOptions& options) {
  Budget budget;
  if (!options.budget.empty()) budget.seconds = parse_duration_seconds(options.budget);
  if (options.max_evals_option && options.max_evals_option->count()) {
    if (options.max_evals < 1) throw InputError("--max-evals must be at least 1");
    budget.max_evals = options.max_evals;
  }
  return budget;
}

std::vector<const Variant*> variants_for(const TuneJob& job) {
  if (job.variants.empty()) return Registry::instance().all();
  std::vector<const Variant*> out;
  for (const auto& name : job.variants) out.push_back(&Registry::instance().get(name));
  return out;
}

// The suite loop (tune_shapes.hpp) over the command's jobs.
std::vector<TunedShape> tune_jobs(const std::vector<TuneJob>& jobs, const TuneCliOptions& options,
                                  const Budget& budget,
                                  const std::function<SearchSpace(const TuneJob&)>& space_of,
                                  const std::function<Evaluator(const TuneJob&)>& evaluator_of, TuneCache* cache,
                                  const DeviceKey& device, const nlohmann::json& device_limits) {
  std::vector<ShapeJob> shapes;
  for (const TuneJob& job : jobs)
    shapes.push_back({job.problem, [&space_of, job] { return space_of(job); },
                      [&evaluator_of, job] { return evaluator_of(job); }});
  ShapesOptions shapes_options;
  shapes_options.strategy = options.strategy;
  shapes_options.seed = options.seed;
  shapes_options.budget = budget;
  shapes_options.progress = &std::cerr;
  shapes_options.cache = cache;
  shapes_options.device = device;
  shapes_options.device_limits = device_limits;
  return tune_shapes(std::move(shapes), shapes_options);
}

void print_summary(std::ostream& out, const std::vector<TunedShape>& tuned) {
  out << "bucket\tproblem\tbest\tmedian_ms\tgops\trunner_up\tevals(new/cached/space)\tstop\n";
  for (const auto& shape : tuned) {
    const auto best = shape.outcome.best();
    const auto second = shape.outcome.runner_up();
    out << Bucket::of(shape.problem).label() << "\t" << shape.problem.str() << "\t"
        << (best ? best->candidate.label() : "-") << "\t" << (best ? fixed(best->measurement.median_ms, 4) : "-")
        << "\t" << (best ? fixed(gops_of(shape.problem, best->measurement.median_ms), 1) : "-") << "\t"
        << (second ? second->candidate.label() : "-") << "\t" << shape.outcome.new_evals << "/"
        << shape.outcome.cached_evals << "/" << shape.outcome.space_size << "\t" << shape.outcome.stop_reason
        << "\n";
  }
}

// Adds each tuned shape's winner to the config at `path` (kept entries of other shapes).
void write_config(const std::string& path, const std::vector<TunedShape>& tuned, const TuneCliOptions& options,
                  const DeviceKey& device) {
  TunedConfig config;
  std::error_code error;
  if (std::filesystem::exists(path, error)) config = load_config(path);
  config.device = device.to_json();
  config.device["slug"] = device.slug();
  config.updated = utc_now_iso();
  size_t added = 0;
  for (const auto& shape : tuned) {
    auto pick = pick_for_config(shape.outcome, shape.problem);
    if (!pick) continue;
    ConfigEntry entry;
    entry.bucket = Bucket::of(shape.problem);
    entry.problem = shape.problem;
    std::cerr << "config " << entry.bucket.label() << " " << shape.problem.str() << ": " << pick->best.variant << " "
              << params_label(pick->best.params) << " (" << pick->chosen << ")\n";
    entry.best = std::move(pick->best);
    entry.runner_up = std::move(pick->runner_up);
    entry.chosen = std::move(pick->chosen);
    entry.runner_up_chosen = std::move(pick->runner_up_chosen);
    entry.evals_new = shape.outcome.new_evals;
    entry.evals_cached = shape.outcome.cached_evals;
    entry.space_size = shape.outcome.space_size;
    entry.strategy = shape.outcome.strategy;
    entry.seed = options.seed;
    entry.budget = shape.share.str();
    entry.stop_reason = shape.outcome.stop_reason;
    entry.date = config.updated;
    entry.device = device.name;
    config.merge(std::move(entry));
    ++added;
  }
  if (!added) return;
  save_config_atomically(path, config);
  std::cerr << "tuned config: " << path << " (" << added << " shape(s) updated, " << config.entries.size()
            << " in total)\n";
}

// The recorded space of a replayed shape, restricted to the job's variants.
SearchSpace replay_space(const ReplayTable& table, const TuneJob& job, const Params& pinned) {
  if (job.variants.empty()) return table.space_for(job.problem, pinned);
  std::vector<const Variant*> chosen;
  for (const Variant* variant : table.variants())
    if (std::find(job.variants.begin(), job.variants.end(), variant->name()) != job.variants.end())
      chosen.push_back(variant);
  return SearchSpace::build(chosen, job.problem, DeviceInfo{}, pinned);
}

// The issue's acceptance view: on a recorded space, how many visits each strategy needs
// to come within the tolerance of the exhaustive optimum.
int compare_strategies(const ReplayTable& table, const std::vector<TuneJob>& jobs, const TuneCliOptions& options,
                       const Budget& budget) {
  const Evaluator evaluate = table.evaluator();
  const Params pinned = parse_param_assignments(options.fix, "--fix");
  for (const auto& job : jobs) {
    const SearchSpace space = replay_space(table, job, pinned);
    if (space.empty()) continue;
    auto exhaustive = make_exhaustive_strategy(space);
    TuneOptions quiet;
    const TuneOutcome full = run_tune(space, job.problem, *exhaustive, evaluate, quiet);
    const auto optimum = full.best();
    std::cout << job.problem.str() << " (" << Bucket::of(job.problem).label() << "): " << space.size()
              << " recorded points";
    if (!optimum) {
      std::cout << ", none of them ok\n";
      continue;
    }
    const double best_ms = optimum->measurement.median_ms;
    std::cout << ", exhaustive best " << fixed(best_ms, 4) << " ms " << optimum->candidate.label() << "\n";
    std::cout << "strategy\truns\tbudget\treached_within_" << fixed(options.tolerance * 100, 0)
              << "%\tevals_to_reach(median)\tevals_to_reach(max)\tfinal_best/optimum(median)\n";
    for (const std::string& name : strategy_names()) {
      const int runs = name == "exhaustive" ? 1 : std::max(1, options.repeats);
      std::vector<double> visits, ratios;
      int reached = 0;
      for (int run = 0; run < runs; ++run) {
        auto strategy = make_strategy(name, space, options.seed + uint64_t(run));
        TuneOptions tune_options;
        tune_options.budget = budget;
        const TuneOutcome outcome = run_tune(space, job.problem, *strategy, evaluate, tune_options);
        if (auto count = outcome.visits_to_reach(best_ms, options.tolerance)) {
          ++reached;
          visits.push_back(double(*count));
        }
        const auto found = outcome.best();
        ratios.push_back(found ? found->measurement.median_ms / best_ms : INFINITY);
      }
      std::sort(visits.begin(), visits.end());
      std::sort(ratios.begin(), ratios.end());
      std::cout << name << "\t" << runs << "\t" << budget.str() << "\t" << reached << "/" << runs << "\t"
                << (visits.empty() ? "-" : fixed(visits[visits.size() / 2], 0)) << "\t"
                << (visits.empty() ? "-" : fixed(visits.back(), 0)) << "\t" << fixed(ratios[ratios.size() / 2], 4)
                << "\n";
    }
  }
  return kExitOk;
}

int run_replay(const TuneCliOptions& options, const Budget& budget) {
  if (!options.cache.empty()) throw InputError("--replay reads recorded timings; it cannot be combined with --cache");
  ReplayTable table = ReplayTable::load(options.replay, &std::cerr);
  // Without a shape on the command line every recorded shape is replayed.
  std::vector<TuneJob> wanted = jobs_from_cli(options);
  std::vector<TuneJob> jobs;
  for (const Problem& problem : table.problems()) {
    const bool selected = wanted.empty() || std::any_of(wanted.begin(), wanted.end(), [&](const TuneJob& job) {
                            return problem_key(job.problem) == problem_key(problem);
                          });
    if (selected) jobs.push_back(TuneJob{problem, options.variants, "", 0, false});
  }
  if (jobs.empty()) throw InputError("replay table " + options.replay + " has no recorded points for that shape");
  if (!options.config_out.empty()) check_writable(options.config_out);
  // Variant filters name recorded variants, not registered ones.
  std::set<std::string> recorded;
  for (const Variant* variant : table.variants()) recorded.insert(variant->name());
  for (const auto& name : options.variants)
    if (!recorded.count(name)) throw InputError("replay table " + options.replay + " has no variant '" + name + "'");

  if (options.compare) return compare_strategies(table, jobs, options, budget);

  const Params pinned = parse_param_assignments(options.fix, "--fix");
  auto space_of = [&](const TuneJob& job) { return replay_space(table, job, pinned); };
  const Evaluator evaluate = table.evaluator();
  const auto tuned = tune_jobs(jobs, options, budget, space_of, [&](const TuneJob&) { return evaluate; }, nullptr,
                               table.device(), nlohmann::json());
  print_summary(std::cout, tuned);
  // Replayed numbers must never silently replace a real device's config.
  if (!options.config_out.empty()) write_config(options.config_out, tuned, options, table.device());
  return kExitOk;
}

int run_tune_command(const TuneCliOptions& options) {
  // Every point is measured with the parameters the search asks for, also where a variant
  // (auto) would otherwise pick another variant's tuned parameters itself.
  set_tuned_configs_enabled(false);
  make_strategy(options.strategy, SearchSpace{}, 0);  // reject an unknown name before any work
  if (options.samples < 1) throw InputError("--samples must be at least 1");
  if (options.warmup < 0) throw InputError("--warmup cannot be negative");
  if (!(options.tolerance > 0)) throw InputError("--tolerance must be positive");
  const Budget budget = budget_from_cli(options);
  const Params pinned = parse_param_assignments(options.fix, "--fix");  // bad syntax fails before any work
  if (!options.replay.empty()) return run_replay(options, budget);
  if (options.compare) throw InputError("--compare needs --replay CACHE.jsonl");

  std::vector<TuneJob> jobs = jobs_from_cli(options);
  if (jobs.empty()) throw InputError("nothing to tune: give --suite S, or --dims, --k and --points");
  for (const auto& job : jobs) variants_for(job);  // unknown variant names fail before measuring

  select_device(options.device);
  const DeviceInfo device = query_device(options.device);
  if (device.is_gpu && options.variants.empty()) jobs = without_cpu_variants(std::move(jobs));
  // Before any data set is made: every shape's points, with the FP64 reference where points
  // are verified and a CPU variant's copy, must fit the host (exit 2). The GPU is planned
  // point by point, right before each prepares, and refuses that point only.
  const MemoryLimits host_limits = current_memory_limits(DeviceInfo{});
  for (const auto& job : jobs) {
    const bool verify = options.verify || job.verify;
    const DataSource source = held_whole(describe_data_source(job.dataset, job.problem.m, job.problem.n));
    for (const Variant* variant : variants_for(job)) {
      const MemoryPlan plan =
          plan_memory(source, RowWork{variant, job.problem, Params::object(), verify, verify}, device, host_limits);
      if (plan.host_exceeded) plan.enforce();
    }
  }
  const DeviceKey device_key = DeviceKey::of(device);
  const std::string cache_path = options.cache.empty() ? default_cache_path(device.slug()) : options.cache;
  const std::string config_path = options.config_out.empty() ? default_config_path(device.slug()) : options.config_out;
  // Both are written while or after measuring: a path that cannot be written fails now.
  check_writable(cache_path);
  check_writable(config_path);
  TuneCache cache(cache_path, &std::cerr);
  std::cerr << "tuning on " << device.name << " (" << device_key.str() << "), cache " << cache_path << " ("
            << cache.records().size() << " records), strategy " << options.strategy << ", budget " << budget.str()
            << "\n";

  HarnessEvaluatorOptions base;
  base.samples = options.samples;
  base.warmup = options.warmup;
  base.verify_first = options.verify;
  std::string evaluator_dataset;
  Evaluator evaluator;
  auto evaluator_of = [&](const TuneJob& job) {
    const bool verify = options.verify || job.verify;
    const std::string spec = job.dataset + "#" + std::to_string(job.data_seed) + (verify ? "#verify" : "");
    if (!evaluator || spec != evaluator_dataset) {
      HarnessEvaluatorOptions per_job = base;
      per_job.dataset = job.dataset;
      per_job.seed = job.data_seed;
      per_job.verify_first = verify;
      evaluator = make_harness_evaluator(device, per_job);
      evaluator_dataset = spec;
    }
    return evaluator;
  };
  auto space_of = [&](const TuneJob& job) {
    return SearchSpace::build(variants_for(job), job.problem, device, pinned);
  };
  // A --fix that does not fit some shape's variants must fail before the first measurement.
  for (const auto& job : jobs) space_of(job);
  const auto tuned =
      tune_jobs(jobs, options, budget, space_of, evaluator_of, &cache, device_key, device_limits_of(device));
  print_summary(std::cout, tuned);
  write_config(config_path, tuned, options, device_key);
  const bool any = std::any_of(tuned.begin(), tuned.end(), [](const TunedShape& s) { return bool(s.outcome.best()); });
  if (!any) throw UnsupportedError("no point could be measured successfully on " + device.name);
  return kExitOk;
}

std::function<int()> setup_tune(CLI::App& sub) {
  auto options = std::make_shared<TuneCliOptions>();
  sub.add_option("--suite", options->suite, "tune every distinct shape of this suite (name or JSON file)");
  sub.add_option("--dims", options->dims, "N: dimensions of a single shape");
  sub.add_option("--k", options->k, "K or K range (3..7) of a single shape");
  sub.add_option("--points", options->points, "M: points of a single shape (32M = 2^25)");
  sub.add_option("--variants", options->variants, "only these variants (comma separated)")->delimiter(',');
  sub.add_option("--strategy", options->strategy, "exhaustive | random | anneal")->capture_default_str();
  sub.add_option("--budget", options->budget, "wall time for new measurements: 90s, 10m, 1h30m");
  options->max_evals_option = sub.add_option("--max-evals", options->max_evals, "at most this many new measurements");
  sub.add_option("--cache", options->cache, "JSON-lines cache (default configs/cache/<device>.jsonl)");
  sub.add_option("--config-out", options->config_out, "tuned config to write (default configs/<device>.json)");
  sub.add_option("--seed", options->seed, "seed of the random and anneal strategies")
      ->check(CLI::NonNegativeNumber)  // a 64-bit seed: strtoull would wrap -1 to 2^64 - 1
      ->capture_default_str();
  sub.add_option("--samples", options->samples, "timed iterations per point")->capture_default_str();
  sub.add_option("--warmup", options->warmup, "untimed iterations per point")->capture_default_str();
  options->dataset_option =
      sub.add_option("--dataset", options->dataset, "data set spec for a single shape")->capture_default_str();
  sub.add_option("--data-seed", options->data_seed, "seed of generated data")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub.add_flag("--verify", options->verify,
               "check the first point of each variant and shape against the FP64 reference (suites with "
               "\"verify\": true do this anyway)");
  sub.add_option("--device", options->device, "CUDA device ordinal")->capture_default_str();
  sub.add_option("--fix", options->fix,
                 "pin an axis to one value, e.g. --fix block=256 (repeatable): search the other axes only");
  sub.add_option("--replay", options->replay, "use recorded timings from this cache instead of measuring");
  sub.add_flag("--compare", options->compare,
               "with --replay: compare every strategy against the exhaustive optimum of the recorded space");
  sub.add_option("--repeats", options->repeats, "with --compare: seeds per randomised strategy")->capture_default_str();
  sub.add_option("--tolerance", options->tolerance, "with --compare: 0.05 = within 5% of the optimum")
      ->capture_default_str();
  return [options] { return run_tune_command(*options); };
}

}  // namespace

MKBENCH_REGISTER_COMMAND("tune", "autotune variant parameters per problem bucket and write configs/<device>.json",
                         setup_tune);

}  // namespace mk::tuner
