// The FP64 reference and its tie-aware comparison, checked against values worked out by
// hand for a six-point 2-D data set. Everything else in the suite trusts these two
// functions, so they are tested against arithmetic, not against another implementation.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/errors.hpp"
#include "harness/reference.hpp"

namespace mk {
namespace {

Dataset make_dataset(int n, const std::vector<float>& values) {
  Dataset data;
  data.n = n;
  data.m = int64_t(values.size()) / n;
  data.values.assign(values.begin(), values.end());
  return data;
}

// Two tight triangles: {(0,0),(1,0),(0,1)} and {(10,10),(11,10),(10,11)}.
Dataset two_triangles() { return make_dataset(2, {0, 0, 1, 0, 0, 1, 10, 10, 11, 10, 10, 11}); }

// K=2..3 packed: K=2 slots {(0,0),(10,10)}, then K=3 slots {(0,0),(1,0),(10,10)}.
std::vector<float> two_triangles_centroids() { return {0, 0, 10, 10, 0, 0, 1, 0, 10, 10}; }

KResult result_from_reference(const KReference& ref, bool with_labels) {
  KResult r;
  r.k = ref.k;
  r.centroids.assign(ref.centroids.begin(), ref.centroids.end());
  r.counts = ref.counts;
  r.inertia = ref.inertia;
  if (with_labels) r.labels.assign(ref.labels.begin(), ref.labels.end());
  return r;
}

TEST(Reference, TwoTrianglesKEquals2MatchesHandComputedStep) {
  const Dataset data = two_triangles();
  const auto refs = reference_step(data, KRange{2, 3}, two_triangles_centroids());
  ASSERT_EQ(refs.size(), 2u);
  const KReference& k2 = refs[0];
  EXPECT_EQ(k2.k, 2);
  EXPECT_EQ(k2.labels, (std::vector<int32_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(k2.best, (std::vector<double>{0, 1, 1, 0, 1, 1}));
  // Runner-up: (0,0)->(10,10) is 200; (1,0)->(10,10) is 81+100; (10,10)->(0,0) is 200; ...
  EXPECT_EQ(k2.second, (std::vector<double>{200, 181, 181, 200, 221, 221}));
  EXPECT_EQ(k2.counts, (std::vector<int64_t>{3, 3}));
  const double third = 1.0 / 3.0, ten_and_third = 31.0 / 3.0;
  ASSERT_EQ(k2.centroids.size(), 4u);
  EXPECT_DOUBLE_EQ(k2.centroids[0], third);
  EXPECT_DOUBLE_EQ(k2.centroids[1], third);
  EXPECT_DOUBLE_EQ(k2.centroids[2], ten_and_third);
  EXPECT_DOUBLE_EQ(k2.centroids[3], ten_and_third);
  EXPECT_DOUBLE_EQ(k2.inertia, 4.0);
}

TEST(Reference, TwoTrianglesKEquals3MatchesHandComputedStep) {
  const Dataset data = two_triangles();
  const auto refs = reference_step(data, KRange{2, 3}, two_triangles_centroids());
  ASSERT_EQ(refs.size(), 2u);
  const KReference& k3 = refs[1];
  EXPECT_EQ(k3.k, 3);
  // (0,1) is 1 from (0,0) and 2 from (1,0): cluster 0.
  EXPECT_EQ(k3.labels, (std::vector<int32_t>{0, 1, 0, 2, 2, 2}));
  EXPECT_EQ(k3.best, (std::vector<double>{0, 0, 1, 0, 1, 1}));
  EXPECT_EQ(k3.counts, (std::vector<int64_t>{2, 1, 3}));
  const std::vector<double> expected = {0, 0.5, 1, 0, 31.0 / 3.0, 31.0 / 3.0};
  ASSERT_EQ(k3.centroids.size(), expected.size());
  for (size_t j = 0; j < expected.size(); ++j) EXPECT_DOUBLE_EQ(k3.centroids[j], expected[j]) << "value " << j;
  EXPECT_DOUBLE_EQ(k3.inertia, 3.0);
}

TEST(Reference, EmptyClusterKeepsItsPreviousCentroid) {
  const Dataset data = two_triangles();
  // The third centroid is far from every point, so nothing is assigned to it.
  const std::vector<float> before = {0, 0, 10, 10, 100, -50};
  const auto refs = reference_step(data, KRange{3, 3}, before);
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].counts, (std::vector<int64_t>{3, 3, 0}));
  EXPECT_DOUBLE_EQ(refs[0].centroids[4], 100.0);
  EXPECT_DOUBLE_EQ(refs[0].centroids[5], -50.0);
}

TEST(Reference, ReferenceUpdateAveragesGivenLabelsAndKeepsEmptyClusters) {
  const Dataset data = two_triangles();
  const std::vector<float> before = {7, 8, 9, 10, 11, 12};
  std::vector<double> centroids;
  std::vector<int64_t> counts;
  const std::vector<int32_t> labels = {1, 1, 1, 1, 1, 0};
  reference_update(data, 3, labels.data(), before.data(), centroids, counts);
  EXPECT_EQ(counts, (std::vector<int64_t>{1, 5, 0}));
  const std::vector<double> expected = {10, 11, 22.0 / 5.0, 21.0 / 5.0, 11, 12};
  for (size_t j = 0; j < expected.size(); ++j) EXPECT_DOUBLE_EQ(centroids[j], expected[j]) << "value " << j;
}

TEST(Reference, WrongSizedCentroidArrayIsAnInputError) {
  const Dataset data = two_triangles();
  EXPECT_THROW(reference_step(data, KRange{2, 3}, {0, 0, 1, 1}), InputError);
}

TEST(CompareWithReference, ExactReferenceResultPasses) {
  const Dataset data = two_triangles();
  const KRange ks{2, 3};
  const auto before = two_triangles_centroids();
  const auto refs = reference_step(data, ks, before);
  IterationResult got;
  for (const auto& ref : refs) got.per_k.push_back(result_from_reference(ref, true));
  const VerifyReport report = compare_with_reference(data, ks, before, got);
  EXPECT_TRUE(report.passed) << report.summary();
  ASSERT_EQ(report.per_k.size(), 2u);
  for (const auto& verdict : report.per_k) {
    EXPECT_EQ(verdict.label_mismatches, 0);
    EXPECT_EQ(verdict.tie_flips, 0);
    EXPECT_EQ(verdict.ties, 0);
  }
}

// (1,0) is exactly 1 from both (0,0) and (2,0); (0,1) is nearer (0,0) by 1 versus 5.
Dataset tie_dataset() { return make_dataset(2, {0, 0, 2, 0, 1, 0, 0, 1}); }
const std::vector<float> kTieCentroids = {0, 0, 2, 0};

TEST(CompareWithReference, ExactTieIsCountedAndLowestIndexWinsInTheReference) {
  const Dataset data = tie_dataset();
  const auto refs = reference_step(data, KRange{2, 2}, kTieCentroids);
  EXPECT_EQ(refs[0].labels, (std::vector<int32_t>{0, 1, 0, 0}));
  EXPECT_EQ(refs[0].best[2], 1.0);
  EXPECT_EQ(refs[0].second[2], 1.0);

  IterationResult got;
  got.per_k.push_back(result_from_reference(refs[0], true));
  const VerifyReport report = compare_with_reference(data, KRange{2, 2}, kTieCentroids, got);
  EXPECT_TRUE(report.passed) << report.summary();
  EXPECT_EQ(report.per_k[0].ties, 1);
  EXPECT_EQ(report.per_k[0].tie_flips, 0);
}

TEST(CompareWithReference, TieFlippedLabelIsAcceptedWithCentroidsOfItsOwnLabels) {
  const Dataset data = tie_dataset();
  // The tied point goes to cluster 1: clusters {(0,0),(0,1)} and {(2,0),(1,0)}.
  KResult flipped;
  flipped.k = 2;
  flipped.labels = {0, 1, 1, 0};
  flipped.counts = {2, 2};
  flipped.centroids = {0, 0.5f, 1.5f, 0};
  flipped.inertia = 0 + 0 + 1 + 1;
  IterationResult got;
  got.per_k.push_back(flipped);
  const VerifyReport report = compare_with_reference(data, KRange{2, 2}, kTieCentroids, got);
  EXPECT_TRUE(report.passed) << report.summary();
  EXPECT_EQ(report.per_k[0].tie_flips, 1);
  EXPECT_EQ(report.per_k[0].label_mismatches, 0);
  EXPECT_EQ(report.per_k[0].ties, 1);
}

TEST(CompareWithReference, GenuinelyWrongLabelFailsEvenWithConsistentCentroids) {
  const Dataset data = tie_dataset();
  // (0,1) sent to (2,0): 5 instead of 1, not a tie. Counts and centroids match the wrong
  // labels, so only the label check can catch it.
  KResult wrong;
  wrong.k = 2;
  wrong.labels = {0, 1, 0, 1};
  wrong.counts = {2, 2};
  wrong.centroids = {0.5f, 0, 1, 0.5f};
  wrong.inertia = 0 + 0 + 1 + 5;
  IterationResult got;
  got.per_k.push_back(wrong);
  const VerifyReport report = compare_with_reference(data, KRange{2, 2}, kTieCentroids, got);
  EXPECT_FALSE(report.passed);
  EXPECT_EQ(report.per_k[0].label_mismatches, 1);
  EXPECT_EQ(report.per_k[0].tie_flips, 0);
}

TEST(CompareWithReference, OutOfRangeLabelIsAMismatch) {
  const Dataset data = tie_dataset();
  const auto refs = reference_step(data, KRange{2, 2}, kTieCentroids);
  KResult bad = result_from_reference(refs[0], true);
  bad.labels[0] = 7;
  IterationResult got;
  got.per_k.push_back(bad);
  const VerifyReport report = compare_with_reference(data, KRange{2, 2}, kTieCentroids, got);
  EXPECT_FALSE(report.passed);
  EXPECT_EQ(report.per_k[0].label_mismatches, 1);
}

TEST(ColumnSpread, IsTheStandardDeviationOfEachDimension) {
  // x and y both hold {0, 1, 0, 10, 11, 10}: mean 16/3, mean square 161/3, variance 227/9.
  const std::vector<double> spread = column_spread(two_triangles());
  ASSERT_EQ(spread.size(), 2u);
  EXPECT_NEAR(spread[0], std::sqrt(227.0 / 9.0), 1e-12);
  EXPECT_NEAR(spread[1], std::sqrt(227.0 / 9.0), 1e-12);
}

TEST(ColumnSpread, DoesNotGrowWithTheDataOffset) {
  // 30000 + {0, 1, 10, 11} are exact floats, so the offset data has the same spread exactly.
  Dataset offset = two_triangles();
  for (float& v : offset.values) v += 30000.f;
  const std::vector<double> spread = column_spread(offset);
  EXPECT_NEAR(spread[0], std::sqrt(227.0 / 9.0), 1e-9);
  EXPECT_NEAR(spread[1], std::sqrt(227.0 / 9.0), 1e-9);
}

class CentroidTolerance : public ::testing::Test {
 protected:
  // K=2 on the two triangles (σ = √(227/9) in both dimensions): centroid 0's x moved by
  // `fraction` of its allowance, 1e-4·σ + 1 ULP of 1/3.
  VerifyReport perturbed_by(double fraction) {
    const Dataset data = two_triangles();
    const std::vector<float> before = {0, 0, 10, 10};
    const auto refs = reference_step(data, KRange{2, 2}, before);
    KResult r = result_from_reference(refs[0], true);
    const double third = refs[0].centroids[0];
    const double ulp = double(std::nextafter(float(third), 1.f)) - double(float(third));
    const Tolerances tol;
    const double allowance = tol.centroid_spread * std::sqrt(227.0 / 9.0) + tol.centroid_ulps * ulp;
    r.centroids[0] = float(third + fraction * allowance);
    IterationResult got;
    got.per_k.push_back(r);
    return compare_with_reference(data, KRange{2, 2}, before, got);
  }
};

TEST_F(CentroidTolerance, ErrorJustBelowTolerancePasses) {
  const VerifyReport report = perturbed_by(0.9);
  EXPECT_TRUE(report.passed) << report.summary();
  EXPECT_NEAR(report.per_k[0].centroid_tolerance_used, 0.9, 1e-3);
  EXPECT_NEAR(report.per_k[0].centroid_error_spread, 0.9e-4, 1e-6);
}

TEST_F(CentroidTolerance, ErrorJustAboveToleranceFails) {
  const VerifyReport report = perturbed_by(1.1);
  EXPECT_FALSE(report.passed);
  EXPECT_NEAR(report.per_k[0].centroid_tolerance_used, 1.1, 1e-3);
}

// The case: data offset by 30000 and spanning 1.0 (σ = 0.29). Measured against the
// largest centroid coordinate an error of 3.0 was 1e-4 of it and passed.
class OffsetCentroidTolerance : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<float> values;
    for (int i = 0; i <= 20; ++i) values.insert(values.end(), {30000.f + 0.05f * float(i), 30000.f + 0.05f * float(i % 7)});
    data_ = make_dataset(2, values);
    refs_ = reference_step(data_, KRange{2, 2}, before_);
  }
  VerifyReport with_centroids(const std::vector<double>& centroids) const {
    KResult r = result_from_reference(refs_[0], true);
    r.centroids.assign(centroids.begin(), centroids.end());
    IterationResult got;
    got.per_k.push_back(r);
    return compare_with_reference(data_, KRange{2, 2}, before_, got);
  }
  Dataset data_;
  std::vector<float> before_ = {30000.f, 30000.f, 30001.f, 30000.3f};
  std::vector<KReference> refs_;
};

