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
  double max_abs = 0;            // the largest |coordinate|: the scale of FP32 centroid rounding
  double mean_variance() const;  // mean over the features
};

// Two passes (mean, then squared deviations) so a large offset does not cancel the variance.
DataMoments data_moments(const Dataset& data);

// scikit-learn's tolerance: tol * mean(var(X, axis=0)); a K has converged once the squared
// Frobenius norm of its centroids' change in a step (KStepSummary::shift) is at most this.
double shift_threshold(const DataMoments& moments, double tol);

// The shift, per centroid coordinate, that FP32 centroids cannot tell from the order of their
// sums: 4 FP32 ULPs at the data's largest magnitude, squared. The GPU variants add their sums in
// a different order every step (atomics; shared-atomics and registers-multik add FP32 block sums
// first), so with unchanged labels a centroid still moves by an ULP or so and a tol of 0 would
// never be met: on the device, shared-atomics ran 228 steps where scikit-learn stopped after 22
// (tests/fit_vs_sklearn.py, one-k, c42fe97). A K whose shift is at most K·N times this has stopped
// moving, which is scikit-learn's strict convergence (unchanged labels) up to summation order.
double summation_order_floor(const DataMoments& moments);

}  // namespace mk
