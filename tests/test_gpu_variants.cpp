// Every registered GPU variant against the FP64 reference, over the shapes it claims
// (tests/variant_claims.hpp), with its default parameters: one step, then three more steps
// each checked on its own. On a Hopper GPU a refusal of a claimed shape fails the test; on
// other GPUs it is reported. Without a GPU every case is skipped with the driver's reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "core/device_info.hpp"
#include "harness/reference.hpp"
#include "variants/variant.hpp"
#include "tests/reference_steps.hpp"
#include "tests/variant_claims.hpp"

namespace mk {
namespace {

std::vector<std::string> gpu_variant_names() {
  std::vector<std::string> names;
  for (const Variant* v : Registry::instance().all())
    if (v->runs_on_gpu()) names.push_back(v->name());
  return names;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return name;
}

class GpuVariant : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  }
};

TEST_P(GpuVariant, MatchesTheReferenceOnSmallShapesWithDefaultParams) {
  const Variant& variant = Registry::instance().get(GetParam());
  const DeviceInfo device = query_device(0);
  int implemented = 0;
  std::string refusals;
  const auto& claims = testing_support::claims_of(variant.name());
  ASSERT_FALSE(claims.empty()) << variant.name() << " names no shapes in tests/variant_claims.hpp";
  for (const auto& claim : claims)
    for (const int64_t m : testing_support::claim_points()) {
      const int n = claim.n;
      const KRange k = claim.k;
      if (m < k.kmax) continue;  // more clusters than points is bad input (N=48 K=2000 runs at M=100,000)
      GeneratorSpec spec;
      spec.m = m;
      spec.n = n;
      spec.seed = 99 + n;
      const Dataset data = generate(spec);
      Problem problem;
      problem.m = m;
      problem.n = n;
      problem.k = k;
      problem.sparsity = data.sparsity;
      SCOPED_TRACE(variant.name() + " " + problem.str());
      if (auto reason = variant.can_implement(problem, device)) {
        if (testing_support::claims_apply_to(device))
          ADD_FAILURE() << device.name << " refused a shape " << variant.name() << " claims on Hopper: " << *reason;
        refusals += "\n  " + problem.str() + ": " + *reason;
        continue;
      }
      ++implemented;
      const Params params = resolve_params(variant, problem, device, Params::object());
      SCOPED_TRACE(params_label(params));
      std::unique_ptr<PreparedRun> run = variant.prepare(problem, data, params, device);
      std::vector<float> centroids = initial_centroids(data, k, InitMethod::FirstK, 0);
      run->set_centroids(centroids);
      // Step 1, then three more: each compared against the reference from the centroids
      // that step started from, so an accepted tie flip cannot snowball into a failure.
      for (int step = 1; step <= 4; ++step) {
        run->iterate(true);
        run->synchronize();
        const IterationResult got = run->read_back();
        const VerifyReport report = compare_with_reference(data, k, centroids, got);
        EXPECT_TRUE(report.passed) << "step " << step << ": " << report.summary();
        if (!report.passed) break;
        centroids = testing_support::packed_centroids(got, k, n);
      }
    }
  if (implemented == 0)
    GTEST_SKIP() << variant.name() << " can implement none of the test shapes on " << device.name << ":"
                 << refusals;
  if (!refusals.empty()) std::cout << "[   INFO   ] " << variant.name() << " refused:" << refusals << "\n";
}

// Mostly-zero data is where sparse formats and dispatchers take other code paths.
TEST_P(GpuVariant, SparseDataMatchesTheReference) {
  const Variant& variant = Registry::instance().get(GetParam());
  const DeviceInfo device = query_device(0);
  const auto shape = testing_support::pick_claim(variant.name(), {32, KRange{3, 7}});
  GeneratorSpec spec;
  spec.kind = "blobs";
  spec.centers = 8;
  spec.m = 100000;
  spec.n = shape.n;
  spec.zero_fraction = 0.9;
  const Dataset data = generate(spec);
  Problem problem;
  problem.m = data.m;
  problem.n = data.n;
  problem.k = shape.k;
  problem.sparsity = data.sparsity;
  if (auto reason = variant.can_implement(problem, device)) {
    if (testing_support::claims_apply_to(device))
      FAIL() << device.name << " refused " << problem.str() << " at sparsity " << data.sparsity
             << ", a shape " << variant.name() << " claims on Hopper: " << *reason;
    GTEST_SKIP() << variant.name() << " cannot run " << problem.str() << " at sparsity " << data.sparsity << ": "
                 << *reason;
  }
  const Params params = resolve_params(variant, problem, device, Params::object());
  SCOPED_TRACE(params_label(params));
  auto run = variant.prepare(problem, data, params, device);
  std::vector<float> centroids = initial_centroids(data, problem.k, InitMethod::RandomSample, 3);
  run->set_centroids(centroids);
  for (int step = 1; step <= 2; ++step) {
    run->iterate(true);
    run->synchronize();
    const IterationResult got = run->read_back();
    const VerifyReport report = compare_with_reference(data, problem.k, centroids, got);
    ASSERT_TRUE(report.passed) << "step " << step << ": " << report.summary();
    centroids = testing_support::packed_centroids(got, problem.k, problem.n);
  }
}

// Labels are optional in the timed loop; the centroids, counts and inertia must be the same
// whether or not they were stored.
TEST_P(GpuVariant, StepWithoutLabelsMatchesTheReference) {
  const Variant& variant = Registry::instance().get(GetParam());
  const DeviceInfo device = query_device(0);
  const auto shape = testing_support::pick_claim(variant.name(), {8, KRange{3, 7}});
  GeneratorSpec spec;
  spec.kind = "blobs";
  spec.centers = 5;
  spec.m = 100000;
  spec.n = shape.n;
  const Dataset data = generate(spec);
  Problem problem;
  problem.m = data.m;
  problem.n = data.n;
  problem.k = shape.k;
  problem.sparsity = data.sparsity;
  if (auto reason = variant.can_implement(problem, device)) {
    if (testing_support::claims_apply_to(device))
      FAIL() << device.name << " refused " << problem.str() << ", a shape " << variant.name()
             << " claims on Hopper: " << *reason;
    GTEST_SKIP() << variant.name() << " cannot run " << problem.str() << ": " << *reason;
  }
  auto run = variant.prepare(problem, data, resolve_params(variant, problem, device, Params::object()), device);
  const auto centroids = initial_centroids(data, problem.k, InitMethod::RandomSample, 5);
  run->set_centroids(centroids);
  run->iterate(false);
  run->synchronize();
  const IterationResult got = run->read_back();
  for (const auto& r : got.per_k) EXPECT_TRUE(r.labels.empty()) << "K=" << r.k;
  const VerifyReport report = compare_with_reference(data, problem.k, centroids, got);
  EXPECT_TRUE(report.passed) << report.summary();
}

INSTANTIATE_TEST_SUITE_P(Registered, GpuVariant, ::testing::ValuesIn(gpu_variant_names()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GpuVariant);

}  // namespace
}  // namespace mk
