// The fits behind mkbench._core.fit and fit_device (fit_runner.hpp).
#include "python/fit_runner.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include "apps/fit/fit.hpp"
#include "apps/fit/fit_options.hpp"
#include "apps/fit/fit_plan.hpp"
#include "apps/fit/fit_variant.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "harness/measure.hpp"
#include "harness/memory_plan.hpp"
#include "harness/parallel/mpi_communicator.hpp"
#include "harness/parallel/placement.hpp"
#include "variants/common/pinned_staging.hpp"
#include "variants/variant.hpp"
#include "variants/warm_runs.hpp"

namespace mk {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The request's given centres packed per KRange::slot_offset: K's block is the first K rows of
// the kmax x n array, as `fit --init npy:PATH` packs its file (apps/seeding/seeding.cpp).
std::vector<float> packed_initial(const FitRequest& request, int n) {
  const KRange k = request.range();
  const size_t row = size_t(n);
  if (request.initial.size() != size_t(k.kmax) * row)
    throw InputError("init array has " + std::to_string(request.initial.size()) + " values, expected " +
                     (k.count() > 1 ? "max(n_clusters)" : "n_clusters") + " x n_features = " +
                     std::to_string(size_t(k.kmax) * row));
  std::vector<float> packed(size_t(k.sum()) * row);
  for (int kk = k.kmin; kk <= k.kmax; ++kk)
    std::copy(request.initial.begin(), request.initial.begin() + ptrdiff_t(size_t(kk) * row),
              packed.begin() + ptrdiff_t(size_t(k.slot_offset(kk)) * row));
  return packed;
}

// The request as fit_k_range's settings, after the checks the CLI makes of its options.
FitSettings settings_for(const FitRequest& request, int n) {
  if (request.n_init < 1) throw InputError("n_init must be at least 1, got " + std::to_string(request.n_init));
  if (request.max_iter < 1) throw InputError("max_iter must be at least 1, got " + std::to_string(request.max_iter));
  if (!(request.tol >= 0)) throw InputError("tol cannot be negative, got " + std::to_string(request.tol));
  FitSettings settings;
  settings.k = request.range();
  settings.init = request.initial.empty() ? request.init : "array";
  if (!request.initial.empty()) settings.initial_centroids = packed_initial(request, n);
  settings.max_iter = request.max_iter;
  settings.tol = request.tol;
  settings.n_init = request.initial.empty() ? request.n_init : 1;
  settings.seed = request.seed;
  // A range is scored as `mkbench fit` scores it (its default silhouette sample); one K needs
  // no K-choice scores.
  settings.silhouette_sample = settings.k.count() > 1 ? FitOptions().silhouette_sample : 0;
  return settings;
}

Problem problem_for(int64_t m, int n, const FitRequest& request) {
  const KRange k = request.range();
  if (k.kmin < 1) throw InputError("n_clusters must be at least 1, got " + std::to_string(k.kmin));
  if (k.kmax < k.kmin) throw InputError("the K range " + k.str() + " is empty");
  Problem problem;
  problem.m = m;
  problem.n = n;
  problem.k = k;
  validate(problem);  // K > M and the like
  return problem;
}

// The device the request names: the GPU of that ordinal, or the host without a GPU.
// One ordinal: as the CLI's seed, quantize and explore (ordinal 0 alone is the host CPU on a
// machine without a GPU), with the CLI's messages.
DeviceInfo device_for(const FitRequest& request) { return resolve_single_device(request.device); }

// A `placement` request: `--device`'s parsing and checks (InputError with the CLI's message:
// "--device 3 does not exist (2 CUDA GPU(s))", "--device names GPU 0 twice", ...).
std::shared_ptr<const Placement> placement_for(const FitRequest& request) {
  if (!request.placement) return nullptr;
  if (detect_mpi_launch().active)
    throw InputError("device=" + *request.placement + ": mkbench.KMeans shards within one process; under mpirun "
                     "use the CLI (`mkbench fit --device`, one rank a shard)");
  return std::make_shared<const Placement>(resolve_placement(*request.placement, false));
}

}  // namespace

