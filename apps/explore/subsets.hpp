#pragma once
// The copies of `mkbench explore`: which attributes each one clusters, where its centroids
// start, and when it has converged. Every draw is a pure function of (seed, copy), so the
// same --seed gives the same copies on every engine and thread count.
#include <cstdint>
#include <vector>

#include "datasets/dataset.hpp"

namespace mk::explore {

// --copies R: R subsets of s distinct attributes of n, drawn independently for every copy
// (a subset may come up again, as in seed 000's 10,000 draws), each sorted ascending.
std::vector<int32_t> random_subsets(int n, int s, int64_t copies, uint64_t seed);
// --all: every one of the C(n, s) subsets once, in lexicographic order.
std::vector<int32_t> all_subsets(int n, int s);
// C(n, s), saturating at INT64_MAX.
int64_t subset_count(int n, int s);

// k distinct rows of the table for copy `copy` (Floyd's sampling, no rejection loop).
std::vector<int64_t> initial_rows(int64_t m, int k, int64_t copy, uint64_t seed);
// Each copy's initial centroids: the values of its columns at its k drawn rows
// (copies × k × s, the order SubsetProblems takes).
std::vector<float> initial_centroids(const Dataset& data, const std::vector<int32_t>& columns, int s, int k,
                                     uint64_t seed);

// `mkbench fit`'s tolerance, per copy: tol × the mean population variance of its columns.
std::vector<double> convergence_thresholds(const std::vector<double>& variances, const std::vector<int32_t>& columns,
                                           int s, double tol);
// Population variance of every attribute, FP64, two passes.
std::vector<double> attribute_variances(const Dataset& data);

}  // namespace mk::explore
