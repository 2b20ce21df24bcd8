#pragma once
// Scores every K of a fit and picks best_k by one documented rule (docs/fit.md, "Choosing K").
#include <optional>
#include <string>
#include <vector>

#include "apps/fit/data_moments.hpp"
#include "apps/fit/lloyd_loop.hpp"
#include "datasets/dataset.hpp"

namespace mk {

struct KScores {
  int k = 0;
  double inertia = 0;
  int nonempty = 0;  // clusters that kept points
  std::optional<double> calinski_harabasz;
  std::optional<double> davies_bouldin;
  std::optional<double> silhouette;  // of the sample
};

struct ScoreSettings {
  int64_t silhouette_sample = 10000;  // 0: none
  uint64_t seed = 0;                  // draws the sample
  bool on_gpu = false;                // the passes on the current CUDA device
};

struct Scores {
  std::vector<KScores> per_k;
  std::optional<int> elbow_k;  // kneedle on the inertia curve
  int64_t silhouette_points = 0;
};

Scores score_ks(const std::vector<KFit>& fits, const Dataset& data, const DataMoments& moments,
                const ScoreSettings& settings);

// The same scores of points in the current CUDA device's memory (m x n, row-major), read in
// place by the GPU passes (a device array's fit, apps/fit/device_points.hpp).
struct PointsOnDevice {
  const float* points = nullptr;
  int64_t m = 0;
  int n = 0;
};
Scores score_ks(const std::vector<KFit>& fits, const PointsOnDevice& data, const DataMoments& moments,
                const ScoreSettings& settings);

// The rule's name in fit.json: the K of the largest Calinski-Harabasz index (the smaller K
// on a tie).
inline constexpr const char* kBestKRule = "calinski-harabasz-max";

struct BestK {
  std::optional<int> k;
  std::string rule;    // the rule's name, recorded in fit.json
  std::string reason;  // when k is empty: why
};

BestK choose_best_k(const Scores& scores);

}  // namespace mk
