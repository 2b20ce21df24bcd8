// Runs of one variant share its __constant__ centroid bank on a device
// (variants/common/constant_bank_turn.hpp): two runs whose steps are enqueued back to back on
// streams of their own must each still read their own centroids.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "datasets/dataset.hpp"
#include "harness/reference.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

Dataset uniform_shifted(int64_t m, int n, uint64_t seed, float shift) {
  GeneratorSpec spec;
  spec.kind = "uniform";
  spec.m = m;
  spec.n = n;
  spec.seed = seed;
  Dataset data = generate(spec);
  for (float& value : data.values) value += shift;
  return data;
}

// Two data sets 10 apart (uniform on [0, 1) and [10, 11)): a step that read the other run's
// centroids would label nearly every point otherwise than the reference. 1000 apart was too far
// for FP32 sums of 2M points: registers-multik's centroids then missed the tolerance by 4 %
// with every label right (H200, 1cbf3d4). 2M points make each step long enough (about 0.1 ms) for the
// second run's copy into the bank to land while the first run's kernel still reads it, which
// is what compute-sanitizer racecheck exposed at 7ab2d42 on an H200 (a batch's problem 1 with
// 17,000 wrong labels of 20,000).
TEST(ConstantBankTurnGpu, RunsOnStreamsOfTheirOwnReadTheirOwnCentroids) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  const DeviceInfo device = query_device(0);
  Problem problem;
  problem.m = int64_t(1) << 21;
  problem.n = 16;
  problem.k = KRange{8, 8};
  const Dataset first = uniform_shifted(problem.m, problem.n, 3, 0.f);
  const Dataset second = uniform_shifted(problem.m, problem.n, 4, 10.f);
  const std::vector<float> first_init = initial_centroids(first, problem.k, InitMethod::RandomSample, 5);
  const std::vector<float> second_init = initial_centroids(second, problem.k, InitMethod::RandomSample, 6);
  int ran = 0;
  for (const char* name : {"registers-multik", "shared-atomics"}) {
    const Variant& variant = Registry::instance().get(name);
    if (variant.can_implement(problem, device)) continue;
    const Params params = resolve_params(variant, problem, device, Params{{"centroids", "constant"}});
    auto run_a = variant.prepare(problem, first, params, device);
    auto run_b = variant.prepare(problem, second, params, device);
    ASSERT_NE(run_a->stream(), nullptr) << name;
    ASSERT_NE(run_a->stream(), run_b->stream()) << name << ": the runs must have streams of their own";
    for (int round = 0; round < 3; ++round) {
      run_a->set_centroids(first_init);
      run_b->set_centroids(second_init);
      run_a->iterate(true);
      run_b->iterate(true);  // enqueued while the first run's step may still run
      run_a->synchronize();
      run_b->synchronize();
      const VerifyReport a = compare_with_reference(first, problem.k, first_init, run_a->read_back());
      const VerifyReport b = compare_with_reference(second, problem.k, second_init, run_b->read_back());
      EXPECT_TRUE(a.passed) << name << " round " << round << ", first run: " << a.summary();
      EXPECT_TRUE(b.passed) << name << " round " << round << ", second run: " << b.summary();
    }
    ++ran;
  }
  EXPECT_GT(ran, 0) << "neither variant accepted " << problem.str() << " on " << device.name;
}

}  // namespace
}  // namespace mk
