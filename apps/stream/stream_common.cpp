// What both streaming paths share on the host: the chunk size, the request's checks, the
// weighted Lloyd update and its tolerance.
#include <algorithm>
#include <cmath>
#include <string>

#include "apps/stream/sharp_math.hpp"
#include "apps/stream/stream.hpp"
#include "core/errors.hpp"

namespace mk::stream {

int64_t chunk_size(const StreamSettings& settings, int64_t m) {
  const int64_t slots = int64_t(settings.k) * draws_per_round(settings.k);
  if (settings.chunk_points > 0) {
    if (settings.chunk_points <= slots)
      throw InputError("--chunk-points " + std::to_string(settings.chunk_points) + " is too small: each chunk is " +
                       "reduced to k x ceil(3 ln k) = " + std::to_string(slots) +
                       " weighted centres, so a chunk must hold more points than that");
    // A chunk's weights are float32 counts: exact up to 2^24.
    if (settings.chunk_points > (int64_t(1) << 24))
      throw InputError("--chunk-points " + std::to_string(settings.chunk_points) + " is too large: at most 2^24 = " +
                       std::to_string(int64_t(1) << 24) + " (a chunk's weights are exact float32 counts)");
    return std::min(settings.chunk_points, m);
  }
  // Seed 001 §2.5: chunks of sqrt(n·k) points; at least 4 S so a chunk is reduced 4-fold.
  const int64_t seed_size = int64_t(std::ceil(std::sqrt(double(m) * double(settings.k))));
  return std::max<int64_t>(1, std::min({m, std::max(seed_size, 4 * slots), int64_t(1) << 24}));
}

void check_stream_request(const Dataset& data, const StreamSettings& settings) {
  if (data.m < 1 || data.n < 1) throw InputError("--stream needs data: the dataset is empty");
  if (settings.k < 1 || settings.k > data.m)
    throw InputError("--stream: K=" + std::to_string(settings.k) + " must lie in 1..M (M=" + std::to_string(data.m) + ")");
  if (settings.max_iter < 1) throw InputError("--max-iter must be at least 1");
  if (!std::isfinite(settings.tol) || settings.tol < 0) throw InputError("--tol must be a finite number >= 0");
  check_finite(data);
}

double weighted_centres_from_sums(const std::vector<double>& sums, int k, int n, std::vector<float>& centres) {
  double shift = 0;
  const size_t stride = size_t(n) + 2;
  for (int c = 0; c < k; ++c) {
    const double* s = sums.data() + size_t(c) * stride;
    const double weight = s[n];
    if (!(weight > 0)) continue;  // an empty cluster keeps its centre
    for (int d = 0; d < n; ++d) {
      const float updated = float(s[d] / weight);
      const double diff = double(updated) - double(centres[size_t(c) * n + d]);
      shift += diff * diff;
      centres[size_t(c) * n + d] = updated;
    }
  }
  return shift;
}

double weighted_inertia(const std::vector<double>& sums, int k, int n) {
  double total = 0;
  for (int c = 0; c < k; ++c) total += sums[size_t(c) * (size_t(n) + 2) + size_t(n) + 1];
  return total;
}

double weighted_tolerance(const float* points, const float* weights, int64_t count, int n, double tol) {
  std::vector<double> mean(size_t(n), 0.0), square(size_t(n), 0.0);
  double total = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double w = weights[i];
    if (w == 0) continue;
    total += w;
    for (int d = 0; d < n; ++d) mean[size_t(d)] += w * double(points[size_t(i) * n + d]);
  }
  if (!(total > 0)) return 0;
  for (int d = 0; d < n; ++d) mean[size_t(d)] /= total;
  for (int64_t i = 0; i < count; ++i) {
    const double w = weights[i];
    if (w == 0) continue;
    for (int d = 0; d < n; ++d) {
      const double diff = double(points[size_t(i) * n + d]) - mean[size_t(d)];
      square[size_t(d)] += w * diff * diff;
    }
  }
  double variance = 0;
  for (int d = 0; d < n; ++d) variance += square[size_t(d)] / total;
  return tol * variance / double(n);
}

}  // namespace mk::stream
