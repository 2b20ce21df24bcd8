// Splitting a K range into consecutive passes (variants/common/k_range_passes.hpp) against a
// brute force over every consecutive split; tensor-multik-passes' claims and refusals on the
// synthetic H100 (no GPU needed); and on a GPU, its split step against tensor-multik's on each
// pass (its iterations against the FP64 reference are tests/test_gpu_variants.cpp's, over the
// shapes tests/variant_claims.hpp names).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "core/problem.hpp"
#include "datasets/dataset.hpp"
#include "tests/synthetic_devices.hpp"
#include "variants/common/k_range_passes.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

// Fewest passes, then smallest largest pass, over every way to cut kmin..kmax between Ks.
std::pair<int, int> brute_force(const KRange& range, int cap) {
  const int gaps = range.count() - 1;
  std::pair<int, int> best{INT_MAX, INT_MAX};
  for (uint32_t cuts = 0; cuts < (1u << gaps); ++cuts) {
    int passes = 1, largest = 0, slots = 0;
    bool fits = true;
    for (int i = 0; i < range.count(); ++i) {
      slots += range.kmin + i;
      if (i == gaps || (cuts >> i & 1u)) {
        fits = fits && slots <= cap;
        largest = std::max(largest, slots);
        if (i != gaps) ++passes;
        slots = 0;
      }
    }
    if (fits) best = std::min(best, std::make_pair(passes, largest));
  }
  return best;
}

TEST(KRangePasses, FewestThenBalancedPassesAsTheBruteForce) {
  for (int kmin : {1, 2, 3, 5})
    for (int kmax = kmin; kmax <= kmin + 12; ++kmax)
      for (int cap : {8, 16, 25, 32, 64}) {
        const KRange range{kmin, kmax};
        SCOPED_TRACE("K=" + range.str() + " cap " + std::to_string(cap));
        const std::vector<KRange> passes = split_k_range(range, cap);
        const auto want = brute_force(range, cap);
        if (want.first == INT_MAX) {
          EXPECT_TRUE(passes.empty());
          continue;
        }
        ASSERT_EQ(int(passes.size()), want.first);
        int next = kmin, largest = 0;
        for (const KRange& pass : passes) {
          EXPECT_EQ(pass.kmin, next) << "passes are consecutive and cover the range";
          EXPECT_LE(pass.sum(), cap);
          largest = std::max(largest, pass.sum());
          next = pass.kmax + 1;
        }
        EXPECT_EQ(next, kmax + 1);
        EXPECT_EQ(largest, want.second);
      }
}

TEST(KRangePasses, IssueThirtyTwosRangeAtBothPassSizes) {
  const std::vector<KRange> at64 = split_k_range(KRange{3, 12}, 64);
  ASSERT_EQ(at64.size(), 2u);
  EXPECT_EQ(at64[0].str(), "3..9");  // 42 and 33 slots, not 63 and 12
  EXPECT_EQ(at64[1].str(), "10..12");
  const std::vector<KRange> at32 = split_k_range(KRange{3, 12}, 32);
  ASSERT_EQ(at32.size(), 3u);
  EXPECT_EQ(at32[0].str(), "3..7");
  EXPECT_EQ(at32[1].str(), "8..10");
  EXPECT_EQ(at32[2].str(), "11..12");
  EXPECT_TRUE(split_k_range(KRange{70, 70}, 64).empty());
  EXPECT_TRUE(split_k_range(KRange{3, 7}, 0).empty());
}

Problem shape(int n, KRange k) {
  Problem problem;
  problem.m = 1000000;
  problem.n = n;
  problem.k = k;
  return problem;
}

TEST(TensorMultiKPasses, TakesOnlyRangesOnePassCannotHold) {
  const Variant& passes = Registry::instance().get("tensor-multik-passes");
  const DeviceInfo h100 = testing_support::h100_like();
  EXPECT_FALSE(passes.can_implement(shape(8, KRange{3, 12}), h100));   // ΣK = 75 > 64
  EXPECT_FALSE(passes.can_implement(shape(16, KRange{3, 9}), h100));   // ΣK = 42 > 32 at N=16
  const auto one_pass = passes.can_implement(shape(8, KRange{3, 7}), h100);
  ASSERT_TRUE(one_pass);
  EXPECT_NE(one_pass->find("in one pass"), std::string::npos) << *one_pass;
  const auto too_big = passes.can_implement(shape(8, KRange{70, 70}), h100);
  ASSERT_TRUE(too_big);
  EXPECT_NE(too_big->find("alone exceeds"), std::string::npos) << *too_big;
  EXPECT_TRUE(passes.can_implement(shape(8, KRange{3, 12}), testing_support::cpu_only()));
}

