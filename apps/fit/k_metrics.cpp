#include "apps/fit/k_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mk {

namespace {

int nonempty_clusters(const KFit& fit) {
  return int(std::count_if(fit.counts.begin(), fit.counts.end(), [](int64_t c) { return c > 0; }));
}

bool label_count_is_valid(int labels, int64_t m) { return labels >= 2 && labels <= m - 1; }

double squared_distance(const double* a, const double* b, int n) {
  double sum = 0;
  for (int d = 0; d < n; ++d) sum += (a[d] - b[d]) * (a[d] - b[d]);
  return sum;
}

}  // namespace

std::vector<double> cluster_means(const KFit& fit, int n) {
  std::vector<double> means(static_cast<size_t>(fit.k) * n);
  for (int c = 0; c < fit.k; ++c)
    for (int d = 0; d < n; ++d) {
      const size_t at = size_t(c) * n + size_t(d);
      means[at] = fit.counts[size_t(c)] > 0 ? fit.sums[at] / double(fit.counts[size_t(c)]) : double(fit.centroids[at]);
    }
  return means;
}

std::optional<double> calinski_harabasz(const KFit& fit, const DataMoments& moments, int64_t m, int n) {
  const int labels = nonempty_clusters(fit);
  if (!label_count_is_valid(labels, m)) return std::nullopt;
  const std::vector<double> means = cluster_means(fit, n);
  double between = 0, offset = 0;
  std::vector<double> centroid(static_cast<size_t>(n));
  for (int c = 0; c < fit.k; ++c) {
    const double count = double(fit.counts[size_t(c)]);
    if (count == 0) continue;
    const double* mean = means.data() + size_t(c) * n;
    for (int d = 0; d < n; ++d) centroid[size_t(d)] = double(fit.centroids[size_t(c) * n + size_t(d)]);
    between += count * squared_distance(mean, moments.mean.data(), n);
    offset += count * squared_distance(mean, centroid.data(), n);
  }
  const double within = std::max(0.0, fit.point_inertia.value_or(fit.inertia) - offset);
  if (within == 0) return 1.0;
  return between * double(m - labels) / (within * double(labels - 1));
}

std::optional<double> davies_bouldin(const KFit& fit, const std::vector<double>& distance_sums, int64_t m,
                                     int n) {
  const int labels = nonempty_clusters(fit);
  if (!label_count_is_valid(labels, m)) return std::nullopt;
  const std::vector<double> all_means = cluster_means(fit, n);
  std::vector<const double*> means;
  std::vector<double> spread;  // mean distance of a cluster's points to its mean
  for (int c = 0; c < fit.k; ++c) {
    if (fit.counts[size_t(c)] == 0) continue;
    means.push_back(all_means.data() + size_t(c) * n);
    spread.push_back(distance_sums[size_t(c)] / double(fit.counts[size_t(c)]));
  }
  const size_t L = means.size();
  // numpy.allclose(x, 0): every |x| <= 1e-8.
  const bool spreads_zero = std::all_of(spread.begin(), spread.end(), [](double s) { return std::abs(s) <= 1e-8; });
  bool separations_zero = true;
  std::vector<double> separation(L * L);
  for (size_t i = 0; i < L; ++i)
    for (size_t j = 0; j < L; ++j) {
      separation[i * L + j] = std::sqrt(squared_distance(means[i], means[j], n));
      separations_zero &= separation[i * L + j] <= 1e-8;
    }
  if (spreads_zero || separations_zero) return 0.0;
  double total = 0;
  for (size_t i = 0; i < L; ++i) {
    double worst = 0;  // sklearn: a zero separation counts as infinity, its ratio as 0
    for (size_t j = 0; j < L; ++j) {
      if (j == i || separation[i * L + j] == 0) continue;
      worst = std::max(worst, (spread[i] + spread[j]) / separation[i * L + j]);
    }
    total += worst;
  }
  return total / double(L);
}

std::optional<int> kneedle_elbow(const std::vector<int>& ks, const std::vector<double>& inertia) {
  const size_t count = ks.size();
  if (count < 3 || inertia.size() != count) return std::nullopt;
  const auto [low, high] = std::minmax_element(inertia.begin(), inertia.end());
  const double x_span = double(ks.back() - ks.front());
  const double y_span = *high - *low;
  if (x_span <= 0 || !(y_span > 0)) return std::nullopt;
  std::optional<int> elbow;
  // On the [0, 1] scale: below this, a point lies on the chord (a straight curve, up to rounding).
  double best = 1e-9;
  const double first = (inertia.front() - *low) / y_span, last = (inertia.back() - *low) / y_span;
  for (size_t i = 1; i + 1 < count; ++i) {
    const double x = double(ks[i] - ks.front()) / x_span;
    const double y = (inertia[i] - *low) / y_span;
    const double below = first + (last - first) * x - y;  // 1 − x − y for a falling curve
    if (below > best) best = below, elbow = ks[i];
  }
  return elbow;
}

}  // namespace mk