FitAnswer run_fit(const Dataset& data, const FitRequest& request) {
  check_finite(data);
  Problem problem = problem_for(data.m, data.n, request);
  FitSettings settings = settings_for(request, data.n);
  problem.sparsity = data.sparsity;
  const std::shared_ptr<const Placement> placement = placement_for(request);
  const DeviceInfo gpu_device = placement ? placement->primary() : device_for(request);
  refuse_gpu_variant_on_host(request.variant, gpu_device,
                             placement && gpu_count() > 0 ? "device=" + *request.placement + " is the host CPU"
                                                          : no_gpu_reason());
  // `mkbench fit`'s plan (apps/fit/fit_plan.hpp); an unusable tuned config falls back to the
  // defaults silently, as the estimator has no log. It plans against the free memory, so a run
  // the device route kept warm (variants/warm_runs.hpp) goes first.
  release_warm_runs();
  const FitPlan plan = plan_fit(request.variant, problem, placement, gpu_device, true, nullptr);
  const Variant& variant = *plan.variant;
  const DeviceInfo& device = plan.device;
  const Params& params = plan.params;

  settings.metrics_on_gpu = device.is_gpu;
  const auto prepare_start = std::chrono::steady_clock::now();
  // The H2D upload (each shard's rows to its device); the plain prepare without a placement.
  std::unique_ptr<PreparedRun> run = prepare_fit(plan, problem, data);
  const double upload_seconds = seconds_since(prepare_start);
  if (device.is_gpu) {  // the bytes of points this fit copies to the device: prepare's, k-means++'s
    const int64_t bytes = data.m * int64_t(data.n) * int64_t(sizeof(float));
    const bool seeds_on_gpu = settings.initial_centroids.empty() && settings.init == "k-means++";
    point_copy_counters().host_to_device += bytes * (1 + (seeds_on_gpu ? settings.n_init : 0));
  }
  FitResult result = fit_k_range(std::move(run), data, settings, device);
  FitAnswer answer;
  answer.seconds = {{"upload", upload_seconds},
                    {"seeding", result.seconds.seeding},
                    {"prepare_split", result.seconds.prepare},
                    {"iterations", result.seconds.iterations},
                    {"labels", result.seconds.labels},
                    {"moments", result.seconds.metrics}};
  if (problem.k.count() > 1) {
    if (!result.best.k) throw InputError("n_clusters " + problem.k.str() + ": no best K: " + result.best.reason);
    answer.best_index = size_t(*result.best.k - problem.k.kmin);
  }
  answer.per_k = std::move(result.per_k);
  answer.scores = std::move(result.scores);
  answer.best = result.best;
  answer.best_restart = result.best_restart;
  answer.variant = variant.name();
  answer.variant_reason = plan.choice.reason;
  answer.device_name = device.name;
  if (placement) answer.placement = placement->describe();
  answer.shards = plan.shards();
  answer.params = params_label(params);
  answer.tol_threshold = result.tol_threshold;
  return answer;
}

namespace {

// The variants that take streamed points (variants/variant.hpp, kRefuseStreamed), in the order
// auto falls back on them for device arrays: registers-multik first, the fused multi-K kernel
// for small N (docs/registers-multik.md).
constexpr const char* kStreamedFallbacks[] = {"registers-multik", "shared-atomics", "warp-centric", "gemm-cublas",
                                              "naive-atomics"};

// tensor-multik's shapes (small N, one K or a range), which registers-multik, the device-array
// route's first fallback, also runs fused. See host_rows_fit_on_device.
bool fallback_serves(const std::string& choice) { return choice == "tensor-multik"; }

}  // namespace