TEST(TensorMultiKPasses, PassSlotsBelowTheLargestKAreRefusedByTheSpace) {
  const Variant& passes = Registry::instance().get("tensor-multik-passes");
  const DeviceInfo h100 = testing_support::h100_like();
  const Problem wide = shape(8, KRange{30, 34});  // ΣK = 160, K = 34 > 32
  ASSERT_FALSE(passes.can_implement(wide, h100));
  EXPECT_THROW(resolve_params(passes, wide, h100, Params{{"pass_slots", 32}}), UnsupportedError);
  EXPECT_NO_THROW(resolve_params(passes, wide, h100, Params{{"pass_slots", 64}}));
}

// At N=9..16 a pass holds 32 slots: 64 would run as 32, so the space offers 32 alone.
TEST(TensorMultiKPasses, PassSlotsOffersOnlyWhatAPassHoldsAtN) {
  const Variant& passes = Registry::instance().get("tensor-multik-passes");
  const DeviceInfo h100 = testing_support::h100_like();
  const Problem n16 = shape(16, KRange{3, 9});
  const ParamSpace space = passes.param_space(n16, h100);
  ASSERT_NE(space.find("pass_slots"), nullptr);
  EXPECT_EQ(space.find("pass_slots")->values, std::vector<nlohmann::json>{32});
  EXPECT_EQ(passes.default_params(n16, h100).at("pass_slots"), 32);
  EXPECT_EQ(passes.param_space(shape(8, KRange{3, 12}), h100).find("pass_slots")->values.size(), 2u);
}

// One split step with a frozen K and clusters that empty (each K's last centroid far from the
// data, so the farthest policy moves it) gives, K by K, what tensor-multik gives on that K's
// pass alone from the same centroids: flags, policies and results reach every pass.
TEST(TensorMultiKPassesGpu, SplitStepIsEachPassAsTensorMultiK) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  const DeviceInfo device = query_device(0);
  GeneratorSpec spec;
  spec.m = 50000;
  spec.n = 4;
  spec.seed = 21;
  const Dataset data = generate(spec);
  Problem problem = shape(4, KRange{3, 12});
  problem.m = spec.m;
  problem.sparsity = data.sparsity;
  const Variant& passes = Registry::instance().get("tensor-multik-passes");
  const Variant& one = Registry::instance().get("tensor-multik");
  ASSERT_FALSE(passes.can_implement(problem, device));
  std::vector<float> start = initial_centroids(data, problem.k, InitMethod::FirstK, 0);
  for (int k = problem.k.kmin; k <= problem.k.kmax; ++k)
    for (int d = 0; d < problem.n; ++d) start[size_t(problem.k.slot_offset(k) + k - 1) * problem.n + d] = 1000.f;
  UpdateOptions options;
  options.empty = EmptyPolicy::Farthest;
  options.active.assign(size_t(problem.k.count()), 1);
  options.active[4] = 0;  // K=7 frozen
  const Params params = resolve_params(passes, problem, device, Params::object());
  auto run = passes.prepare(problem, data, params, device);
  run->set_centroids(start);
  run->accumulate(AccumulateOptions{false, options.active});
  const StepSummary summary = run->update(options);
  const IterationResult got = run->read_back();
  ASSERT_EQ(got.per_k.size(), size_t(problem.k.count()));
  ASSERT_EQ(summary.per_k.size(), size_t(problem.k.count()));

  const std::vector<KRange> ranges = split_k_range(problem.k, params.at("pass_slots").get<int>());
  ASSERT_GE(ranges.size(), 2u);
  int relocated = 0;
  for (const KRange& range : ranges) {
    SCOPED_TRACE("pass K=" + range.str());
    const Problem sub = problem_for_pass(problem, range);
    auto alone = one.prepare(sub, data, one.default_params(sub, device), device);
    const auto first = start.begin() + std::ptrdiff_t(size_t(problem.k.slot_offset(range.kmin)) * problem.n);
    alone->set_centroids(std::vector<float>(first, first + std::ptrdiff_t(size_t(range.sum()) * problem.n)));
    UpdateOptions mine = options;
    const auto flags = options.active.begin() + (range.kmin - problem.k.kmin);
    mine.active.assign(flags, flags + range.count());
    alone->accumulate(AccumulateOptions{false, mine.active});
    const StepSummary want_summary = alone->update(mine);
    const IterationResult want = alone->read_back();
    for (int i = 0; i < range.count(); ++i) {
      const size_t at = size_t(range.kmin - problem.k.kmin + i);
      SCOPED_TRACE("K=" + std::to_string(range.kmin + i));
      ASSERT_EQ(got.per_k[at].k, want.per_k[size_t(i)].k);
      EXPECT_EQ(got.per_k[at].counts, want.per_k[size_t(i)].counts);
      ASSERT_EQ(got.per_k[at].centroids.size(), want.per_k[size_t(i)].centroids.size());
      for (size_t j = 0; j < got.per_k[at].centroids.size(); ++j) {
        const double x = got.per_k[at].centroids[j], y = want.per_k[size_t(i)].centroids[j];
        EXPECT_NEAR(x, y, 4e-7 * std::max({1.0, std::abs(x), std::abs(y)})) << "value " << j;  // FP64 atomics' order
      }
      EXPECT_NEAR(got.per_k[at].inertia, want.per_k[size_t(i)].inertia, 1e-9 * std::max(1.0, want.per_k[size_t(i)].inertia));
      EXPECT_NEAR(summary.per_k[at].inertia, want_summary.per_k[size_t(i)].inertia,
                  1e-9 * std::max(1.0, want_summary.per_k[size_t(i)].inertia));
      EXPECT_NEAR(summary.per_k[at].shift, want_summary.per_k[size_t(i)].shift,
                  1e-4 * std::max(1e-3, want_summary.per_k[size_t(i)].shift));  // from FP32 centroids
      EXPECT_EQ(summary.per_k[at].active, want_summary.per_k[size_t(i)].active);
      EXPECT_EQ(summary.per_k[at].empty, want_summary.per_k[size_t(i)].empty);
      EXPECT_EQ(summary.per_k[at].relocated, want_summary.per_k[size_t(i)].relocated);
      relocated += summary.per_k[at].relocated;
    }
  }
  EXPECT_GT(relocated, 0) << "no cluster emptied: the test checks no policy";
  EXPECT_FALSE(summary.per_k[4].active);
}

