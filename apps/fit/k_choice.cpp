#include "apps/fit/k_choice.hpp"

#include "apps/fit/k_metrics.hpp"
#include "apps/fit/metric_passes.hpp"

namespace mk {

Scores score_ks(const std::vector<KFit>& fits, const Dataset& data, const DataMoments& moments,
                const ScoreSettings& settings) {
  Scores scores;
  if (fits.empty()) return scores;
  const int n = data.n;
  const KRange k{fits.front().k, fits.back().k};
  std::vector<const int32_t*> labels;
  std::vector<double> means;  // slots * n
  for (const KFit& fit : fits) {
    labels.push_back(fit.labels.data());
    const std::vector<double> mine = cluster_means(fit, n);
    means.insert(means.end(), mine.begin(), mine.end());
  }
  const std::vector<double> distance_sums = settings.on_gpu ? cluster_distance_sums_gpu(data, k, labels, means)
                                                            : cluster_distance_sums_cpu(data, k, labels, means);
  std::vector<std::optional<double>> silhouettes(fits.size());
  if (settings.silhouette_sample > 0) {
    const SampleLabels sample =
        gather_sample(data, silhouette_sample(data.m, settings.silhouette_sample, settings.seed), k, labels);
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
    s.calinski_harabasz = calinski_harabasz(fit, moments, data.m, n);
    const std::vector<double> own(distance_sums.begin() + k.slot_offset(fit.k),
                                  distance_sums.begin() + k.slot_offset(fit.k) + fit.k);
    s.davies_bouldin = davies_bouldin(fit, own, data.m, n);
    s.silhouette = silhouettes[index];
    scores.per_k.push_back(s);
    ks.push_back(fit.k);
    inertia.push_back(fit.inertia);
  }
  scores.elbow_k = kneedle_elbow(ks, inertia);
  return scores;
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
