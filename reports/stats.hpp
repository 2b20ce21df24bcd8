#pragma once
// Small, dependency-free statistics used by `mkbench compare` and the reports. Kept here
// (not in a stats library) because the perf gate's verdict must be reproducible from this
// file alone; reports/README.md documents the decision rule built on top of it.
#include <cstddef>
#include <vector>

namespace mk::reports {

double median(std::vector<double> values);
// Linear interpolation between order statistics (the "type 7" rule numpy and R default to),
// q in [0, 1]. Throws InputError on an empty sample.
double quantile(std::vector<double> values, double q);
double normal_cdf(double z);

struct MannWhitneyResult {
  // u_first counts the pairs (first_i, second_j) with first_i > second_j, a tie counting
  // one half; u_second = n_first·n_second − u_first.
  double u_first = 0;
  double u_second = 0;
  double z = 0;         // normal approximation statistic (0 when the exact test was used)
  double p_value = 1;   // two-sided
  bool exact = false;   // exact null distribution (small, tie-free samples)
  bool has_ties = false;
};

// Two-sided Mann-Whitney U test. Tie-free samples with both sizes <= kExactMaxSize use the
// exact null distribution; otherwise the normal approximation with tie correction of the
// variance and a continuity correction of 0.5. Throws InputError on an empty sample.
MannWhitneyResult mann_whitney_u(const std::vector<double>& first,
                                 const std::vector<double>& second);
inline constexpr size_t kExactMaxSize = 8;

}  // namespace mk::reports
