// mkbench._core: the C++ side of the Python package (docs/python.md). fit() runs apps/fit's
// Lloyd loop (fit_k_range: seeding, iterations to scikit-learn's tol, the final labelled pass)
// on a float32 C-contiguous array, choosing the variant as `mkbench fit --variant auto` does:
// the GPU's when there is one, cpu-openmp without; fit_device() the same on a device array,
// consumed on the device (python/fit_runner.hpp). The scikit-learn estimator around them is
// mkbench/kmeans.py, which converts and checks the input first. run() and suite() are the CLI's
// `run` and `suite` commands, their results documents as text.
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

#include "apps/fit/device_points.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "harness/cli_run.hpp"
#include "harness/suite.hpp"
#include "python/fit_runner.hpp"
#include "variants/chunked/chunked_base.hpp"
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
  // All cores: one core's memcpy of 10M x 32 floats took most of the 1.0 s "staging" that
  // python/bench/bench_vs_sklearn.py measured on an H100 at 846ad20.
  chunked::copy_floats_parallel(data.values.data(), points.data(), data.values.size());
  data.identity = {{"kind", "python-array"}, {"m", data.m}, {"n", data.n}};
  data.sparsity = measure_sparsity(data.values);
  return data;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

FitRequest request_of(int k, int k_max, const std::string& init, const std::optional<FloatArray>& initial,
                      int max_iter, double tol, int n_init, uint64_t seed, const std::string& variant, int device,
                      const std::optional<std::string>& placement) {
  FitRequest request;
  request.k = k;
  request.k_max = k_max;
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
  request.placement = placement;
  return request;
}

py::object optional_value(const std::optional<double>& value) {
  return value ? py::object(py::float_(*value)) : py::object(py::none());
}

// A NumPy array that owns `values` (freed when Python drops the array).
py::array_t<int32_t> owned_array(LabelValues&& values) {
  auto* owned = new LabelValues(std::move(values));
  py::capsule free_when_done(owned, [](void* pointer) { delete static_cast<LabelValues*>(pointer); });
  return py::array_t<int32_t>({py::ssize_t(owned->size())}, {py::ssize_t(sizeof(int32_t))}, owned->data(),
                              free_when_done);
}

// One K's fit, with the names scikit-learn gives the estimator's attributes, and the K-choice
// scores fit.json records for it (a range's; None for one K). Its labels move into the array.
py::dict k_dict(KFit& fit, const KScores* scores, int restart, int n) {
  py::array_t<float> centroids({py::ssize_t(fit.k), py::ssize_t(n)});
  std::memcpy(centroids.mutable_data(), fit.centroids.data(), fit.centroids.size() * sizeof(float));
  // The labels are handed to NumPy, not copied: a copy of 10M labels and the free of the C++
  // vector after "total" were most of the 2.5 ms Python overhead measured on an H100 (d67c0f1).
  py::array_t<int32_t> labels = owned_array(std::move(fit.labels));
  py::dict out;
  out["k"] = fit.k;
  out["cluster_centers"] = centroids;
  out["labels"] = labels;
  out["inertia"] = fit.inertia;
  out["n_iter"] = fit.iterations;
  out["converged"] = fit.converged;
  out["restart"] = restart;
  out["nonempty_clusters"] = scores ? py::object(py::int_(scores->nonempty)) : py::object(py::none());
  out["calinski_harabasz"] = scores ? optional_value(scores->calinski_harabasz) : py::object(py::none());
  out["davies_bouldin"] = scores ? optional_value(scores->davies_bouldin) : py::object(py::none());
  out["silhouette"] = scores ? optional_value(scores->silhouette) : py::object(py::none());
  return out;
}

// The chosen K's fit at the top level (every K's under "per_k" for a range, with best_k).
py::dict answer_dict(FitAnswer& answer, int n, std::chrono::steady_clock::time_point start) {
  const bool range = answer.per_k.size() > 1;
  py::list per_k;
  for (size_t index = 0; index < answer.per_k.size(); ++index)
    per_k.append(k_dict(answer.per_k[index], range ? &answer.scores.per_k.at(index) : nullptr,
                        answer.best_restart.at(index), n));
  // A shallow copy: the arrays are shared, and per_k holds no cycle back to the answer.
  py::dict out = per_k[answer.best_index].attr("copy")().cast<py::dict>();
  if (range) {
    out["per_k"] = per_k;
    out["best_k"] = *answer.best.k;
    out["best_k_rule"] = answer.best.rule;
    out["elbow_k"] = answer.scores.elbow_k ? py::object(py::int_(*answer.scores.elbow_k)) : py::object(py::none());
    out["silhouette_points"] = answer.scores.silhouette_points;
  }
  out["variant"] = answer.variant;
  out["variant_reason"] = answer.variant_reason;
  out["device"] = answer.device_name;
  out["placement"] = answer.placement;
  out["shards"] = answer.shards;
  out["params"] = answer.params;
  out["tol_threshold"] = answer.tol_threshold;
  answer.seconds["total"] = seconds_since(start);  // entry to here: the C++ fit, the copies, the answer's arrays
  out["seconds"] = answer.seconds;
  return out;
}

