#include "variants/gemm_window/translation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/errors.hpp"

namespace mk::gemm_window {
namespace {

// Exact distances are FP64 sums rounded to FP32 for the arbitration, and the inertia's FP32
// partials hold squared differences: ‖x − c‖² ≤ 4·max ‖x − μ‖² must stay below FLT_MAX
// (3.4e38). Below 1e-30 squared distances fall into FP32 subnormals and lose their order.
constexpr double kLargestNorm2 = 1e37;
constexpr double kSmallestNorm2 = 1e-30;

void check_range(double largest, const char* what) {
  char text[240];
  if (!std::isfinite(largest) || largest > kLargestNorm2) {
    std::snprintf(text, sizeof text,
                  "gemm-window: the %s reach |x - mean|^2 = %.3g, beyond the 1e37 its FP32 distances hold; rescale "
                  "the data or use gemm-tf32x3",
                  what, largest);
    throw UnsupportedError(text);
  }
  if (largest > 0.0 && largest < kSmallestNorm2) {
    std::snprintf(text, sizeof text,
                  "gemm-window: the %s span only |x - mean|^2 = %.3g, below the 1e-30 where FP32 squared distances "
                  "keep their precision; rescale the data",
                  what, largest);
    throw UnsupportedError(text);
  }
}

}  // namespace

Translation translation_for(const Dataset& data) {
  const int n = data.n;
  const int64_t m = data.m;
  std::vector<double> mean(static_cast<size_t>(n), 0.0);
#pragma omp parallel
  {
    std::vector<double> local(static_cast<size_t>(n), 0.0);
#pragma omp for nowait
    for (int64_t i = 0; i < m; ++i)
      for (int d = 0; d < n; ++d) local[size_t(d)] += data.at(i, d);
#pragma omp critical
    for (int d = 0; d < n; ++d) mean[size_t(d)] += local[size_t(d)];
  }
  Translation translation;
  translation.center.resize(size_t(n));
  for (int d = 0; d < n; ++d) translation.center[size_t(d)] = float(mean[size_t(d)] / double(m));
  double largest = 0.0;
#pragma omp parallel for reduction(max : largest)
  for (int64_t i = 0; i < m; ++i) {
    double sq = 0.0;
    for (int d = 0; d < n; ++d) {
      const float centred = data.at(i, d) - translation.center[size_t(d)];
      sq += double(centred) * centred;
    }
    largest = std::max(largest, std::isnan(sq) ? INFINITY : sq);
  }
  check_range(largest, "data");
  // An FP64 sum of FP32 squares, rounded: widen a little so it bounds the kernel's values.
  translation.largest_norm2 = float(largest * 1.0001);
  return translation;
}

void check_centroid_range(const std::vector<float>& packed, int n, const std::vector<float>& center) {
  double largest = 0.0;
  const size_t slots = n > 0 ? packed.size() / size_t(n) : 0;
  for (size_t s = 0; s < slots; ++s) {
    double sq = 0.0;
    for (int d = 0; d < n; ++d) {
      const double centred = double(packed[s * size_t(n) + size_t(d)]) - center[size_t(d)];
      sq += centred * centred;
    }
    largest = std::max(largest, std::isnan(sq) ? INFINITY : sq);
  }
  if (!std::isfinite(largest) || largest > kLargestNorm2) check_range(largest, "centroids");
}

}  // namespace mk::gemm_window
