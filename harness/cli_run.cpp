// `mkbench run`: one or more variants on one problem, printed and optionally saved.
#include "harness/cli_run.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <regex>

#include <CLI/CLI.hpp>

#include "datasets/dataset.hpp"
#include "harness/command.hpp"
#include "core/errors.hpp"
#include "harness/format.hpp"
#include "harness/measure.hpp"
#include "harness/memory_plan.hpp"
#include "harness/parallel/sharded_variant.hpp"
#include "harness/peak.hpp"
#include "harness/reference.hpp"
#include "harness/results.hpp"
#include "variants/batched/batched_variant.hpp"
#include "variants/tuned_params.hpp"

namespace mk {

nlohmann::json parse_param_value(const std::string& text) {
  static const std::regex integer(R"([+-]?[0-9]+)");
  static const std::regex real(R"([+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?)");
  if (std::regex_match(text, integer)) {
    errno = 0;
    const long long value = std::strtoll(text.c_str(), nullptr, 10);
    if (errno == ERANGE) throw InputError("parameter value out of range: " + text);
    return value;
  }
  if (std::regex_match(text, real)) return std::strtod(text.c_str(), nullptr);
  return text;
}

Params parse_param_assignments(const std::vector<std::string>& items, const std::string& option) {
  Params params = Params::object();
  for (const auto& item : items) {
    const auto equals = item.find('=');
    if (equals == std::string::npos)
      throw InputError(option + " expects key=value, got '" + item + "'");
    const std::string key = item.substr(0, equals);
    const std::string text = item.substr(equals + 1);
    if (key.empty()) throw InputError(option + " has an empty key: '" + item + "'");
    if (text.empty()) throw InputError(option + " " + key + " has an empty value");
    const nlohmann::json value = parse_param_value(text);
    if (params.contains(key) && params.at(key) != value)
      throw InputError("parameter " + key + " given twice with different values (" + params.at(key).dump() +
                       " and " + value.dump() + ")");
    params[key] = value;
  }
  return params;
}

Params collect_overrides(const RunOptions& options) {
  Params overrides = parse_param_assignments(options.params);
  auto set = [&](const std::string& key, const nlohmann::json& value) {
    if (overrides.contains(key) && overrides.at(key) != value)
      throw InputError("--" + key + " conflicts with --param " + key + "=" + overrides.at(key).dump());
    overrides[key] = value;
  };
  if (options.grid_given) set("grid", options.grid);
  if (options.block_given) set("block", options.block);
  if (options.ppt_given) set("ppt", options.ppt);
  if (!options.layout.empty()) set("layout", to_string(parse_layout(options.layout)));
  if (overrides.contains("layout") && overrides.at("layout").is_string())
    overrides["layout"] = to_string(parse_layout(overrides.at("layout").get<std::string>()));
  return overrides;
}

void add_run_options(CLI::App& app, RunOptions& options) {
  app.add_option("--variant", options.variants, "variant name(s), comma-separated (see `mkbench list`)")->required();
  auto* dims = app.add_option("--dims,-n", options.dims, "N, dimensions per point (generated data; a file sets its own)")
                   ->capture_default_str();
  auto* points = app.add_option("--points,-m", options.points,
                                "M, number of points (1000, 1e6, 32M = 2^25; generated data; a file sets its own)")
                     ->capture_default_str();
  app.add_option("--k,-k", options.k, "K or a K range solved together, e.g. 3..7")->capture_default_str();
  app.add_option("--iters", options.iters, "timed iterations (samples); fewer than 10 is allowed but noisy")
      ->capture_default_str();
  app.add_option("--warmup", options.warmup, "untimed iterations before timing")->capture_default_str();
  app.add_flag("--verify", options.verify, "check one step before and one after timing against the FP64 reference");
  app.add_option("--dataset", options.dataset,
                 "uniform | blobs:centers=10,spread=1.5 | csv:PATH[:header][:label=COL] | npy:PATH | idx:PATH")
      ->capture_default_str();
  app.add_option("--seed", options.seed, "dataset and random-init seed")
      ->check(CLI::NonNegativeNumber)  // a 64-bit seed: strtoull would wrap -1 to 2^64 - 1
      ->capture_default_str();
  app.add_option("--init", options.init, "initial centroids: first | random")->capture_default_str();
  auto* grid = app.add_option("--grid", options.grid, "shorthand for --param grid=G");
  auto* block = app.add_option("--block", options.block, "shorthand for --param block=B");
  auto* ppt = app.add_option("--ppt", options.ppt, "shorthand for --param ppt=W (points per thread)");
  app.add_option("--layout", options.layout, "shorthand for --param layout=aos|soa");
  app.add_option("--param", options.params, "variant parameter key=value (repeatable)");
  app.add_option("--out", options.out, "write the results JSON here (atomically)");
  app.add_option("--format", options.format, "table | csv | json | md")
      ->check(CLI::IsMember(output_format_names()))
      ->capture_default_str();
  add_device_option(app, options.device);
  app.add_flag("--benchmark-console", options.benchmark_console, "also print Google Benchmark's report (stderr)");
  app.add_flag("--hide-launch-latency", options.hide_launch_latency,
               "hold the stream (a 200 us spin) before each GPU sample's start event, so the host's launch latency "
               "stays out of the timing (as nvbench's blocking kernel)");
  app.add_flag("!--no-peak-measure", options.measure_peaks, "do not measure peaks when none are cached");
  app.add_flag("!--no-tuned", options.use_tuned, "ignore tuned configurations; use the variant's defaults");
  app.add_flag("--store-labels", options.store_labels, "materialise labels in the timed loop too");
  app.add_option("--chunk-points", options.chunk_points,
                 "out of core: stream the points in chunks of this many, e.g. 32M (docs/out-of-core.md)");
  app.add_flag("--out-of-core", options.out_of_core,
               "out of core with the largest chunks that fit (without it, only when the points do not fit)");
  app.add_option("--batch", options.batch,
                 "B independent problems of M points each, solved in one row (each with its own centroids; a "
                 "file's rows split into B equal problems; docs/batched.md)")
      ->capture_default_str();
  app.add_flag("--hold-points", options.hold_points,
               "out of core, hold the points in host memory and copy each chunk from there (without it, a "
               "generator's chunks are generated where they are read and a .npy's read from its mapping)");
  // CLI11 fills the ints either way; remember which shorthands the user actually typed.
  app.callback([&options, grid, block, ppt, dims, points] {
    options.dims_given = dims->count() > 0;
    options.points_given = points->count() > 0;
    options.grid_given = grid->count() > 0;
    options.block_given = block->count() > 0;
    options.ppt_given = ppt->count() > 0;
  });
}

namespace {

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> names;
  std::string current;
  for (char c : text + ",") {
    if (c == ',') {
      if (!current.empty()) names.push_back(current);
      current.clear();
    } else if (c != ' ') {
      current += c;
    }
  }
  return names;
}

// Before the points exist: the host must hold them (and the FP64 reference under --verify,
// a CPU variant's copy), else exit 2; a GPU variant must fit the GPU's free memory, else its
// row is refused, and when no variant fits, the run is (exit 3) without making the data.
// True when the points need not be held (points_stay_unheld: every row that runs is out of core,
// and the data is a C-order .npy, or a generator without --verify). `sharded`: over several
// shards, which are views of held rows (rows_of), the points are held and planned so.
bool plan_run_memory(const RunOptions& options, const std::vector<const Variant*>& variants, const Params& overrides,
                     int64_t m, const KRange& k, const DeviceInfo& device, int64_t chunk_points, bool sharded) {
  const int batch = std::max(options.batch, 1);
  const DataSource described = describe_data_source(options.dataset, m * batch, options.dims);
  const DataSource source = options.hold_points || sharded ? held_whole(described) : described;
  if (source.m > 0 && source.m % batch != 0)  // a file's rows, known from its header
    throw InputError("--batch " + std::to_string(batch) + " does not divide dataset '" + options.dataset +
                     "', which has " + std::to_string(source.m) +
                     " points (a batch's problems each take an equal share of the rows)");
  const MemoryLimits limits = current_memory_limits(device);
  std::optional<MemoryPlan> refused;
  std::vector<MemoryPlan> plans;
  for (const Variant* unbatched : variants) {
    const std::unique_ptr<Variant> batched = batch > 1 ? variant_for_batch(*unbatched) : nullptr;
    const Variant* variant = batched ? batched.get() : unbatched;
    RowWork work{variant, Problem{}, overrides, options.verify || options.store_labels, options.verify};
    work.chunk_points = chunk_points;
    work.out_of_core = options.out_of_core;
    work.problem.m = source.m / batch;  // 0 for CSV: its shape is known once parsed, and measure_row plans then
    work.problem.n = source.n;
    work.problem.k = k;
    work.problem.batch = batch;
    const MemoryPlan plan = plan_memory(source, work, device, limits);
    if (plan.host_exceeded) plan.enforce();
    if (!plan.runs() && !refused) refused = plan;
    plans.push_back(plan);
  }
  const bool any_runs = std::any_of(plans.begin(), plans.end(), [](const MemoryPlan& p) { return p.runs(); });
  if (!any_runs && refused) refused->enforce();
  return points_stay_unheld(source, options.verify, plans);
}

}  // namespace

