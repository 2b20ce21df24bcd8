#include "reports/stats.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"

namespace mk::reports {

double quantile(std::vector<double> values, double q) {
  if (values.empty()) throw InputError("quantile of an empty sample");
  std::sort(values.begin(), values.end());
  const double position = std::clamp(q, 0.0, 1.0) * double(values.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, values.size() - 1);
  const double fraction = position - double(below);
  return values[below] + fraction * (values[above] - values[below]);
}

double median(std::vector<double> values) { return quantile(std::move(values), 0.5); }

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

namespace {

// Number of arrangements of n1 "first" and n2 "second" values giving each U (0..n1·n2),
// by the recurrence f(n1,n2,u) = f(n1-1,n2,u-n2) + f(n1,n2-1,u): the largest value is
// either a "first" (beating all n2 seconds) or a "second".
std::vector<double> exact_u_counts(size_t n1, size_t n2) {
  // table[i][j] is the distribution for sizes (i, j); only two rows of i are kept.
  std::vector<std::vector<std::vector<double>>> rows(2, std::vector<std::vector<double>>(n2 + 1));
  for (size_t i = 0; i <= n1; ++i) {
    auto& current = rows[i % 2];
    const auto& previous = rows[(i + 1) % 2];
    for (size_t j = 0; j <= n2; ++j) {
      std::vector<double> counts(i * j + 1, 0.0);
      if (i == 0 || j == 0) {
        counts[0] = 1.0;
      } else {
        const auto& first_largest = previous[j];    // sizes (i-1, j), shifted by j
        const auto& second_largest = current[j - 1];  // sizes (i, j-1)
        for (size_t u = 0; u < first_largest.size(); ++u) counts[u + j] += first_largest[u];
        for (size_t u = 0; u < second_largest.size(); ++u) counts[u] += second_largest[u];
      }
      current[j] = std::move(counts);
    }
  }
  return rows[n1 % 2][n2];
}

}  // namespace

MannWhitneyResult mann_whitney_u(const std::vector<double>& first,
                                 const std::vector<double>& second) {
  if (first.empty() || second.empty())
    throw InputError("Mann-Whitney U needs at least one sample on each side");
  const size_t n1 = first.size(), n2 = second.size(), total = n1 + n2;

  // Rank the pooled sample (average ranks for ties) and collect tie group sizes.
  std::vector<std::pair<double, int>> pooled;
  pooled.reserve(total);
  for (double v : first) pooled.push_back({v, 0});
  for (double v : second) pooled.push_back({v, 1});
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  double rank_sum_first = 0, tie_term = 0;
  bool has_ties = false;
  for (size_t start = 0; start < total;) {
    size_t end = start;
    while (end < total && pooled[end].first == pooled[start].first) ++end;
    const double group = double(end - start);
    const double average_rank = (double(start + 1) + double(end)) / 2.0;
    for (size_t i = start; i < end; ++i)
      if (pooled[i].second == 0) rank_sum_first += average_rank;
    if (group > 1) {
      has_ties = true;
      tie_term += group * group * group - group;
    }
    start = end;
  }

  MannWhitneyResult result;
  result.has_ties = has_ties;
  result.u_first = rank_sum_first - double(n1) * double(n1 + 1) / 2.0;
  result.u_second = double(n1) * double(n2) - result.u_first;

  if (!has_ties && n1 <= kExactMaxSize && n2 <= kExactMaxSize) {
    const std::vector<double> counts = exact_u_counts(n1, n2);
    double arrangements = 0;
    for (double c : counts) arrangements += c;
    // The null distribution is symmetric, so the two-sided p doubles the smaller tail.
    const size_t u_small = static_cast<size_t>(std::lround(std::min(result.u_first, result.u_second)));
    double tail = 0;
    for (size_t u = 0; u <= u_small; ++u) tail += counts[u];
    result.exact = true;
    result.p_value = std::min(1.0, 2.0 * tail / arrangements);
    return result;
  }

  const double mean_u = double(n1) * double(n2) / 2.0;
  const double variance = double(n1) * double(n2) / 12.0 *
                          (double(total + 1) - tie_term / (double(total) * double(total - 1)));
  if (variance <= 0) {  // every value identical: no evidence of any difference
    result.p_value = 1.0;
    return result;
  }
  const double distance = std::max(0.0, std::fabs(result.u_first - mean_u) - 0.5);
  result.z = distance / std::sqrt(variance);
  result.p_value = std::min(1.0, std::erfc(result.z / std::sqrt(2.0)));
  return result;
}

}  // namespace mk::reports
