#include "apps/fit/fit_output.hpp"

#include <cstring>
#include <filesystem>

#include "core/errors.hpp"
#include "harness/build_info.hpp"
#include "harness/results.hpp"

namespace mk {

namespace {

using nlohmann::json;

json optional_number(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

}  // namespace

std::string npy_bytes(const std::string& descr, const std::vector<int64_t>& shape, const void* data, size_t bytes) {
  std::string dims;
  for (int64_t extent : shape) dims += std::to_string(extent) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // "(K, N)"; a 1-D shape keeps "(M,)"
  else if (!dims.empty()) dims.resize(dims.size() - 1);
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Format 1.0: magic (6), version (2), header length (2), header padded with spaces and
  // ended by '\n' so the data starts on a 64-byte boundary.
  constexpr size_t preamble = 10;
  while ((preamble + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  if (header.size() > 0xffff) throw InputError("npy header too long for format 1.0");
  std::string file = "\x93NUMPY";
  file += char(1);
  file += char(0);
  file += char(header.size() & 0xff);
  file += char(header.size() >> 8);
  file += header;
  const size_t start = file.size();
  file.resize(start + bytes);
  if (bytes) std::memcpy(&file[start], data, bytes);
  return file;
}

std::string centroids_file_name(int k) { return "centroids_k" + std::to_string(k) + ".npy"; }
std::string labels_file_name(int k) { return "labels_k" + std::to_string(k) + ".npy"; }

json fit_to_json(const FitRecord& record, bool with_files) {
  const FitResult& result = *record.result;
  const FitSettings& settings = record.settings;
  json doc;
  doc["schema"] = kFitSchema;
  doc["created"] = utc_now_iso();
  doc["command"] = invocation();
  doc["device"] = record.device.to_json();
  doc["device_option"] = record.device_option;
  // Sharded (--device 0,1 | all | cpu:N | mpirun): the devices, ranks, rows and per-step times,
  // as a results row's "parallel" (docs/multi-gpu.md); absent for one device.
  if (record.parallel) doc["parallel"] = parallel_info_to_json(*record.parallel);
  // Out of core (--chunk-points, or data the GPU cannot hold): the chunking, as a results row's.
  if (!record.out_of_core.is_null()) doc["out_of_core"] = record.out_of_core;
  doc["build"] = current_build_info().to_json();
  doc["dataset"] = record.data->identity;
  doc["m"] = record.data->m;
  doc["n"] = record.data->n;
  doc["k"] = {{"min", settings.k.kmin}, {"max", settings.k.kmax}};
  doc["variant"] = {{"name", record.variant}, {"params", record.params}, {"reason", record.variant_reason}};
  if (!record.tuned_config.empty()) doc["variant"]["tuned_config"] = record.tuned_config;
  doc["options"] = {{"init", settings.init},
                    {"max_iter", settings.max_iter},
                    {"tol", settings.tol},
                    {"tol_threshold", result.tol_threshold},
                    {"n_init", settings.n_init},
                    {"seed", settings.seed},
                    {"empty", to_string(settings.empty)},
                    {"silhouette_sample", settings.silhouette_sample},
                    {"weights", settings.weights_spec.empty() ? json(nullptr) : json(settings.weights_spec)}};
  doc["seeding"] = {{"method", result.seeding_method}};
  if (!result.seeding_path.empty()) doc["seeding"]["path"] = result.seeding_path;
  if (!result.seeding_sample_reason.empty())
    doc["seeding"]["sample"] = {{"rows", result.seeding_sample_rows}, {"reason", result.seeding_sample_reason}};
  doc["best_k"] = result.best.k ? json(*result.best.k) : json(nullptr);
  doc["best_k_rule"] = result.best.rule;
  if (!result.best.k) doc["best_k_reason"] = result.best.reason;
  doc["elbow_k"] = result.scores.elbow_k ? json(*result.scores.elbow_k) : json(nullptr);
  doc["silhouette_points"] = result.scores.silhouette_points;
  doc["steps"] = result.steps;
  const FitSeconds& t = result.seconds;
  // The Ks of the range share every pass (one fused multi-K pass), so time is split by phase
  // for the whole fit, not by K.
  doc["time_s"] = {{"load", t.load},
                   {"upload", t.upload},
                   {"seeding", t.seeding},
                   {"prepare", t.prepare},
                   {"iterations", t.iterations},
                   {"labels", t.labels},
                   {"metrics", t.metrics},
                   {"total", t.seeding + t.prepare + t.iterations + t.labels + t.metrics}};
  // Each step's wall time (restarts in order): the first step's one-time costs apart from the
  // steady steps.
  json step_ms = json::array();
  for (double seconds : result.step_seconds) step_ms.push_back(seconds * 1e3);
  doc["step_ms"] = std::move(step_ms);
  json per_k = json::array();
  for (size_t index = 0; index < result.per_k.size(); ++index) {
    const KFit& fit = result.per_k[index];
    const KScores& scores = result.scores.per_k[index];
    json entry = {{"k", fit.k},
                  {"iterations", fit.iterations},
                  {"converged", fit.converged},
                  {"last_shift", fit.last_shift},
                  {"inertia", fit.inertia},
                  {"nonempty_clusters", scores.nonempty},
                  {"restart", result.best_restart[index]},
                  {"calinski_harabasz", optional_number(scores.calinski_harabasz)},
                  {"davies_bouldin", optional_number(scores.davies_bouldin)},
                  {"silhouette", optional_number(scores.silhouette)}};
    if (with_files) {
      entry["centroids_file"] = centroids_file_name(fit.k);
      entry["labels_file"] = labels_file_name(fit.k);
    }
    per_k.push_back(entry);
  }
  doc["per_k"] = per_k;
  return doc;
}

void write_fit_outputs(const std::string& folder, const FitRecord& record) {
  namespace fs = std::filesystem;
  const fs::path dir(folder);
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw InputError("cannot create --out folder " + folder + ": " + error.message());
  // A fit.json left from an earlier fit would vouch for files this one is replacing.
  fs::remove(dir / "fit.json", error);
  if (error) throw InputError("cannot remove the old " + (dir / "fit.json").string() + ": " + error.message());
  const int n = record.data->n;
  for (const KFit& fit : record.result->per_k) {
    write_text_atomically((dir / centroids_file_name(fit.k)).string(),
                          npy_bytes("<f4", {fit.k, n}, fit.centroids.data(), fit.centroids.size() * sizeof(float)));
    write_text_atomically((dir / labels_file_name(fit.k)).string(),
                          npy_bytes("<i4", {int64_t(fit.labels.size())}, fit.labels.data(),
                                    fit.labels.size() * sizeof(int32_t)));
  }
  write_text_atomically((dir / "fit.json").string(), fit_to_json(record, true).dump(2) + "\n");
}

}  // namespace mk