TEST_F(OffsetCentroidTolerance, TheExactStepPasses) {
  const VerifyReport report = with_centroids(refs_[0].centroids);
  EXPECT_TRUE(report.passed) << report.summary();
  EXPECT_LE(report.per_k[0].centroid_error_ulps, 0.5);  // the float rounding of the exact means
}

TEST_F(OffsetCentroidTolerance, AnErrorOfThreeFails) {
  std::vector<double> centroids = refs_[0].centroids;
  centroids[1] += 3.0;
  const VerifyReport report = with_centroids(centroids);
  EXPECT_FALSE(report.passed);
  EXPECT_GT(report.per_k[0].centroid_error_spread, 5.0) << report.summary();
}

TEST_F(OffsetCentroidTolerance, AnUpdateThatMovedNothingFails) {
  ASSERT_GT(std::abs(refs_[0].centroids[0] - before_[0]), 0.1);  // the step does move the centroids
  const VerifyReport report = with_centroids(std::vector<double>(before_.begin(), before_.end()));
  EXPECT_FALSE(report.passed) << report.summary();
}

TEST_F(OffsetCentroidTolerance, TwoUlpsOffFailsWhereTheSpreadIsZero) {
  // A constant column: no spread, so only the FP32 floor (one ULP of 30000, 2^-9) is allowed.
  std::vector<float> values;
  for (int i = 0; i < 10; ++i) values.insert(values.end(), {float(i), 30000.f});
  const Dataset constant = make_dataset(2, values);
  const std::vector<float> before = {0.f, 30000.f};
  const auto refs = reference_step(constant, KRange{1, 1}, before);
  for (const auto& [ulps, passes] : {std::pair{1.0, true}, std::pair{2.0, false}}) {
    KResult r = result_from_reference(refs[0], true);
    r.centroids[1] = float(30000.0 + ulps * 0x1p-9);
    IterationResult got;
    got.per_k.push_back(r);
    const VerifyReport report = compare_with_reference(constant, KRange{1, 1}, before, got);
    EXPECT_EQ(report.passed, passes) << ulps << " ULP: " << report.summary();
  }
}

