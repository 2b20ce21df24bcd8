#include "apps/stream/cli_stream.hpp"

#include <cstdio>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/fit/fit_output.hpp"
#include "apps/stream/stream.hpp"
#include "core/errors.hpp"
#include "core/problem.hpp"
#include "datasets/dataset.hpp"
#include "harness/build_info.hpp"
#include "harness/measure.hpp"
#include "harness/memory_plan.hpp"
#include "harness/parallel/placement.hpp"
#include "harness/results.hpp"
#include "variants/chunked/chunked_run.hpp"

namespace mk {

namespace {

using nlohmann::json;

inline constexpr const char* kStreamSchema = "mkbench.fit-stream/1";

void check_stream_options(const FitOptions& options) {
  const KRange k = parse_k_range(options.k);
  if (k.kmin != k.kmax)
    throw InputError("--stream fits one K, got the range " + options.k + " (run one --stream fit per K)");
  if (!options.weights.empty())
    throw InputError("--stream takes no --weights: its chunks weigh every point 1 (docs/streaming.md)");
  if (options.init != "k-means++")
    throw InputError("--stream seeds with k-means# and weighted k-means++; --init " + options.init +
                     " does not apply");
  if (options.empty_given)
    throw InputError("--stream takes no --empty: its Lloyd on the weighted centres keeps an empty cluster's centre");
  if (options.silhouette_given)
    throw InputError("--stream computes no K-choice metrics: leave out --silhouette-sample");
  if (options.variant != "auto" && options.variant != "cpu-openmp")
    throw InputError("--stream runs its own kernels: --variant auto (the GPU when there is one) or cpu-openmp, got " +
                     options.variant);
}

// One pass over the data needs no copy of it: a C-order .npy is read where it lies, in its memory
// mapping (hashed and checked by the same one pass as a copying load), and a generator's rows are
// generated where they are read; --hold-points holds them in host memory instead.
Dataset load_stream_data(const FitOptions& options) {
  if (!is_file_dataset_spec(options.dataset)) {
    const int64_t m = parse_count(options.points.empty() ? kFitDefaultPoints : options.points);
    const int n = options.dims > 0 ? options.dims : kFitDefaultDims;
    return options.hold_points ? load_dataset_spec(options.dataset, m, n, options.seed)
                               : load_dataset_spec_unheld(options.dataset, m, n, options.seed);
  }
  Dataset data = !options.hold_points && describe_data_source(options.dataset, 0, 0).mappable
                     ? load_dataset_spec_unheld(options.dataset, 0, 0, options.seed)
                     : load_dataset_spec(options.dataset, 0, 0, options.seed);
  if (options.dims > 0 && data.n != options.dims)
    throw InputError("--dims " + std::to_string(options.dims) + " does not match dataset '" + options.dataset +
                     "', which has " + std::to_string(data.n) + " dimensions per point");
  if (!options.points.empty() && parse_count(options.points) != data.m)
    throw InputError("--points " + options.points + " does not match dataset '" + options.dataset + "', which has " +
                     std::to_string(data.m) + " points");
  return data;
}

json stream_json(const stream::StreamResult& r, const Dataset& data, const DeviceInfo& device,
                 const stream::StreamSettings& settings, bool with_files) {
  json doc;
  doc["schema"] = kStreamSchema;
  doc["created"] = utc_now_iso();
  doc["command"] = invocation();
  doc["device"] = device.to_json();
  doc["build"] = current_build_info().to_json();
  doc["dataset"] = data.identity;
  doc["points_source"] = chunk_source_of(data).description;  // host array | memory-mapped file | generator
  doc["m"] = data.m;
  doc["n"] = data.n;
  doc["k"] = settings.k;
  doc["path"] = r.path;
  doc["options"] = {{"seed", settings.seed}, {"max_iter", settings.max_iter}, {"tol", settings.tol},
                    {"chunk_points", r.chunk_points}};
  doc["chunks"] = r.chunks;
  doc["draws_per_round"] = r.per_round;
  doc["intermediate_centres"] = r.intermediate;
  doc["intermediate_weight_sum"] = r.intermediate_weight_check;  // M: every point counted once
  doc["lloyd"] = {{"iterations", r.lloyd_iterations}, {"converged", r.converged}, {"tol_threshold", r.tol_threshold},
                  {"restarts", settings.restarts}, {"best_restart", r.restart},
                  {"intermediate_inertia", r.reduce_inertia}};
  doc["inertia"] = r.inertia;
  doc["time_s"] = {{"setup", r.seconds.setup},
                   {"chunks", r.seconds.chunks},
                   {"reduce", r.seconds.reduce},
                   {"final", r.seconds.final_pass},
                   {"total", r.seconds.total()}};
  if (with_files) {
    doc["centroids_file"] = centroids_file_name(settings.k);
    if (settings.keep_labels) doc["labels_file"] = labels_file_name(settings.k);
  }
  return doc;
}

// As write_fit_outputs: any old fit.json goes first, the arrays next, fit.json last, each
// atomically, so a fit.json present describes a complete set (a fit killed before the end
// leaves none).
void write_stream_outputs(const std::string& folder, const json& doc, const stream::StreamResult& r, int k, int n) {
  namespace fs = std::filesystem;
  const fs::path dir(folder);
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw InputError("cannot create --out folder " + folder + ": " + error.message());
  fs::remove(dir / "fit.json", error);
  if (error) throw InputError("cannot remove the old " + (dir / "fit.json").string() + ": " + error.message());
  write_text_atomically((dir / centroids_file_name(k)).string(),
                        npy_bytes("<f4", {k, n}, r.centroids.data(), r.centroids.size() * sizeof(float)));
  if (!r.labels.empty())
    write_text_atomically((dir / labels_file_name(k)).string(),
                          npy_bytes("<i4", {int64_t(r.labels.size())}, r.labels.data(), r.labels.size() * sizeof(int32_t)));
  write_text_atomically((dir / "fit.json").string(), doc.dump(2) + "\n");
}

}  // namespace

int stream_fit_command(const FitOptions& options) {
  check_fit_options(options);
  check_stream_options(options);
  stream::StreamSettings settings;
  settings.k = parse_k_range(options.k).kmin;
  settings.seed = options.seed;
  settings.max_iter = options.max_iter;
  settings.tol = options.tol;
  settings.keep_labels = !options.out.empty();
  settings.restarts = options.n_init;
  if (!options.chunk_points.empty()) {
    settings.chunk_points = parse_count(options.chunk_points);
    if (settings.chunk_points < 1) throw InputError("--chunk-points must be at least 1, got " + options.chunk_points);
  }

  const DeviceSpec spec = parse_device_spec(options.device);  // InputError for malformed text
  if (spec.cpu || spec.all_gpus || spec.gpus.size() != 1)
    throw InputError("--stream runs on one device: give --device one GPU ordinal, not '" + options.device + "'");
  const int ordinal = spec.gpus.front();
  const int gpus = options.variant == "cpu-openmp" ? 0 : gpu_count();
  if (gpus > 0 && ordinal >= gpus)
    throw InputError("--device " + std::to_string(ordinal) + " does not exist (" + std::to_string(gpus) +
                     " CUDA GPU(s))");
  const DeviceInfo device = gpus > 0 ? query_device(ordinal) : query_host_cpu();
  const Dataset data = load_stream_data(options);
  stream::check_stream_request(data, settings);
  (void)stream::chunk_size(settings, data.m);  // a too-small --chunk-points fails before any work
  if (!options.quiet)
    std::cerr << "fit --stream: " << (device.is_gpu ? "GPU" : "cpu-openmp") << " on " << device.name << "\n";
  const stream::StreamResult result =
      device.is_gpu ? stream::stream_fit_gpu(data, settings, device) : stream::stream_fit_cpu(data, settings);

  const json doc = stream_json(result, data, device, settings, !options.out.empty());
  if (!options.out.empty()) write_stream_outputs(options.out, doc, result, settings.k, data.n);
  char line[256];
  std::snprintf(line, sizeof line,
                "K=%d  inertia %.6e  chunks %lld of %lld points  intermediate centres %lld  Lloyd %d steps%s\n",
                settings.k, result.inertia, (long long)result.chunks, (long long)result.chunk_points,
                (long long)result.intermediate, result.lloyd_iterations, result.converged ? " (converged)" : "");
  std::cout << line;
  std::snprintf(line, sizeof line, "time: setup %.3f s, chunks %.3f s, reduce %.3f s, final pass %.3f s, total %.3f s\n",
                result.seconds.setup, result.seconds.chunks, result.seconds.reduce, result.seconds.final_pass,
                result.seconds.total());
  std::cout << line;
  return kExitOk;
}

}  // namespace mk
