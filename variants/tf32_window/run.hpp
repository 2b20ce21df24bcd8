#pragma once
// tf32-window's prepared run: the device buffers, the kernel chosen for the shape and the
// params, and one Lloyd iteration as two launches (the centroid image, then the kernel).
#include <cstdint>
#include <memory>
#include <string>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "datasets/dataset.hpp"
#include "variants/tf32_window/translation.hpp"
#include "variants/variant.hpp"

namespace mk::tf32_window {

// The second sweep's vote pays where most n-tiles hold no in-window key. H200, N=32, M=2M,
// skip against count: K=1024 1.18 against 1.22-1.23 ms, K=512 0.748-0.753 against
// 0.736-0.743, K=256 0.536-0.540 against 0.518-0.524 (commit 2b5f5cc).
constexpr int64_t kSkipEmptyTilesFromKpad = 1024;
inline bool skips_empty_tiles(const Params& params, int64_t kpad) {
  if (params.contains("empty_tiles")) return params.at("empty_tiles").get<std::string>() == "skip";
  return kpad >= kSkipEmptyTilesFromKpad;
}

// update: shared sums in the block (FP32, flushed) or FP64 atomics into global memory; a
// params object without it (a direct caller's) takes the global atomics.
inline bool shares_update(const Params& params) {
  return params.contains("update") && params.at("update").get<std::string>() == "shared";
}

// Params: grid, block, empty_tiles, update (variant.cu declares them). Throws UnsupportedError
// where the block cannot be resident.
std::unique_ptr<PreparedRun> make_window_run(const Problem& problem, const Dataset& data, const Params& params,
                                             const DeviceInfo& device, const Translation& translation);

}  // namespace mk::tf32_window