py::dict fit(const FloatArray& points, int k, const std::string& init, std::optional<FloatArray> initial,
             int max_iter, double tol, int n_init, uint64_t seed, const std::string& variant, int device, int k_max,
             const std::optional<std::string>& placement) {
  const auto start = std::chrono::steady_clock::now();
  const FitRequest request =
      request_of(k, k_max, init, initial, max_iter, tol, n_init, seed, variant, device, placement);
  FitAnswer answer;
  double staging_seconds = 0;
  const int n = points.ndim() == 2 ? static_cast<int>(points.shape(1)) : 0;
  if (points.ndim() == 2 && host_rows_fit_on_device(request, points.shape(0), n)) {
    DevicePoints rows;  // the array's own buffer, uploaded once: no staging copy
    rows.on_host = true;
    rows.data = points.data();
    rows.m = points.shape(0);
    rows.n = n;
    rows.row_stride = n;
    rows.col_stride = 1;
    {
      py::gil_scoped_release release;
      answer = run_fit_on_device(rows, request);
    }
    answer.seconds["staging"] = 0;
    return answer_dict(answer, n, start);
  }
  {
    // The staging copy is freed inside the C++ time: freeing 1.28 GB of touched pages took about
    // 0.1 s, which the benchmark otherwise counted as Python overhead (wall minus "total").
    const Dataset data = dataset_from(points);
    staging_seconds = seconds_since(start);
    py::gil_scoped_release release;  // the fit can run for minutes; other Python threads go on
    answer = run_fit(data, request);
  }
  answer.seconds["staging"] = staging_seconds;  // the host copy the variant uploads from, its sparsity scan
  return answer_dict(answer, n, start);
}

// A __cuda_array_interface__ (CuPy, torch.cuda), as mkbench/kmeans.py reads it: the pointer,
// the shape, strides in elements, the element type and the producer's stream.
py::dict fit_device(uintptr_t pointer, int64_t m, int n, int64_t row_stride, int64_t col_stride, bool float64,
                    uintptr_t stream, int k, const std::string& init, std::optional<FloatArray> initial,
                    int max_iter, double tol, int n_init, uint64_t seed, const std::string& variant, int device,
                    int k_max, const std::optional<std::string>& placement) {
  const auto start = std::chrono::steady_clock::now();
  const FitRequest request =
      request_of(k, k_max, init, initial, max_iter, tol, n_init, seed, variant, device, placement);
  DevicePoints points;
  points.data = reinterpret_cast<const void*>(pointer);
  points.m = m;
  points.n = n;
  points.row_stride = row_stride;
  points.col_stride = col_stride;
  points.float64 = float64;
  points.stream = stream;
  FitAnswer answer;
  {
    py::gil_scoped_release release;
    answer = run_fit_on_device(points, request);
  }
  return answer_dict(answer, n, start);
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
        py::arg("seed") = 42, py::arg("variant") = "auto", py::arg("device") = 0, py::arg("k_max") = 0,
        py::arg("placement") = py::none(),
        "Lloyd's k-means to convergence (apps/fit) on float32 C-contiguous points, for K or the range k..k_max "
        "(the best K's fit at the top level, every K's in per_k), on `device` or over --device's placement text; "
        "returns a dict");
  m.def(
      "run",
      [](const std::string& variant, int dims, const std::string& k, const std::string& points, int iters,
         int warmup, bool verify, const std::string& dataset, uint64_t seed, const std::string& init,
         const std::vector<std::string>& params, const std::string& device, bool use_tuned, int batch) {
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
        options.batch = batch;
        return mk::run_benchmark(options);
      },
      py::arg("variant"), py::arg("dims"), py::arg("k"), py::arg("points"), py::arg("iters"), py::arg("warmup"),
      py::arg("verify"), py::arg("dataset"), py::arg("seed"), py::arg("init"), py::arg("params"), py::arg("device"),
      py::arg("use_tuned"), py::arg("batch") = 1, "`mkbench run` for one variant; the results document (mkbench.results JSON) as text");
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
  m.def("fit_device", &mk::fit_device, py::arg("pointer"), py::arg("m"), py::arg("n"), py::arg("row_stride"),
        py::arg("col_stride"), py::arg("float64"), py::arg("stream"), py::arg("k"), py::arg("init") = "k-means++",
        py::arg("initial") = py::none(), py::arg("max_iter") = 300, py::arg("tol") = 1e-4, py::arg("n_init") = 1,
        py::arg("seed") = 42, py::arg("variant") = "auto", py::arg("device") = 0, py::arg("k_max") = 0,
        py::arg("placement") = py::none(),
        "fit() on an M x N float32/float64 array in device memory (strides in elements), consumed on the device");
  m.def("point_copies", [] {
    const mk::PointCopyCounters& counters = mk::point_copy_counters();
    py::dict out;
    out["host_to_device"] = counters.host_to_device;
    out["device_to_device"] = counters.device_to_device;
    return out;
  }, "bytes of points this process's fits copied host->device and device->device (cumulative)");
  m.def("gpu_count", &mk::gpu_count, "CUDA GPUs visible (0 without a driver or device)");
  m.def("variants", [] {
    std::vector<std::string> names;
    for (const mk::Variant* variant : mk::Registry::instance().all()) names.push_back(variant->name());
    return names;
  });
}
