#pragma once
// The numbers that choose K (docs/fit.md, "Choosing K"), each as scikit-learn defines it on
// the fit's labels: Calinski-Harabasz and Davies-Bouldin from the final pass's sums (plus
// the mean distances of metric_passes.hpp), the sampled silhouette, and the elbow of the
// inertia curve. Clusters that ended empty do not count, as sklearn sees only labels present.
#include <cstdint>
#include <optional>
#include <vector>

#include "apps/fit/data_moments.hpp"
#include "apps/fit/lloyd_loop.hpp"

namespace mk {

// Per cluster: sums / counts in FP64, k * n (an empty cluster's row is its centroid).
std::vector<double> cluster_means(const KFit& fit, int n);

// (Σ_c n_c ‖mean_c − mean‖² / (L − 1)) / (W / (m − L)), L the non-empty clusters, W the
// squared distances of the points to their cluster means: the final pass's inertia (to the
// final centroids) less Σ_c n_c ‖mean_c − centroid_c‖² (the two differ by that exactly).
// 1 when W is 0, as sklearn; nullopt unless 2 <= L <= m − 1.
std::optional<double> calinski_harabasz(const KFit& fit, const DataMoments& moments, int64_t m, int n);

// Mean over the clusters of max over the others of (s_i + s_j) / ‖mean_i − mean_j‖, s the mean
// distance of a cluster's points to its mean (`distance_sums` / counts). 0 when every s or every
// distance between means is 0, as sklearn; nullopt unless 2 <= L <= m − 1.
std::optional<double> davies_bouldin(const KFit& fit, const std::vector<double>& distance_sums, int64_t m,
                                     int n);

// Kneedle (Satopää et al., 2011) offline on the inertia curve: K and inertia scaled to [0, 1],
// the elbow is the K farthest below the line from the first to the last point (for the
// usual falling curve, the maximum of 1 − x − y). nullopt for fewer than 3 Ks or a curve
// with no point below that line.
std::optional<int> kneedle_elbow(const std::vector<int>& ks, const std::vector<double>& inertia);

}  // namespace mk
