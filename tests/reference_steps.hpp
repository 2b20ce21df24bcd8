#pragma once
// Lloyd steps of a prepared run, each compared with the FP64 reference from the centroids
// that step started from, so an accepted tie flip cannot snowball into a later failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "core/problem.hpp"
#include "harness/reference.hpp"
#include "variants/variant.hpp"

namespace mk::testing_support {

// The per-K centroids of a result in the packed slot order the variants take as input.
inline std::vector<float> packed_centroids(const IterationResult& result, const KRange& k, int n) {
  std::vector<float> packed(size_t(k.sum()) * n);
  for (const KResult& r : result.per_k)
    std::copy(r.centroids.begin(), r.centroids.end(), packed.begin() + size_t(k.slot_offset(r.k)) * n);
  return packed;
}

// Sets `centroids`, runs `steps` iterations (labels stored or not) and stops at the first step
// that disagrees with the reference, reporting it as a fatal failure of the calling test.
// `largest_ulps`, when given, receives the largest centroid error seen, in FP32 ULPs.
inline void expect_steps_match_reference(PreparedRun& run, const Dataset& data, const KRange& k,
                                         std::vector<float> centroids, int steps, bool labels,
                                         const Tolerances& tol = {}, double* largest_ulps = nullptr) {
  run.set_centroids(centroids);
  for (int step = 1; step <= steps; ++step) {
    run.iterate(labels);
    run.synchronize();
    const IterationResult got = run.read_back();
    for (const auto& r : got.per_k) EXPECT_EQ(r.labels.empty(), !labels) << "step " << step << " K=" << r.k;
    const VerifyReport report = compare_with_reference(data, k, centroids, got, tol);
    if (largest_ulps)
      for (const auto& verdict : report.per_k) *largest_ulps = std::max(*largest_ulps, verdict.centroid_error_ulps);
    ASSERT_TRUE(report.passed) << "step " << step << ": " << report.summary();
    centroids = packed_centroids(got, k, data.n);
  }
}

}  // namespace mk::testing_support
