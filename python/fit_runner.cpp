// The fits behind mkbench._core.fit and fit_device (fit_runner.hpp).
#include "python/fit_runner.hpp"

#include <chrono>
#include <memory>
#include <utility>

#include "apps/fit/fit.hpp"
#include "apps/fit/fit_variant.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "harness/measure.hpp"
#include "variants/tuned_params.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The request as fit_k_range's settings, after the checks the CLI makes of its options.
FitSettings settings_for(const FitRequest& request) {
  if (request.n_init < 1) throw InputError("n_init must be at least 1, got " + std::to_string(request.n_init));
  if (request.max_iter < 1) throw InputError("max_iter must be at least 1, got " + std::to_string(request.max_iter));
  if (!(request.tol >= 0)) throw InputError("tol cannot be negative, got " + std::to_string(request.tol));
  FitSettings settings;
  settings.k = KRange{request.k, request.k};
  settings.init = request.initial.empty() ? request.init : "array";
  settings.initial_centroids = request.initial;
  settings.max_iter = request.max_iter;
  settings.tol = request.tol;
  settings.n_init = request.initial.empty() ? request.n_init : 1;
  settings.seed = request.seed;
  settings.silhouette_sample = 0;  // the estimator reports no K-choice scores
  return settings;
}

Problem problem_for(int64_t m, int n, const FitRequest& request) {
  Problem problem;
  problem.m = m;
  problem.n = n;
  problem.k = KRange{request.k, request.k};
  if (request.k < 1) throw InputError("n_clusters must be at least 1, got " + std::to_string(request.k));
  validate(problem);  // K > M and the like
  if (!request.initial.empty() && request.initial.size() != size_t(request.k) * size_t(n))
    throw InputError("init array has " + std::to_string(request.initial.size()) + " values, expected n_clusters x " +
                     "n_features = " + std::to_string(size_t(request.k) * size_t(n)));
  return problem;
}

// The device the request names: the GPU of that ordinal, or the host without a GPU.
DeviceInfo device_for(const FitRequest& request) {
  const int gpus = gpu_count();
  if (gpus > 0 && (request.device < 0 || request.device >= gpus))
    throw InputError("device " + std::to_string(request.device) + " does not exist (" + std::to_string(gpus) +
                     " CUDA GPU(s))");
  return gpus > 0 ? query_device(request.device) : query_host_cpu();
}

// The variant's tuned configuration for this problem and device, else its defaults.
Params params_for(const Variant& variant, const Problem& problem, const DeviceInfo& device) {
  Params params;
  if (auto tuned = tuned_params_for(variant, problem, device, nullptr)) {
    try {
      params = resolve_params(variant, problem, device, *tuned);
    } catch (const Error&) {
      params = Params();  // an unusable tuned config falls back to the defaults, as in `mkbench fit`
    }
  }
  if (params.is_null() || params.empty()) params = resolve_params(variant, problem, device, Params::object());
  return params;
}

}  // namespace

FitAnswer run_fit(const Dataset& data, const FitRequest& request) {
  FitSettings settings = settings_for(request);
  check_finite(data);
  Problem problem = problem_for(data.m, data.n, request);
  problem.sparsity = data.sparsity;
  const DeviceInfo gpu_device = device_for(request);
  if (request.variant != "auto" && !gpu_device.is_gpu && Registry::instance().get(request.variant).runs_on_gpu())
    throw UnsupportedError("variant " + request.variant + " needs a CUDA GPU, and there is none: " + no_gpu_reason());
  const FitVariantChoice choice = choose_fit_variant(request.variant, problem, gpu_device);
  if (choice.name.empty()) throw UnsupportedError("fit: no variant can run " + problem.str() + ": " + choice.reason);
  const Variant& variant = Registry::instance().get(choice.name);
  const DeviceInfo device = variant.runs_on_gpu() ? gpu_device : query_host_cpu();
  if (device.is_gpu) select_device(device.ordinal);
  if (auto refusal = variant.can_implement(problem, device))
    throw UnsupportedError(variant.name() + " cannot run " + problem.str() + ": " + *refusal);
  const Params params = params_for(variant, problem, device);

  settings.metrics_on_gpu = device.is_gpu;
  const auto prepare_start = std::chrono::steady_clock::now();
  std::unique_ptr<PreparedRun> run = variant.prepare(problem, data, params, device);  // the H2D upload
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
  answer.fit = std::move(result.per_k.at(0));
  answer.variant = variant.name();
  answer.variant_reason = choice.reason;
  answer.device_name = device.name;
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

}  // namespace

FitAnswer run_fit_on_device(const DevicePoints& points, const FitRequest& request) {
  const FitSettings settings = settings_for(request);
  if (points.m < 1 || points.n < 1)
    throw InputError("expected at least one point of at least one dimension, got " + std::to_string(points.m) +
                     " x " + std::to_string(points.n));
  Problem problem = problem_for(points.m, points.n, request);
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
  Params params = params_for(variant, streamed, device);
  if (params.contains("layout") && params.at("layout") == "soa") {
    // A streamed run takes row-major points (LloydState refuses layout=soa for them), so a tuned
    // transposed layout gives way to the row-major one here.
    Params overrides = params;
    overrides["layout"] = "aos";
    params = resolve_params(variant, streamed, device, overrides);
  }

  const auto prepare_start = std::chrono::steady_clock::now();
  Dataset none;  // a streamed run is prepared without point values (points_slot takes them)
  none.m = points.m;
  none.n = points.n;
  std::unique_ptr<PreparedRun> run = variant.prepare(streamed, none, params, device);
  const double prepare_seconds = seconds_since(prepare_start);
  std::vector<DeviceFit> fits = fit_device_points(points, *run, settings, device);
  DeviceFit& best = fits.at(0);
  FitAnswer answer;
  answer.seconds = {{"prepare", prepare_seconds},
                    {"device_copy", best.copy_seconds},
                    {"seeding", best.seconds.seeding},
                    {"prepare_split", best.seconds.prepare},
                    {"iterations", best.seconds.iterations},
                    {"labels", best.seconds.labels},
                    {"moments", best.seconds.metrics}};
  answer.fit = std::move(best.fit);
  answer.variant = variant.name();
  answer.variant_reason = reason;
  answer.device_name = device.name;
  answer.params = params_label(params);
  answer.tol_threshold = best.tol_threshold;
  return answer;
}

}  // namespace mk