// A hook (the multi-GPU all-reduce) edits the gathered accumulators in place; asking for them
// again (ShardedRun does, after the hook) must hand back the edited buffer, not gather the
// passes' own sums over it, and update() must divide the edited sums. The edit: every sum of
// every slot gains its cluster's count times 0.25, so every centroid of a non-empty cluster
// moves by 0.25 in every dimension against an unedited run's.
TEST(TensorMultiKPassesGpu, AHooksEditOfTheGatheredSumsSurvivesASecondCallAndReachesTheUpdate) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  const DeviceInfo device = query_device(0);
  GeneratorSpec spec;
  spec.m = 20000;
  spec.n = 4;
  spec.seed = 23;
  const Dataset data = generate(spec);
  Problem problem = shape(4, KRange{3, 12});
  problem.m = spec.m;
  problem.sparsity = data.sparsity;
  const Variant& passes = Registry::instance().get("tensor-multik-passes");
  const Params params = resolve_params(passes, problem, device, Params::object());
  const std::vector<float> start = initial_centroids(data, problem.k, InitMethod::RandomSample, 3);
  std::vector<IterationResult> results;
  for (const bool edit : {false, true}) {
    auto run = passes.prepare(problem, data, params, device);
    run->set_centroids(start);
    run->accumulate(AccumulateOptions{});
    const AccumulatorRefs refs = run->accumulators();
    ASSERT_TRUE(refs.on_device);
    ASSERT_EQ(refs.slots, problem.k.sum());
    if (edit) {
      auto stream = static_cast<cudaStream_t>(refs.stream);
      std::vector<double> sums(size_t(refs.slots) * size_t(refs.n));
      std::vector<unsigned long long> counts(size_t(refs.slots));
      ASSERT_EQ(cudaMemcpyAsync(sums.data(), refs.sums, sums.size() * sizeof(double), cudaMemcpyDeviceToHost, stream),
                cudaSuccess);
      ASSERT_EQ(cudaMemcpyAsync(counts.data(), refs.counts, counts.size() * sizeof(unsigned long long),
                                cudaMemcpyDeviceToHost, stream),
                cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      for (size_t slot = 0; slot < counts.size(); ++slot)
        for (int d = 0; d < refs.n; ++d) sums[slot * size_t(refs.n) + size_t(d)] += 0.25 * double(counts[slot]);
      ASSERT_EQ(cudaMemcpyAsync(refs.sums, sums.data(), sums.size() * sizeof(double), cudaMemcpyHostToDevice, stream),
                cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      const AccumulatorRefs again = run->accumulators();
      EXPECT_EQ(again.sums, refs.sums);
      std::vector<double> back(sums.size());
      ASSERT_EQ(cudaMemcpy(back.data(), again.sums, back.size() * sizeof(double), cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_EQ(back, sums) << "a second call gathered the passes' sums over the hook's";
    }
    run->update(UpdateOptions{});
    results.push_back(run->read_back());
  }
  ASSERT_EQ(results[0].per_k.size(), results[1].per_k.size());
  int moved = 0;
  for (size_t i = 0; i < results[0].per_k.size(); ++i) {
    const KResult& plain = results[0].per_k[i];
    const KResult& edited = results[1].per_k[i];
    SCOPED_TRACE("K=" + std::to_string(plain.k));
    ASSERT_EQ(plain.counts, edited.counts);
    for (size_t c = 0; c < plain.counts.size(); ++c) {
      if (plain.counts[c] == 0) continue;
      for (int d = 0; d < problem.n; ++d) {
        const size_t at = c * size_t(problem.n) + size_t(d);
        EXPECT_NEAR(edited.centroids[at] - plain.centroids[at], 0.25, 1e-5) << "cluster " << c << " dim " << d;
        ++moved;
      }
    }
  }
  EXPECT_GT(moved, 0);
}

}  // namespace
}  // namespace mk