TEST(CompareWithReference, ZeroedEmptyClusterCentroidFails) {
  const Dataset data = two_triangles();
  const std::vector<float> before = {0, 0, 10, 10, 100, -50};
  const auto refs = reference_step(data, KRange{3, 3}, before);
  KResult r = result_from_reference(refs[0], true);
  r.centroids[4] = 0;  // a variant that resets empty clusters instead of keeping them
  r.centroids[5] = 0;
  IterationResult got;
  got.per_k.push_back(r);
  const VerifyReport report = compare_with_reference(data, KRange{3, 3}, before, got);
  EXPECT_FALSE(report.passed);
  EXPECT_GT(report.per_k[0].centroid_error_spread, 0.1);
}

TEST(CompareWithReference, WrongCountFails) {
  const Dataset data = two_triangles();
  const std::vector<float> before = {0, 0, 10, 10};
  const auto refs = reference_step(data, KRange{2, 2}, before);
  KResult r = result_from_reference(refs[0], false);
  r.counts[1] += 1;
  IterationResult got;
  got.per_k.push_back(r);
  const VerifyReport report = compare_with_reference(data, KRange{2, 2}, before, got);
  EXPECT_FALSE(report.passed);
  EXPECT_EQ(report.per_k[0].count_mismatches, 1);
}

