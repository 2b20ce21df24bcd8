#pragma once
// Per-feature mean and variance of the data, in FP64: the convergence threshold (--tol is
// relative to the mean per-feature variance, as scikit-learn's) and Calinski-Harabasz's
// between-cluster dispersion (distances of the cluster means to the data's mean) need them.
#include <vector>

#include "datasets/dataset.hpp"

namespace mk {

struct DataMoments {
  std::vector<double> mean;      // n
  std::vector<double> variance;  // n, population variance (ddof 0, numpy's default)
  double mean_variance() const;  // mean over the features
};

// Two passes (mean, then squared deviations) so a large offset does not cancel the variance.
DataMoments data_moments(const Dataset& data);

// scikit-learn's tolerance: tol * mean(var(X, axis=0)); a K has converged once the squared
// Frobenius norm of its centroids' change in a step (KStepSummary::shift) is at most this.
double shift_threshold(const DataMoments& moments, double tol);

}  // namespace mk
