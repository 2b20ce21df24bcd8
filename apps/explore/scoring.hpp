#pragma once
// The explorer's score: the majority-vote accuracy of a clustering (issue 33). Each cluster
// takes the class most of its points have; the accuracy is the share of points whose cluster's
// class is their own. It is computed from exact integer counts, needs no classifier, and a
// clustering that predicts nothing scores the largest class's share.
#include <cstdint>
#include <vector>

#include "variants/subset_batch/subset_batch.hpp"

namespace mk::explore {

// counts: k × classes points per (cluster, class); returns Σ_j max_c counts[j][c] (ties: any
// class of the maximum count, the score is the same).
int64_t majority_correct(const int64_t* counts, int k, int classes);
// Per copy: majority_correct / m.
std::vector<double> copy_accuracies(const batch::SubsetOutcome& outcome, int64_t m);

struct RankedSubset {
  std::vector<int32_t> columns;
  double best = 0, mean = 0, worst = 0;
  int64_t copies = 0;
  int64_t best_copy = 0;
};
// Distinct subsets, best first (by best accuracy, then mean, then columns).
std::vector<RankedSubset> rank_subsets(const std::vector<int32_t>& columns, int s, const std::vector<double>& accuracy);
// Copies by accuracy, best first (ties: lower copy index first).
std::vector<int64_t> rank_copies(const std::vector<double>& accuracy);

struct AttributeSummary {
  int attribute = 0;
  int64_t copies = 0;   // copies whose subset holds it
  double mean = 0;      // their mean accuracy
  double best = 0;
};
std::vector<AttributeSummary> summarise_attributes(int n, const std::vector<int32_t>& columns, int s,
                                                   const std::vector<double>& accuracy);

}  // namespace mk::explore
