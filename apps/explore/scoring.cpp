// The majority-vote score and the rankings of `mkbench explore` (scoring.hpp).
#include "apps/explore/scoring.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace mk::explore {

int64_t majority_correct(const int64_t* counts, int k, int classes) {
  int64_t correct = 0;
  for (int j = 0; j < k; ++j) correct += *std::max_element(counts + size_t(j) * classes, counts + size_t(j + 1) * classes);
  return correct;
}

std::vector<double> copy_accuracies(const batch::SubsetOutcome& outcome, int64_t m) {
  const int classes = std::max(outcome.classes, 1);
  std::vector<double> accuracy(static_cast<size_t>(outcome.count));
  for (int64_t b = 0; b < outcome.count; ++b)
    accuracy[size_t(b)] =
        double(majority_correct(outcome.class_counts.data() + size_t(b) * outcome.k * classes, outcome.k, classes)) /
        double(m);
  return accuracy;
}

std::vector<RankedSubset> rank_subsets(const std::vector<int32_t>& columns, int s, const std::vector<double>& accuracy) {
  std::map<std::vector<int32_t>, RankedSubset> by_columns;
  for (size_t b = 0; b < accuracy.size(); ++b) {
    std::vector<int32_t> key(columns.begin() + b * s, columns.begin() + (b + 1) * s);
    RankedSubset& subset = by_columns[key];
    if (subset.copies == 0 || accuracy[b] > subset.best) subset.best = accuracy[b], subset.best_copy = int64_t(b);
    if (subset.copies == 0 || accuracy[b] < subset.worst) subset.worst = accuracy[b];
    subset.mean += accuracy[b];
    ++subset.copies;
    subset.columns = key;
  }
  std::vector<RankedSubset> ranked;
  ranked.reserve(by_columns.size());
  for (auto& entry : by_columns) {
    entry.second.mean /= double(entry.second.copies);
    ranked.push_back(std::move(entry.second));
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const RankedSubset& a, const RankedSubset& b) {
    if (a.best != b.best) return a.best > b.best;
    return a.mean > b.mean;
  });
  return ranked;
}

std::vector<int64_t> rank_copies(const std::vector<double>& accuracy) {
  std::vector<int64_t> order(accuracy.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return accuracy[a] > accuracy[b]; });
  return order;
}

std::vector<AttributeSummary> summarise_attributes(int n, const std::vector<int32_t>& columns, int s,
                                                   const std::vector<double>& accuracy) {
  std::vector<AttributeSummary> out(static_cast<size_t>(n));
  for (int a = 0; a < n; ++a) out[size_t(a)].attribute = a;
  for (size_t b = 0; b < accuracy.size(); ++b)
    for (int d = 0; d < s; ++d) {
      AttributeSummary& summary = out[size_t(columns[b * s + d])];
      summary.best = summary.copies == 0 ? accuracy[b] : std::max(summary.best, accuracy[b]);
      summary.mean += accuracy[b];
      ++summary.copies;
    }
  for (AttributeSummary& summary : out)
    if (summary.copies) summary.mean /= double(summary.copies);
  return out;
}

}  // namespace mk::explore
