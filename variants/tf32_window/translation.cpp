#include "variants/tf32_window/translation.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "core/errors.hpp"

namespace mk::tf32_window {

Translation translation_for(const Dataset& data) {
  const int n = data.n;
  std::vector<double> mean(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < data.m; ++i)
    for (int d = 0; d < n; ++d) mean[size_t(d)] += data.at(i, d);
  Translation translation;
  translation.center.resize(size_t(n));
  for (int d = 0; d < n; ++d) translation.center[size_t(d)] = float(mean[size_t(d)] / double(data.m));
  double largest = 0.0;
  for (int64_t i = 0; i < data.m; ++i) {
    double sq = 0.0;
    for (int d = 0; d < n; ++d) {
      const float centred = data.at(i, d) - translation.center[size_t(d)];
      sq += double(centred) * centred;
    }
    largest = std::max(largest, sq);
  }
  // Exact distances, their per-lane inertia sums and the keys' accumulators are FP32, and
  // padding columns carry norms of 1e30: squared distances (at most ~4·largest) must stay
  // well below that.
  constexpr double kLargestNorm2 = 1e28;
  if (!(largest <= kLargestNorm2)) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "tf32-window: the data reach |x - mean|^2 = %.3g, beyond the 1e28 its FP32 keys hold; use "
                  "gemm-tf32x3",
                  largest);
    throw UnsupportedError(text);
  }
  // Below this the exact arbiter's FP32 squared distances fall into subnormals and then to
  // zero: every centroid would tie. (All-equal data, largest = 0, ties exactly and is fine.)
  constexpr double kSmallestNorm2 = 1e-30;
  if (largest > 0.0 && largest < kSmallestNorm2) {
    char text[200];
    std::snprintf(text, sizeof text,
                  "tf32-window: the data span only |x - mean|^2 = %.3g, below the 1e-30 where FP32 squared "
                  "distances keep their precision; rescale the data",
                  largest);
    throw UnsupportedError(text);
  }
  translation.largest = float(largest * 1.0001);  // FP64 sum of FP32 differences, rounded: widen a little
  return translation;
}

}  // namespace mk::tf32_window