bool host_rows_fit_on_device(const FitRequest& request, int64_t m, int n) {
  if (request.range().count() > 1 || request.placement || gpu_count() == 0 || m < 1 || n < 1) return false;
  // The upload goes through the pinned ring in whole rows: a row wider than a piece takes the host route.
  if (size_t(n) * sizeof(float) > gpu::PinnedStaging::kPieceBytes) return false;
  // The device route seeds with what fit_device_points has on the device; k-means|| seeds from
  // host rows (seed_centroids uploads them for its GPU path) and takes the host route.
  const bool seeded_on_device = !request.initial.empty() || request.init == "k-means++" || request.init == "first" ||
                                request.init == "random";
  if (!seeded_on_device) return false;
  if (request.device < 0 || request.device >= gpu_count()) return false;  // run_fit names the bad device
  const DeviceInfo device = query_device(request.device);
  Problem problem;
  problem.m = m;
  problem.n = n;
  problem.k = request.range();
  if (problem.k.kmin < 1 || problem.k.kmin > m) return false;  // run_fit's checks give the message
  Problem streamed = problem;
  streamed.streamed = true;
  if (request.variant != "auto") {
    const Variant* named = Registry::instance().find(request.variant);
    if (!named || !named->runs_on_gpu() || named->can_implement(streamed, device)) return false;
  } else {
    const FitVariantChoice choice = choose_fit_variant("auto", problem, device);
    if (choice.name.empty()) return false;
    if (Registry::instance().get(choice.name).can_implement(streamed, device) && !fallback_serves(choice.name))
      return false;
  }
  // Room for the run's copy of the points beside what the memory plan keeps free; else the host
  // route, whose memory plan says what does not fit.
  const int64_t point_bytes = m * int64_t(n) * int64_t(sizeof(float));
  const auto room = [&] {
    return current_memory_limits(device).gpu_free_bytes > point_bytes + point_bytes / 8 + kGpuReserveBytes;
  };
  // A run kept warm (variants/warm_runs.hpp) is not free memory: a run of this shape holds the
  // points buffer the fit will take (and, should its parameters differ, allocate_bytes releases it
  // before failing); any other goes when the fit would not fit beside it.
  return room() || warm_run_holds(device.ordinal, streamed.str()) || (release_warm_runs() && room());
}

