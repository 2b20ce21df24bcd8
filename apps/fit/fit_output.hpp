#pragma once
// What `mkbench fit --out DIR` writes (docs/fit.md, "Outputs"): DIR/centroids_k<K>.npy (float32,
// K x N), DIR/labels_k<K>.npy (int32, M) and DIR/fit.json, each atomically (temp file beside
// it, fsync, rename), fit.json last and any earlier fit.json removed first, so a fit.json in
// DIR always describes a complete set.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/fit/fit.hpp"
#include "core/device_info.hpp"
#include "datasets/dataset.hpp"
#include "harness/results.hpp"

namespace mk {

inline constexpr const char* kFitSchema = "mkbench.fit/1";

// A whole .npy file (format 1.0, C order) for `data`: descr "<f4" or "<i4".
std::string npy_bytes(const std::string& descr, const std::vector<int64_t>& shape, const void* data, size_t bytes);

struct FitRecord {
  const FitResult* result = nullptr;
  const Dataset* data = nullptr;
  DeviceInfo device;  // where the fit ran (a GPU, or the host CPU)
  std::string variant;
  nlohmann::json params = nlohmann::json::object();
  std::string variant_reason;
  std::string tuned_config;
  FitSettings settings;
  std::string device_option;              // --device as given
  std::optional<ParallelInfo> parallel;  // a sharded fit's devices, ranks and step timings
  nlohmann::json out_of_core;            // an out-of-core fit's chunking (ChunkedRunInfo), else null
};

std::string centroids_file_name(int k);
std::string labels_file_name(int k);

// fit.json's content (without the file names when `with_files` is false: no --out).
nlohmann::json fit_to_json(const FitRecord& record, bool with_files);

// Writes the set into `folder` (created when missing).
void write_fit_outputs(const std::string& folder, const FitRecord& record);

}  // namespace mk
