#include "apps/fit/data_moments.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "datasets/row_cursor.hpp"

namespace mk {

namespace {

// Σ over the points of f(point), per feature, with per-thread FP64 partial sums merged in
// thread order.
template <typename F>
std::vector<double> feature_sums(const Dataset& data, F f) {
  const int n = data.n;
  std::vector<std::vector<double>> partial(static_cast<size_t>(omp_get_max_threads()),
                                           std::vector<double>(size_t(n), 0.0));
#pragma omp parallel
  {
    std::vector<double>& mine = partial[size_t(omp_get_thread_num())];
    RowCursor rows(data);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < data.m; ++i) {
      const float* x = rows.row(i);
      for (int d = 0; d < n; ++d) mine[size_t(d)] += f(double(x[d]), d);
    }
  }
  std::vector<double> total(static_cast<size_t>(n), 0.0);
  for (const auto& p : partial)
    for (int d = 0; d < n; ++d) total[size_t(d)] += p[size_t(d)];
  return total;
}

}  // namespace

double DataMoments::mean_variance() const {
  double sum = 0;
  for (double v : variance) sum += v;
  return variance.empty() ? 0.0 : sum / double(variance.size());
}

DataMoments data_moments(const Dataset& data) {
  DataMoments moments;
  const double m = double(data.m);
  moments.mean = feature_sums(data, [](double x, int) { return x; });
  for (double& value : moments.mean) value /= m;
  const std::vector<double>& mean = moments.mean;
  moments.variance = feature_sums(data, [&mean](double x, int d) {
    const double deviation = x - mean[size_t(d)];
    return deviation * deviation;
  });
  for (double& value : moments.variance) value /= m;
  double max_abs = 0;
  const int n = data.n;
#pragma omp parallel reduction(max : max_abs)
  {
    RowCursor rows(data);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < data.m; ++i) {
      const float* x = rows.row(i);
      for (int d = 0; d < n; ++d) max_abs = std::max(max_abs, double(std::fabs(x[d])));
    }
  }
  moments.max_abs = max_abs;
  return moments;
}

double shift_threshold(const DataMoments& moments, double tol) { return tol * moments.mean_variance(); }

double summation_order_floor(const DataMoments& moments) {
  const double four_ulps = std::ldexp(moments.max_abs, -21);  // 4 × 2^-23: four FP32 ULPs at max_abs
  return four_ulps * four_ulps;
}

}  // namespace mk
