#include "apps/fit/k_choice.hpp"

#include "apps/fit/k_metrics.hpp"
#include "apps/fit/metric_passes.hpp"

namespace mk {

namespace {

// The scores of every K from the two passes over the points: `distance_sums(k, labels, means)`
// (per slot, Davies-Bouldin's) and `sample(indices, k, labels)` (the silhouette's rows).
template <typename DistanceSums, typename GatherSample>
Scores score_with(const std::vector<KFit>& fits, int64_t m, int n, const DataMoments& moments,
                  const ScoreSettings& settings, DistanceSums distance_sums_of, GatherSample sample_of) {
  Scores scores;
  if (fits.empty()) return scores;
  const KRange k{fits.front().k, fits.back().k};
  std::vector<const int32_t*> labels;
  std::vector<double> means;  // slots * n
  for (const KFit& fit : fits) {
    labels.push_back(fit.labels.data());
    const std::vector<double> mine = cluster_means(fit, n);
    means.insert(means.end(), mine.begin(), mine.end());
  }
  const std::vector<double> distance_sums = distance_sums_of(k, labels, means);
  std::vector<std::optional<double>> silhouettes(fits.size());
  if (settings.silhouette_sample > 0) {
    const SampleLabels sample = sample_of(silhouette_sample(m, settings.silhouette_sample, settings.seed), k, labels);
    scores.silhouette_points = sample.s;
    silhouettes = settings.on_gpu ? sample_silhouettes_gpu(sample) : sample_silhouettes_cpu(sample);
  }
  std::vector<int> ks;
  std::vector<double> inertia;
  for (size_t index = 0; index < fits.size(); ++index) {
    const KFit& fit = fits[index];
    KScores s;
    s.k = fit.k;
    s.inertia = fit.inertia;
    for (int64_t count : fit.counts) s.nonempty += count > 0;
    s.calinski_harabasz = calinski_harabasz(fit, moments, m, n);
    const std::vector<double> own(distance_sums.begin() + k.slot_offset(fit.k),
                                  distance_sums.begin() + k.slot_offset(fit.k) + fit.k);
    s.davies_bouldin = davies_bouldin(fit, own, m, n);
    s.silhouette = silhouettes[index];
    scores.per_k.push_back(s);
    ks.push_back(fit.k);
    inertia.push_back(fit.inertia);
  }
  scores.elbow_k = kneedle_elbow(ks, inertia);
  return scores;
}

}  // namespace

Scores score_ks(const std::vector<KFit>& fits, const Dataset& data, const DataMoments& moments,
                const ScoreSettings& settings) {
  return score_with(
      fits, data.m, data.n, moments, settings,
      [&](const KRange& k, const std::vector<const int32_t*>& labels, const std::vector<double>& means) {
        // Rows made on demand stay on the host: the GPU pass uploads them whole.
        return settings.on_gpu && data.holds_rows() && distance_sums_fit_gpu(data.m, data.n, k.count())
                   ? cluster_distance_sums_gpu(data, k, labels, means)
                   : cluster_distance_sums_cpu(data, k, labels, means);
      },
      [&](const std::vector<int64_t>& indices, const KRange& k, const std::vector<const int32_t*>& labels) {
        return gather_sample(data, indices, k, labels);
      });
}

Scores score_ks(const std::vector<KFit>& fits, const PointsOnDevice& data, const DataMoments& moments,
                const ScoreSettings& settings) {
  ScoreSettings on_device = settings;
  on_device.on_gpu = true;
  return score_with(
      fits, data.m, data.n, moments, on_device,
      [&](const KRange& k, const std::vector<const int32_t*>& labels, const std::vector<double>& means) {
        return cluster_distance_sums_on_device(data.points, data.m, data.n, k, labels, means);
      },
      [&](const std::vector<int64_t>& indices, const KRange& k, const std::vector<const int32_t*>& labels) {
        return gather_sample_on_device(data.points, data.n, indices, k, labels);
      });
}

BestK choose_best_k(const Scores& scores) {
  // The K with the largest Calinski-Harabasz index (docs/fit.md, "Choosing K"): on the twelve
  // planted-blob sets of test_fit_best_k.cpp it recovered the planted K as often as any
  // other score where the blobs are separable, and more often where they are not (there the
  // silhouette and Davies-Bouldin chose fewer clusters); it uses every point, not a sample.
  BestK best;
  best.rule = kBestKRule;
  double top = 0;
  for (const KScores& s : scores.per_k)
    if (s.calinski_harabasz && (!best.k || *s.calinski_harabasz > top)) top = *s.calinski_harabasz, best.k = s.k;
  if (!best.k)
    best.reason = "Calinski-Harabasz is undefined for every K of the range (it needs 2 to M - 1 non-empty clusters)";
  return best;
}

}  // namespace mk