TEST(CompareWithReference, InertiaOutsideToleranceFailsAndInsidePasses) {
  const Dataset data = two_triangles();
  const std::vector<float> before = {0, 0, 10, 10};
  const auto refs = reference_step(data, KRange{2, 2}, before);
  for (const double relative : {0.5e-5, 2e-5}) {
    KResult r = result_from_reference(refs[0], false);
    r.inertia = 4.0 * (1.0 + relative);
    IterationResult got;
    got.per_k.push_back(r);
    const VerifyReport report = compare_with_reference(data, KRange{2, 2}, before, got);
    EXPECT_EQ(report.passed, relative < Tolerances{}.inertia_relative) << "relative error " << relative;
  }
}

TEST(CompareWithReference, NanInertiaFails) {
  const Dataset data = two_triangles();
  const std::vector<float> before = {0, 0, 10, 10};
  const auto refs = reference_step(data, KRange{2, 2}, before);
  KResult r = result_from_reference(refs[0], false);
  r.inertia = std::numeric_limits<double>::quiet_NaN();
  IterationResult got;
  got.per_k.push_back(r);
  EXPECT_FALSE(compare_with_reference(data, KRange{2, 2}, before, got).passed);
}

TEST(CompareWithReference, MissingKResultIsAVerifyError) {
  const Dataset data = two_triangles();
  const auto before = two_triangles_centroids();
  const auto refs = reference_step(data, KRange{2, 3}, before);
  IterationResult got;
  got.per_k.push_back(result_from_reference(refs[0], false));  // K=3 missing
  EXPECT_THROW(compare_with_reference(data, KRange{2, 3}, before, got), VerifyError);
}

}  // namespace
}  // namespace mk
