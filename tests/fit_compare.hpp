#pragma once
// Two `mkbench fit --out` folders compared as the fit tests compare a fit with scikit-learn's
// (tests/fit_vs_sklearn.py): per K, centroids within --verify's centroid tolerance (1e-4 x the
// data's standard deviation per dimension + 1 float ULP at the expected value:
// harness/reference.hpp's Tolerances), labels equal except near ties (the two squared
// distances within 1e-4 of each other), inertia within 1e-6, and the same best_k.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/dataset.hpp"
#include "process_helpers.hpp"

namespace mk::testing_support {

inline constexpr double kFitCentroidSpread = 1e-4;  // Tolerances::centroid_spread
inline constexpr double kFitTieRelative = 1e-4;     // fit_vs_sklearn.py's TIE_RELATIVE

inline nlohmann::json read_fit_json(const std::string& folder) {
  return nlohmann::json::parse(read_text((std::filesystem::path(folder) / "fit.json").string()));
}

inline double squared_distance(const Dataset& data, int64_t point, const mk::PointValues& centroids, int c) {
  double sum = 0;
  for (int j = 0; j < data.n; ++j) {
    const double d = double(data.values[size_t(point) * size_t(data.n) + size_t(j)]) -
                     double(centroids[size_t(c) * size_t(data.n) + size_t(j)]);
    sum += d * d;
  }
  return sum;
}

// `max_step_difference`: how far a K's step count may be from the expected fit's (0 on the
// host, where every step of both fits ends on the same labels).
inline void expect_same_fit(const std::string& got_folder, const std::string& want_folder, const Dataset& data,
                            int max_step_difference) {
  namespace fs = std::filesystem;
  const nlohmann::json got = read_fit_json(got_folder), want = read_fit_json(want_folder);
  EXPECT_EQ(got.at("best_k"), want.at("best_k"));
  ASSERT_EQ(got.at("per_k").size(), want.at("per_k").size());
  std::vector<double> sd(size_t(data.n), 0.0);
  for (int j = 0; j < data.n; ++j) {
    double mean = 0, square = 0;
    for (int64_t i = 0; i < data.m; ++i) mean += data.values[size_t(i) * size_t(data.n) + size_t(j)];
    mean /= double(data.m);
    for (int64_t i = 0; i < data.m; ++i) {
      const double d = data.values[size_t(i) * size_t(data.n) + size_t(j)] - mean;
      square += d * d;
    }
    sd[size_t(j)] = std::sqrt(square / double(data.m));
  }
  for (size_t index = 0; index < want.at("per_k").size(); ++index) {
    const nlohmann::json& g = got.at("per_k")[index];
    const nlohmann::json& w = want.at("per_k")[index];
    const int k = w.at("k").get<int>();
    SCOPED_TRACE("K=" + std::to_string(k));
    ASSERT_EQ(g.at("k").get<int>(), k);
    EXPECT_LE(std::abs(g.at("iterations").get<int>() - w.at("iterations").get<int>()), max_step_difference);
    EXPECT_EQ(g.at("converged"), w.at("converged"));
    const double inertia = w.at("inertia").get<double>();
    EXPECT_NEAR(g.at("inertia").get<double>(), inertia, 1e-6 * inertia);

    const Dataset got_c = load_npy((fs::path(got_folder) / g.at("centroids_file").get<std::string>()).string());
    const Dataset want_c = load_npy((fs::path(want_folder) / w.at("centroids_file").get<std::string>()).string());
    ASSERT_EQ(got_c.values.size(), want_c.values.size());
    ASSERT_EQ(want_c.values.size(), size_t(k) * size_t(data.n));
    int far = 0;
    for (size_t v = 0; v < want_c.values.size(); ++v) {
      const float expected = want_c.values[v];
      const double ulp = std::abs(double(std::nextafter(expected, INFINITY)) - double(expected));
      const double allowed = kFitCentroidSpread * sd[v % size_t(data.n)] + ulp;
      far += std::abs(double(got_c.values[v]) - double(expected)) > allowed;
    }
    EXPECT_EQ(far, 0) << "centroid coordinates outside 1e-4 sd + 1 ULP of the expected fit's";

    const Labels got_l = load_npy_labels((fs::path(got_folder) / g.at("labels_file").get<std::string>()).string());
    const Labels want_l = load_npy_labels((fs::path(want_folder) / w.at("labels_file").get<std::string>()).string());
    ASSERT_EQ(got_l.values.size(), size_t(data.m));
    ASSERT_EQ(want_l.values.size(), size_t(data.m));
    int64_t differ = 0, not_ties = 0;
    for (int64_t i = 0; i < data.m; ++i) {
      const int a = got_l.values[size_t(i)], b = want_l.values[size_t(i)];
      if (a == b) continue;
      ++differ;
      ASSERT_TRUE(a >= 0 && a < k && b >= 0 && b < k) << "label out of range at point " << i;
      const double da = squared_distance(data, i, want_c.values, a), db = squared_distance(data, i, want_c.values, b);
      not_ties += std::abs(da - db) > kFitTieRelative * std::max({da, db, 1e-30});
    }
    EXPECT_EQ(not_ties, 0) << differ << " labels differ, " << not_ties << " of them not near ties";
  }
}

}  // namespace mk::testing_support