void check_file_shape(const RunOptions& options, const Dataset& data) {
  const std::string advice = " (a file sets N and M itself: leave out --dims and --points, or give the file's values)";
  if (options.dims_given && options.dims != data.n)
    throw InputError("--dims " + std::to_string(options.dims) + " does not match dataset '" + options.dataset +
                     "', which has " + std::to_string(data.n) + " dimensions per point" + advice);
  const int batch = std::max(options.batch, 1);
  if (data.m % batch != 0)
    throw InputError("--batch " + std::to_string(batch) + " does not divide dataset '" + options.dataset + "', which has " +
                     std::to_string(data.m) + " points (a batch's problems each take an equal share of the rows)");
  if (options.points_given && parse_count(options.points) * batch != data.m)
    throw InputError("--points " + options.points + (batch > 1 ? " x --batch " + std::to_string(batch) : "") +
                     " does not match dataset '" + options.dataset + "', which has " + std::to_string(data.m) +
                     " points" + advice);
}

int run_command(const RunOptions& options) {
  const OutputFormat format = parse_output_format(options.format);
  if (options.iters < 1) throw InputError("--iters must be at least 1");
  if (options.warmup < 0) throw InputError("--warmup cannot be negative");
  const bool from_file = is_file_dataset_spec(options.dataset);
  if (options.dims < 1 && (!from_file || options.dims_given))
    throw InputError("N (dimensions) must be at least 1, got " + std::to_string(options.dims));
  const int64_t chunk_points = options.chunk_points.empty() ? 0 : parse_count(options.chunk_points);
  if (!options.chunk_points.empty() && chunk_points < 1)
    throw InputError("--chunk-points must be at least 1, got " + options.chunk_points);
  const int64_t m = parse_count(options.points);
  if (m < 1 && (!from_file || options.points_given))
    throw InputError("M (points) must be at least 1, got " + options.points);
  const KRange k = parse_k_range(options.k);
  const InitMethod init = parse_init(options.init);
  if (options.batch < 1 || options.batch > kMaxBatch)
    throw InputError("--batch must be 1 to " + std::to_string(kMaxBatch) + ", got " + std::to_string(options.batch));
  if (options.batch > 1 && (chunk_points > 0 || options.out_of_core)) throw InputError(kRefuseBatchedOutOfCore);
  if (options.batch > 1 && m > INT64_MAX / 2 / options.batch)
    throw InputError("--points " + options.points + " x --batch " + std::to_string(options.batch) + " is too many points");
  const Params overrides = collect_overrides(options);
  if (!options.out.empty()) check_writable(options.out);  // before measuring, not after
  if (options.iters < kRecommendedMinSamples)
    std::cerr << "mkbench: warning: --iters " << options.iters << " is below " << kRecommendedMinSamples
              << "; the median and IQR will be noisy\n";

  std::vector<const Variant*> variants;
  for (const auto& name : split_names(options.variants)) variants.push_back(&Registry::instance().get(name));
  if (variants.empty()) throw InputError("--variant is empty");

  bool any_gpu_variant = false;
  for (const Variant* v : variants) any_gpu_variant |= v->runs_on_gpu();
  auto placement = std::make_shared<const Placement>(
      resolve_placement(options.device, options.measure_peaks && any_gpu_variant));
  DeviceInfo device = placement->primary();
  // Fail before generating gigabytes of points for a run that cannot happen.
  if (!device.is_gpu && variants.size() == 1 && variants[0]->runs_on_gpu())
    throw UnsupportedError("variant " + variants[0]->name() + " needs a CUDA GPU, and there is none: " +
                           (gpu_count() == 0 ? no_gpu_reason() : "--device " + options.device + " is the host CPU"));
  // Variants as this placement runs them: over several shards, each answers for one shard.
  std::vector<std::unique_ptr<Variant>> placed;
  std::vector<const Variant*> measured;
  for (const Variant* v : variants) {
    placed.push_back(variant_for_placement(*v, placement));
    measured.push_back(placed.back() ? placed.back().get() : v);
  }
  if (placement->sharded()) std::cerr << "mkbench: " << placement->describe() << "\n";
  const bool any_sharded = std::any_of(placed.begin(), placed.end(), [](const auto& p) { return p != nullptr; });
  if (any_sharded && (chunk_points > 0 || options.out_of_core)) throw InputError(kRefuseShardedOutOfCore);
  if (any_sharded && options.batch > 1)
    throw InputError("--batch runs its problems on one device; give one --device (a batch over several devices is not "
                     "built)");

  const bool unheld =
      plan_run_memory(options, measured, overrides, m, k, device, chunk_points, placement->sharded());
  const auto load_start = std::chrono::steady_clock::now();
  const int64_t rows = m * options.batch;  // generated data: every problem's rows, one after another
  Dataset data = unheld ? load_dataset_spec_unheld(options.dataset, rows, options.dims, options.seed)
                        : load_dataset_spec(options.dataset, rows, options.dims, options.seed);
  const bool leave_in_file = data.is_mapped();
  if (data.is_on_demand())
    std::cerr << "mkbench: dataset " << options.dataset << " is generated chunk by chunk where the out-of-core run "
              << "reads it; no host memory holds it\n";
  if (from_file) check_file_shape(options, data);
  check_finite(data);
  if (from_file)  // the load phase of issue 34's goal (tests/device/load.sh reads this line)
    std::cerr << "mkbench: dataset " << options.dataset << " ready in " << std::fixed << std::setprecision(3)
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count() << " s ("
              << (leave_in_file ? "hashed and checked in its memory-mapped file, where out-of-core chunks read it"
                                : "read, hashed and checked")
              << ")\n" << std::defaultfloat;
  Problem problem;
  problem.m = data.m / options.batch;  // check_file_shape: a file's rows divide into the batch
  problem.n = data.n;
  problem.k = k;
  problem.batch = options.batch;
  problem.sparsity = data.sparsity;
  validate(problem);
  const std::vector<float> init_centroids = batch_initial_centroids(data, problem, init, options.seed);

  set_tuned_configs_enabled(options.use_tuned);
  ResultFile file = new_result_file(device);
  MeasureOptions measure_options;
  measure_options.benchmark_console = options.benchmark_console;
  measure_options.hide_launch_latency = options.hide_launch_latency;
  for (const Variant* variant : measured) {
    ++measure_options.row_index;  // the variant's place in --variant a,b (MKBENCH_FAULT_ROW)
    Params row_overrides = overrides;
    std::string tuned_from;  // the entry that chose the params, recorded in the row as the suites do
    if (overrides.empty() && options.use_tuned) {
      std::string config_used;
      // A sharded row runs the configuration tuned for one shard's M.
      const bool is_placed = std::find_if(placed.begin(), placed.end(), [&](const auto& p) {
                               return p.get() == variant;
                             }) != placed.end();
      // A batch runs the configuration tuned for one of its problems.
      const Problem tuned_problem =
          is_placed ? shard_problem(problem, placement->total_shards()) : problem_of_one(problem);
      if (auto tuned = tuned_params_for(*variant, tuned_problem, device, &config_used)) {
        try {
          resolve_params(*variant, is_placed ? problem : tuned_problem, device, *tuned);
          row_overrides = *tuned;
          tuned_from = config_used;
          std::cerr << "mkbench: using tuned config " << config_used << " for " << variant->name() << ": "
                    << params_label(*tuned) << "\n";
        } catch (const Error& e) {
          std::cerr << "mkbench: warning: ignoring tuned config " << config_used << " (" << e.what() << ")\n";
        }
      }
    }
    RowSpec spec;
    spec.variant = variant;
    spec.problem = problem;
    spec.params = row_overrides;
    spec.dataset = &data;
    spec.init_centroids = init_centroids;
    spec.warmup = options.warmup;
    spec.samples = options.iters;
    spec.verify = options.verify;
    spec.store_labels = options.store_labels;
    spec.chunk_points = chunk_points;
    spec.out_of_core = options.out_of_core;
    ResultRow row = measure_row(spec, device, measure_options);
    if (!tuned_from.empty()) row.tuned_config = tuned_from;
    file.rows.push_back(std::move(row));
  }

  print_results(std::cout, file, format);
  // Under mpirun every rank measured the same rows; rank 0 writes them.
  if (!options.out.empty() && writes_outputs()) write_results_atomically(options.out, file);

  bool verify_failed = false;
  for (const auto& row : file.rows) {
    if (!row.verified()) continue;
    const auto& v = row.verify;
    std::cerr << "verify " << row.name << ": " << (row.verify_passed() ? "PASS" : "FAIL");
    if (v.contains("summary")) std::cerr << " | first step: " << v.at("summary").get<std::string>();
    if (v.contains("final_step") && v.at("final_step").contains("summary"))
      std::cerr << " | after timing: " << v.at("final_step").at("summary").get<std::string>();
    if (v.contains("error")) std::cerr << " | " << v.at("error").get<std::string>();
    std::cerr << "\n";
    verify_failed |= !row.verify_passed();
  }
  for (const auto& row : file.rows)
    if (row.status == "refused") throw UnsupportedError(row.name + ": " + row.reason);
  if (verify_failed) return kExitVerifyFailed;
  for (const auto& row : file.rows)
    if (row.status == "failed") throw DeviceError(row.name + ": " + row.reason);
  return kExitOk;
}

namespace {

MKBENCH_REGISTER_COMMAND("run", "measure variants on one problem (timed with CUDA events, optional --verify)",
                         [](CLI::App& sub) -> std::function<int()> {
                           auto options = std::make_shared<RunOptions>();
                           add_run_options(sub, *options);
                           return [options] { return run_command(*options); };
                         });

}  // namespace

}  // namespace mk
