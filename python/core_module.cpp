// mkbench._core: the C++ side of the Python package (docs/python.md). One function, fit(),
// runs apps/fit's Lloyd loop (fit_k_range: seeding, iterations to scikit-learn's tol, the
// final labelled pass) on a float32 C-contiguous array, choosing the variant as `mkbench fit
// --variant auto` does: the GPU's when there is one, cpu-openmp without. The scikit-learn
// estimator around it is mkbench/kmeans.py, which converts and checks the input first.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "apps/fit/fit.hpp"
#include "apps/fit/fit_variant.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "harness/cli_run.hpp"
#include "harness/measure.hpp"
#include "harness/suite.hpp"
#include "variants/tuned_params.hpp"
#include "variants/variant.hpp"

namespace py = pybind11;

namespace mk {
namespace {

using FloatArray = py::array_t<float, py::array::c_style>;

// The points as a Dataset; the copy is the H2D staging copy the variants upload from.
Dataset dataset_from(const FloatArray& points) {
  if (points.ndim() != 2)
    throw InputError("expected a 2-D array of points (M x N), got " + std::to_string(points.ndim()) + " dimension(s)");
  Dataset data;
  data.m = points.shape(0);
  data.n = static_cast<int>(points.shape(1));
  if (data.m < 1 || data.n < 1)
    throw InputError("expected at least one point of at least one dimension, got " + std::to_string(data.m) + " x " +
                     std::to_string(points.shape(1)));
  data.values.resize(static_cast<size_t>(data.m) * data.n);
  std::memcpy(data.values.data(), points.data(), data.values.size() * sizeof(float));
  data.identity = {{"kind", "python-array"}, {"m", data.m}, {"n", data.n}};
  data.sparsity = measure_sparsity(data.values);
  return data;
}

struct FitRequest {
  int k = 8;
  std::string init = "k-means++";
  std::vector<float> initial;  // k x n when init is an array
  int max_iter = 300;
  double tol = 1e-4;
  int n_init = 1;
  uint64_t seed = 42;
  std::string variant = "auto";
  int device = 0;
};

struct FitAnswer {
  KFit fit;
  std::string variant;
  std::string variant_reason;
  std::string device_name;
  std::string params;
  double tol_threshold = 0;
  // Where the C++ side's time went (fit.json's "seconds", plus what the module adds): the
  // benchmark (python/bench/bench_vs_sklearn.py) takes the Python overhead of KMeans.fit as
  // its wall time minus "total".
  std::map<std::string, double> seconds;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The choices of fit_command (apps/fit/cli_fit.cpp) for data already in memory.
FitAnswer run_fit(const Dataset& data, const FitRequest& request) {
  if (request.n_init < 1) throw InputError("n_init must be at least 1, got " + std::to_string(request.n_init));
  if (request.max_iter < 1) throw InputError("max_iter must be at least 1, got " + std::to_string(request.max_iter));
  if (!(request.tol >= 0)) throw InputError("tol cannot be negative, got " + std::to_string(request.tol));
  check_finite(data);
  FitSettings settings;
  settings.k = KRange{request.k, request.k};
  settings.init = request.initial.empty() ? request.init : "array";
  settings.initial_centroids = request.initial;
  settings.max_iter = request.max_iter;
  settings.tol = request.tol;
  settings.n_init = request.initial.empty() ? request.n_init : 1;
  settings.seed = request.seed;
  settings.silhouette_sample = 0;  // the estimator reports no K-choice scores

  Problem problem;
  problem.m = data.m;
  problem.n = data.n;
  problem.k = settings.k;
  problem.sparsity = data.sparsity;
  if (request.k < 1) throw InputError("n_clusters must be at least 1, got " + std::to_string(request.k));
  validate(problem);  // K > M and the like
  if (!request.initial.empty() && request.initial.size() != size_t(request.k) * size_t(data.n))
    throw InputError("init array has " + std::to_string(request.initial.size()) + " values, expected n_clusters x " +
                     "n_features = " + std::to_string(size_t(request.k) * size_t(data.n)));

  const int gpus = gpu_count();
  if (gpus > 0 && (request.device < 0 || request.device >= gpus))
    throw InputError("device " + std::to_string(request.device) + " does not exist (" + std::to_string(gpus) +
                     " CUDA GPU(s))");
  const DeviceInfo gpu_device = gpus > 0 ? query_device(request.device) : query_host_cpu();
  if (request.variant != "auto" && !gpu_device.is_gpu && Registry::instance().get(request.variant).runs_on_gpu())
    throw UnsupportedError("variant " + request.variant + " needs a CUDA GPU, and there is none: " + no_gpu_reason());
  const FitVariantChoice choice = choose_fit_variant(request.variant, problem, gpu_device);
  if (choice.name.empty()) throw UnsupportedError("fit: no variant can run " + problem.str() + ": " + choice.reason);
  const Variant& variant = Registry::instance().get(choice.name);
  const DeviceInfo device = variant.runs_on_gpu() ? gpu_device : query_host_cpu();
  if (device.is_gpu) select_device(device.ordinal);
  if (auto refusal = variant.can_implement(problem, device))
    throw UnsupportedError(variant.name() + " cannot run " + problem.str() + ": " + *refusal);
  Params params;
  if (auto tuned = tuned_params_for(variant, problem, device, nullptr)) {
    try {
      params = resolve_params(variant, problem, device, *tuned);
    } catch (const Error&) {
      params = Params();  // an unusable tuned config falls back to the defaults, as in `mkbench fit`
    }
  }
  if (params.is_null() || params.empty()) params = resolve_params(variant, problem, device, Params::object());

  settings.metrics_on_gpu = device.is_gpu;
  const auto prepare_start = std::chrono::steady_clock::now();
  std::unique_ptr<PreparedRun> run = variant.prepare(problem, data, params, device);  // the H2D upload
  const double upload_seconds = seconds_since(prepare_start);
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

py::dict fit(const FloatArray& points, int k, const std::string& init, std::optional<FloatArray> initial,
             int max_iter, double tol, int n_init, uint64_t seed, const std::string& variant, int device) {
  FitRequest request;
  request.k = k;
  request.init = init;
  if (initial) {
    if (initial->ndim() != 2) throw InputError("init array must be 2-D (n_clusters x n_features)");
    request.initial.assign(initial->data(), initial->data() + initial->size());
  }
  request.max_iter = max_iter;
  request.tol = tol;
  request.n_init = n_init;
  request.seed = seed;
  request.variant = variant;
  request.device = device;
  const auto start = std::chrono::steady_clock::now();
  const Dataset data = dataset_from(points);
  const double staging_seconds = seconds_since(start);
  FitAnswer answer;
  {
    py::gil_scoped_release release;  // the fit can run for minutes; other Python threads go on
    answer = run_fit(data, request);
  }
  const KFit& fit = answer.fit;
  py::array_t<float> centroids({py::ssize_t(fit.k), py::ssize_t(data.n)});
  std::memcpy(centroids.mutable_data(), fit.centroids.data(), fit.centroids.size() * sizeof(float));
  py::array_t<int32_t> labels(py::ssize_t(fit.labels.size()));
  std::memcpy(labels.mutable_data(), fit.labels.data(), fit.labels.size() * sizeof(int32_t));
  py::dict out;
  out["cluster_centers"] = centroids;
  out["labels"] = labels;
  out["inertia"] = fit.inertia;
  out["n_iter"] = fit.iterations;
  out["converged"] = fit.converged;
  out["variant"] = answer.variant;
  out["variant_reason"] = answer.variant_reason;
  out["device"] = answer.device_name;
  out["params"] = answer.params;
  out["tol_threshold"] = answer.tol_threshold;
  answer.seconds["staging"] = staging_seconds;  // the host copy the variant uploads from, its sparsity scan
  answer.seconds["total"] = seconds_since(start);  // entry to here: the C++ fit, the copies, the answer's arrays
  out["seconds"] = answer.seconds;
  return out;
}

// A temporary results file for one command, removed when the answer has been read.
std::filesystem::path temporary_results_path(const std::string& command) {
  static std::atomic<int> counter{0};
  return std::filesystem::temp_directory_path() / ("mkbench-python-" + command + "-" + std::to_string(::getpid()) +
                                                   "-" + std::to_string(counter++) + ".json");
}

struct RemoveOnExit {
  std::filesystem::path path;
  ~RemoveOnExit() { std::filesystem::remove(path); }
};

std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// `mkbench run` itself (harness/cli_run.cpp: variant choice, memory plan, tuned configs,
// timing, --verify) for one variant; its results file, read back as text, is the answer.
std::string run_benchmark(const RunOptions& given) {
  RunOptions options = given;
  options.dims_given = options.points_given = true;
  options.format = "table";
  const auto path = temporary_results_path("run");
  options.out = path.string();
  const RemoveOnExit remove{path};
  {
    py::gil_scoped_release release;
    run_command(options);  // refusals and device failures throw; a failed --verify is in the row
  }
  return read_text(path);
}

// `mkbench suite NAME --out FILE` itself (harness/suite.cpp: the plan, the CPU fallback without a
// GPU, tuned configs, --verify); the answer is its exit status and the results document as text
// (empty when the suite stopped before writing a row). The suite rewrites FILE after every row,
// so a row that failed on the device leaves the rows before it in the document.
std::pair<int, std::string> run_suite_document(const SuiteOptions& given) {
  SuiteOptions options = given;
  options.format = "table";
  const auto path = temporary_results_path("suite");
  options.out = path.string();
  const RemoveOnExit remove{path};
  int code = 0;
  {
    py::gil_scoped_release release;
    code = run_suite(options);  // bad input throws; 4 (a row failed) and 5 (verification) return
  }
  return {code, std::filesystem::exists(path) ? read_text(path) : std::string()};
}

}  // namespace
}  // namespace mk

PYBIND11_MODULE(_core, m) {
  m.doc() = "mkbench's C++ core: apps/fit's Lloyd loop on CPU (OpenMP) or GPU variants";
  // The CLI's error categories (core/errors.hpp) as Python's: bad input and a shape a variant
  // cannot run are the caller's to fix (ValueError); CUDA failures are RuntimeError.
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const mk::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const mk::UnsupportedError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const mk::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  m.def("fit", &mk::fit, py::arg("points"), py::arg("k"), py::arg("init") = "k-means++",
        py::arg("initial") = py::none(), py::arg("max_iter") = 300, py::arg("tol") = 1e-4, py::arg("n_init") = 1,
        py::arg("seed") = 42, py::arg("variant") = "auto", py::arg("device") = 0,
        "Lloyd's k-means to convergence (apps/fit) on float32 C-contiguous points; returns a dict");
  m.def(
      "run",
      [](const std::string& variant, int dims, const std::string& k, const std::string& points, int iters,
         int warmup, bool verify, const std::string& dataset, uint64_t seed, const std::string& init,
         const std::vector<std::string>& params, const std::string& device, bool use_tuned) {
        mk::RunOptions options;
        options.variants = variant;
        options.dims = dims;
        options.k = k;
        options.points = points;
        options.iters = iters;
        options.warmup = warmup;
        options.verify = verify;
        options.dataset = dataset;
        options.seed = seed;
        options.init = init;
        options.params = params;
        options.device = device;
        options.use_tuned = use_tuned;
        return mk::run_benchmark(options);
      },
      py::arg("variant"), py::arg("dims"), py::arg("k"), py::arg("points"), py::arg("iters"), py::arg("warmup"),
      py::arg("verify"), py::arg("dataset"), py::arg("seed"), py::arg("init"), py::arg("params"), py::arg("device"),
      py::arg("use_tuned"), "`mkbench run` for one variant; the results document (mkbench.results JSON) as text");
  m.def(
      "suite",
      [](const std::string& name, const std::vector<std::string>& variants, bool quick, const std::string& device,
         bool verify, bool use_tuned) {
        mk::SuiteOptions options;
        options.name = name;
        options.variants = variants;
        options.quick = quick;
        options.device = device;
        options.verify_all = verify;
        options.use_tuned = use_tuned;
        return mk::run_suite_document(options);
      },
      py::arg("name"), py::arg("variants"), py::arg("quick"), py::arg("device"), py::arg("verify"),
      py::arg("use_tuned"),
      "`mkbench suite NAME`; (exit status, results document as mkbench.results JSON text)");
  m.def("gpu_count", &mk::gpu_count, "CUDA GPUs visible (0 without a driver or device)");
  m.def("variants", [] {
    std::vector<std::string> names;
    for (const mk::Variant* variant : mk::Registry::instance().all()) names.push_back(variant->name());
    return names;
  });
}