FitAnswer run_fit_on_device(const DevicePoints& points, const FitRequest& request) {
  const auto plan_start = std::chrono::steady_clock::now();
  // The shards copy their rows from a host Dataset.
  if (request.placement)
    throw InputError("device=" + *request.placement + " takes a host (NumPy) array: the shards copy their rows "
                     "from host memory; a device array is fitted on the one GPU that holds it");
  if (points.m < 1 || points.n < 1)
    throw InputError("expected at least one point of at least one dimension, got " + std::to_string(points.m) +
                     " x " + std::to_string(points.n));
  Problem problem = problem_for(points.m, points.n, request);
  const FitSettings settings = settings_for(request, points.n);
  if (gpu_count() == 0) throw UnsupportedError("a device array needs a CUDA GPU, and there is none: " + no_gpu_reason());
  const DeviceInfo device = device_for(request);
  select_device(device.ordinal);
  Problem streamed = problem;
  streamed.streamed = true;

  std::string name, reason;
  if (request.variant != "auto") {
    const Variant& named = Registry::instance().get(request.variant);  // InputError listing the known names
    if (!named.runs_on_gpu())
      throw UnsupportedError("variant " + named.name() + " runs on the host; a device array needs a GPU variant "
                             "(or pass a NumPy array)");
    if (auto refusal = named.can_implement(streamed, device))
      throw UnsupportedError(named.name() + " cannot take a device array in place (" + *refusal + ")");
    name = named.name();
    reason = "requested";
  } else {
    const FitVariantChoice choice = choose_fit_variant("auto", problem, device);
    std::string refused;
    if (!choice.name.empty()) {
      const auto refusal = Registry::instance().get(choice.name).can_implement(streamed, device);
      if (!refusal) {
        name = choice.name;
        reason = choice.reason;
      } else {
        refused = "auto's choice " + choice.name + " cannot take a device array in place (" + *refusal + ")";
      }
    }
    for (const char* fallback : kStreamedFallbacks) {
      if (!name.empty()) break;
      const Variant* candidate = Registry::instance().find(fallback);
      if (candidate && !candidate->can_implement(streamed, device)) {
        name = fallback;
        reason = (refused.empty() ? choice.reason : refused) + "; " + name + " takes it";
      }
    }
    if (name.empty())
      throw UnsupportedError("no variant can fit " + problem.str() + " on a device array in place" +
                             (refused.empty() ? "" : ": " + refused));
  }
  const Variant& variant = Registry::instance().get(name);
  Params params = fit_params(variant, streamed, streamed, device, true, nullptr, nullptr);
  if (params.contains("layout") && params.at("layout") == "soa") {
    // A streamed run takes row-major points (LloydState refuses layout=soa for them), so a tuned
    // transposed layout gives way to the row-major one here.
    Params overrides = params;
    overrides["layout"] = "aos";
    params = resolve_params(variant, streamed, device, overrides);
  }

  const double plan_seconds = seconds_since(plan_start);
  const auto prepare_start = std::chrono::steady_clock::now();
  // The last fit's run when it had this shape, variant and parameters (variants/warm_runs.hpp):
  // a streamed run takes new points through points_slot like an out-of-core chunk.
  const WarmRunKey warm_key{device.ordinal, variant.name(), params_label(params), streamed.str()};
  std::unique_ptr<PreparedRun> run = take_warm_run(warm_key);
  if (!run) {
    Dataset none;  // a streamed run is prepared without point values (points_slot takes them)
    none.m = points.m;
    none.n = points.n;
    run = variant.prepare(streamed, none, params, device);
  }
  const double prepare_seconds = seconds_since(prepare_start);
  std::vector<DeviceFit> fits = fit_device_points(points, *run, settings, device);
  FitAnswer answer;
  for (DeviceFit& fit : fits) answer.best_restart.push_back(fit.restart);
  if (problem.k.count() > 1) {  // the K-choice scores, from the points where the run holds them
    const auto scores_start = std::chrono::steady_clock::now();
    std::vector<KFit> per_k;
    for (DeviceFit& fit : fits) per_k.push_back(std::move(fit.fit));
    ScoreSettings score;
    score.silhouette_sample = settings.silhouette_sample;
    score.seed = settings.seed;
    answer.scores = score_ks(per_k, PointsOnDevice{run->points_slot().points, points.m, points.n},
                             fits.at(0).moments, score);
    answer.best = choose_best_k(answer.scores);
    if (!answer.best.k) throw InputError("n_clusters " + problem.k.str() + ": no best K: " + answer.best.reason);
    answer.best_index = size_t(*answer.best.k - problem.k.kmin);
    answer.per_k = std::move(per_k);
    fits.at(0).seconds.metrics += seconds_since(scores_start);
  } else {
    answer.per_k.push_back(std::move(fits.at(0).fit));
    answer.best.k = problem.k.kmin;
  }
  // The times of the first K's winning seeding (a range's K share their steps).
  const DeviceFit& best = fits.at(0);
  // The run stays warm for the next fit of this shape; a different one kept before goes back
  // here, inside the C++ time (cudaFree of its points).
  const auto release_start = std::chrono::steady_clock::now();
  keep_run_warm(warm_key, std::move(run));
  const double release_seconds = seconds_since(release_start);
  answer.seconds = {{"plan", plan_seconds},
                    {"prepare", prepare_seconds},
                    {"release", release_seconds},
                    {points.on_host ? "upload" : "device_copy", best.copy_seconds},
                    {"seeding", best.seconds.seeding},
                    {"prepare_split", best.seconds.prepare},
                    {"iterations", best.seconds.iterations},
                    {"labels", best.seconds.labels},
                    {"moments", best.seconds.metrics}};
  answer.variant = variant.name();
  answer.variant_reason = reason;
  answer.device_name = device.name;
  answer.params = params_label(params);
  answer.tol_threshold = best.tol_threshold;
  return answer;
}

}  // namespace mk
