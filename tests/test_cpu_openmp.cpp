// cpu-openmp against the FP64 reference: single steps over many shapes, every point of its
// parameter space, and whole Lloyd runs checked step by step until they converge.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "harness/reference.hpp"
#include "variants/variant.hpp"
#include "tests/reference_steps.hpp"

namespace mk {
namespace {

const Variant& cpu_variant() { return Registry::instance().get("cpu-openmp"); }

Problem problem_for(const Dataset& data, KRange k) {
  Problem p;
  p.m = data.m;
  p.n = data.n;
  p.k = k;
  p.sparsity = data.sparsity;
  return p;
}

Dataset make_data(const std::string& kind, int64_t m, int n, double zeros = 0.0) {
  GeneratorSpec spec;
  spec.kind = kind;
  spec.m = m;
  spec.n = n;
  spec.seed = 1234;
  spec.centers = 6;
  spec.zero_fraction = zeros;
  return generate(spec);
}

std::unique_ptr<PreparedRun> prepare(const Dataset& data, const Problem& problem, const Params& overrides = {}) {
  const DeviceInfo host = query_host_cpu();
  EXPECT_EQ(cpu_variant().can_implement(problem, host), std::nullopt);
  const Params params = resolve_params(cpu_variant(), problem, host, overrides.is_null() ? Params::object() : overrides);
  return cpu_variant().prepare(problem, data, params, host);
}

struct StepCase {
  std::string kind;
  int n;
  KRange k;
  double zeros;
};

void PrintTo(const StepCase& c, std::ostream* os) {
  *os << c.kind << " N=" << c.n << " K=" << c.k.str() << " zeros=" << c.zeros;
}

std::string case_name(const ::testing::TestParamInfo<StepCase>& info) {
  const StepCase& c = info.param;
  std::string name = c.kind + "_N" + std::to_string(c.n) + "_K" + std::to_string(c.k.kmin) + "to" +
                     std::to_string(c.k.kmax);
  if (c.zeros > 0) name += "_zeros" + std::to_string(int(c.zeros * 100));
  return name;
}

class CpuOpenMpStep : public ::testing::TestWithParam<StepCase> {};

TEST_P(CpuOpenMpStep, OneIterationMatchesTheReference) {
  const StepCase& c = GetParam();
  const Dataset data = make_data(c.kind, 20000, c.n, c.zeros);
  const Problem problem = problem_for(data, c.k);
  const auto before = initial_centroids(data, c.k, InitMethod::RandomSample, 7);
  auto run = prepare(data, problem);
  run->set_centroids(before);
  run->iterate(true);
  run->synchronize();
  const IterationResult got = run->read_back();
  ASSERT_EQ(got.per_k.size(), size_t(c.k.count()));
  for (size_t i = 0; i < got.per_k.size(); ++i) {
    EXPECT_EQ(got.per_k[i].k, c.k.kmin + int(i));
    EXPECT_EQ(got.per_k[i].labels.size(), size_t(data.m));
  }
  const VerifyReport report = compare_with_reference(data, c.k, before, got);
  EXPECT_TRUE(report.passed) << report.summary();
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuOpenMpStep,
    ::testing::Values(StepCase{"uniform", 1, {1, 1}, 0}, StepCase{"uniform", 1, {2, 6}, 0},
                      StepCase{"uniform", 2, {3, 7}, 0}, StepCase{"uniform", 4, {3, 5}, 0},
                      StepCase{"uniform", 8, {3, 7}, 0}, StepCase{"uniform", 8, {3, 12}, 0},
                      StepCase{"uniform", 12, {16, 16}, 0}, StepCase{"uniform", 33, {2, 12}, 0},
                      StepCase{"uniform", 128, {64, 64}, 0}, StepCase{"blobs", 2, {3, 7}, 0},
                      StepCase{"blobs", 8, {6, 6}, 0}, StepCase{"blobs", 17, {3, 12}, 0},
                      StepCase{"blobs", 100, {10, 10}, 0}, StepCase{"blobs", 100, {10, 10}, 0.9},
                      StepCase{"uniform", 8, {3, 7}, 0.8}),
    case_name);

TEST(CpuOpenMp, EveryParameterPointMatchesTheReference) {
  const Dataset data = make_data("blobs", 30000, 6);
  const KRange k{3, 7};
  const Problem problem = problem_for(data, k);
  const auto before = initial_centroids(data, k, InitMethod::FirstK, 0);
  const auto points = cpu_variant().param_space(problem, query_host_cpu()).enumerate();
  ASSERT_GE(points.size(), 3u);
  for (const Params& params : points) {
    auto run = cpu_variant().prepare(problem, data, params, query_host_cpu());
    run->set_centroids(before);
    run->iterate(true);
    const VerifyReport report = compare_with_reference(data, k, before, run->read_back());
    EXPECT_TRUE(report.passed) << params_label(params) << ": " << report.summary();
  }
}

TEST(CpuOpenMp, LloydRunConvergesAndEveryStepMatchesTheReference) {
  for (const std::string kind : {"uniform", "blobs"}) {
    SCOPED_TRACE(kind);
    const Dataset data = make_data(kind, 8000, 3);
    const KRange k{3, 7};
    const Problem problem = problem_for(data, k);
    auto run = prepare(data, problem);
    std::vector<float> centroids = initial_centroids(data, k, InitMethod::FirstK, 0);
    run->set_centroids(centroids);
    std::vector<double> previous_inertia(k.count(), std::numeric_limits<double>::infinity());
    bool converged = false;
    int steps = 0;
    for (; steps < 300 && !converged; ++steps) {
      run->iterate(true);
      const IterationResult got = run->read_back();
      const VerifyReport report = compare_with_reference(data, k, centroids, got);
      ASSERT_TRUE(report.passed) << "step " << steps << ": " << report.summary();
      // Lloyd never increases the objective: each step's inertia (measured against the
      // centroids it started from) is at most the previous step's.
      for (int i = 0; i < k.count(); ++i) {
        EXPECT_LE(got.per_k[i].inertia, previous_inertia[i] * (1 + 1e-6)) << "K=" << got.per_k[i].k;
        previous_inertia[i] = got.per_k[i].inertia;
      }
      const std::vector<float> next = testing_support::packed_centroids(got, k, data.n);
      // "Stopped moving" allows a last-bit wobble: FP64 sums merged from a dynamic schedule
      // can round to a neighbouring float even when no label changed.
      float largest = 0, moved = 0;
      for (size_t j = 0; j < next.size(); ++j) {
        largest = std::max(largest, std::abs(next[j]));
        moved = std::max(moved, std::abs(next[j] - centroids[j]));
      }
      converged = moved <= 1e-6f * largest;
      centroids = next;
    }
    EXPECT_TRUE(converged) << "centroids still moving after " << steps << " steps";
  }
}

TEST(CpuOpenMp, EmptyClusterKeepsItsPreviousCentroidExactly) {
  const Dataset data = make_data("uniform", 5000, 4);
  const KRange k{3, 3};
  const Problem problem = problem_for(data, k);
  // The third centroid duplicates the second; the lower index wins every exact tie, so the
  // third cluster stays empty.
  std::vector<float> before = initial_centroids(data, k, InitMethod::FirstK, 0);
  std::copy(before.begin() + 4, before.begin() + 8, before.begin() + 8);
  auto run = prepare(data, problem);
  run->set_centroids(before);
  run->iterate(false);
  const IterationResult got = run->read_back();
  ASSERT_EQ(got.per_k.size(), 1u);
  EXPECT_EQ(got.per_k[0].counts[2], 0);
  EXPECT_EQ(std::vector<float>(got.per_k[0].centroids.begin() + 8, got.per_k[0].centroids.end()),
            std::vector<float>(before.begin() + 8, before.end()));
  EXPECT_EQ(got.per_k[0].counts[0] + got.per_k[0].counts[1], data.m);
  EXPECT_TRUE(compare_with_reference(data, k, before, got).passed);
}

TEST(CpuOpenMp, LabelsAreReturnedOnlyWhenTheLastIterationStoredThem) {
  const Dataset data = make_data("uniform", 3000, 2);
  const KRange k{3, 5};
  auto run = prepare(data, problem_for(data, k));
  run->set_centroids(initial_centroids(data, k, InitMethod::FirstK, 0));
  run->iterate(true);
  for (const auto& r : run->read_back().per_k) EXPECT_EQ(r.labels.size(), size_t(data.m));
  run->iterate(false);
  for (const auto& r : run->read_back().per_k) EXPECT_TRUE(r.labels.empty());
}

TEST(CpuOpenMp, WrongSizedCentroidsAreAnInputError) {
  const Dataset data = make_data("uniform", 1000, 2);
  auto run = prepare(data, problem_for(data, KRange{3, 5}));
  EXPECT_THROW(run->set_centroids(std::vector<float>(7, 0.0f)), InputError);
}

TEST(CpuOpenMp, DatasetNotMatchingTheProblemIsAnInputError) {
  const Dataset data = make_data("uniform", 1000, 2);
  Problem problem = problem_for(data, KRange{3, 5});
  problem.n = 3;
  EXPECT_THROW(cpu_variant().prepare(problem, data, cpu_variant().default_params(problem, query_host_cpu()),
                                     query_host_cpu()),
               InputError);
}

TEST(CpuOpenMp, RefusesAProblemLargerThanHostMemory) {
  Problem huge;
  huge.m = int64_t(1) << 40;
  huge.n = 64;
  huge.k = KRange{3, 7};
  const auto reason = cpu_variant().can_implement(huge, query_host_cpu());
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("host memory"), std::string::npos) << *reason;
}

}  // namespace
}  // namespace mk
