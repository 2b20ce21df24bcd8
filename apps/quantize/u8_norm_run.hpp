#pragma once
// quantize's GPU path over the pixels as bytes (issue 33 part 2, seed 003's norm trick):
// a PreparedRun whose accumulate() reads 4 bytes a pixel (RGB + one pad byte, or RGBA with the
// alpha ignored) instead of 3 floats, scores every centroid as ‖c‖² − 2x·c from a per-step
// table (−2c, ‖c‖²) in shared memory, K ≤ 256 in one launch, and adds exact integer sums.
// A step (accumulate without labels) searches only the pixels whose exact bounds no longer
// hold (u8_norm_bounds.cuh); the labelling pass searches every pixel.
// It keeps the float points of its GpuRun too, for the update phase's empty-cluster policies
// (variants/common/device_update.cuh), so the step API and fit's loop work unchanged.
//
// Exactness (why the labels are those of the exact distances to the float centroids):
//   x is integer (0..255) and −2c is exact, so each score is w + Σ x_d·(−2c_d) with w = fl(‖c‖²),
//   evaluated by three fmaf. Every intermediate is bounded by S = ‖c‖² + 2·255·‖c‖₁ (the largest
//   over the centroids, found per launch), so each score is within 6·2⁻²⁴·S of its exact value
//   (three roundings in w, three in the chain) and a difference of two scores within 12·2⁻²⁴·S.
//   A pixel whose best and second-best scores differ by more than 2⁻²⁰·S (16·2⁻²⁴·S) has the
//   float winner as its exact nearest centroid; any other pixel is re-decided over all K in
//   FP64 (x − c is exact there; the squares and their sum round at 2⁻⁵³ relative, so only
//   distances within about 3·2⁻⁵³ of each other can come out in either order, and the lowest
//   index wins an equal pair). Inertia is the FP64 distance to the chosen centroid.
// Sums: per block, uint32 shared-memory sums of bytes (a block sees at most 2²⁴ pixels, so
// 255·2²⁴ < 2³²), flushed as FP64 atomics of integers below 2⁵³: exact in any order, so the
// sums, counts and centroids do not depend on the launch shape.
#include <memory>

#include "apps/quantize/image_io.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "datasets/dataset.hpp"
#include "variants/variant.hpp"

namespace mk {

inline constexpr const char* kU8NormPath = "gpu-u8-norm";

// nullopt when the byte path can run `problem` (N = 3, one K of at most 256) on `device`;
// else why not.
std::optional<std::string> u8_norm_refusal(const Problem& problem, const DeviceInfo& device);

// `rgb` is rgb_points(image) (the float copy the update phase reads); `image` the bytes.
std::unique_ptr<PreparedRun> prepare_u8_norm_run(const Problem& problem, const Dataset& rgb, const Image& image,
                                                 const DeviceInfo& device);

}  // namespace mk
