#pragma once
// The passes over data that choosing K needs after convergence (docs/fit.md, "Choosing K"):
// Davies-Bouldin's mean unsquared distance of each cluster's points to the cluster's mean
// (one pass over all points), and the exact silhouette of a sample against that same sample.
// Each pass serves every K of the range at once. CPU paths use OpenMP and FP64; GPU paths
// (metric_passes_gpu.cu) compute distances in FP32 and sum them in FP64.
#include <cstdint>
#include <optional>
#include <vector>

#include "core/problem.hpp"
#include "datasets/dataset.hpp"

namespace mk {

// Per cluster slot (packed per KRange::slot_offset): Σ over the points labelled with it of
// ‖x − means[slot]‖. `labels` holds one array of m labels per K, kmin first; `means` is
// slots * n (the final pass's sums / counts; an empty cluster's row is never read).
std::vector<double> cluster_distance_sums_cpu(const Dataset& data, const KRange& k,
                                              const std::vector<const int32_t*>& labels,
                                              const std::vector<double>& means);
std::vector<double> cluster_distance_sums_gpu(const Dataset& data, const KRange& k,
                                              const std::vector<const int32_t*>& labels,
                                              const std::vector<double>& means);

// Whether cluster_distance_sums_gpu's copy of the points and labels fits the current CUDA
// device's free memory now (less the planner's reserve). Data beyond it (a fit sharded over
// several GPUs) takes the CPU pass: the points are in host memory already, and one pass over
// them at the host's memory bandwidth is faster than copying them over PCIe in pieces.
bool distance_sums_fit_gpu(int64_t m, int n, int k_count);

// The same pass over points already in the current CUDA device's memory (m x n, row-major: a
// Python device array in its run's buffer), read in place.
std::vector<double> cluster_distance_sums_on_device(const float* points, int64_t m, int n, const KRange& k,
                                                    const std::vector<const int32_t*>& labels,
                                                    const std::vector<double>& means);

// `size` distinct point indices drawn with `seed`, ascending; every point when size >= m.
std::vector<int64_t> silhouette_sample(int64_t m, int64_t size, uint64_t seed);

// A sample's points (s * n, row-major) and each K's labels of them (count * s, kmin first).
struct SampleLabels {
  std::vector<float> points;
  int64_t s = 0;
  int n = 0;
  KRange k;
  std::vector<int32_t> labels;
};
SampleLabels gather_sample(const Dataset& data, const std::vector<int64_t>& sample, const KRange& k,
                           const std::vector<const int32_t*>& labels);
// The same from points in the current CUDA device's memory: only the sample's rows come back.
SampleLabels gather_sample_on_device(const float* points, int n, const std::vector<int64_t>& sample,
                                     const KRange& k, const std::vector<const int32_t*>& labels);

// Per K, scikit-learn's silhouette_score of the sample: the mean over its points of
// (b − a) / max(a, b), a the mean distance to the other points of the same cluster, b the
// smallest mean distance to another cluster's points, 0 for a point alone in its cluster;
// clusters are the labels present in the sample. nullopt when that score is undefined
// (fewer than 2 labels, or as many labels as points).
std::vector<std::optional<double>> sample_silhouettes_cpu(const SampleLabels& sample);
std::vector<std::optional<double>> sample_silhouettes_gpu(const SampleLabels& sample);

}  // namespace mk
