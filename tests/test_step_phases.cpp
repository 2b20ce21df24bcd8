// A step split into accumulate() and update() (variants/step.hpp): the split step equals the
// fused one, frozen Ks stay put, the shift is the centroids' movement, and the empty-cluster
// policies move what they promise. Expected values are computed here, in FP64, from the data:
// not by the code under test. cpu-openmp runs everywhere; each GPU variant that splits its step
// runs the same checks on a GPU, and skips with the driver's reason without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

struct Bound {
  std::unique_ptr<PreparedRun> run;
  Problem problem;
};

DeviceInfo device_for(const Variant& variant) { return variant.runs_on_gpu() ? query_device(0) : query_host_cpu(); }

// nullptr with the refusal in `why` when the variant cannot run the shape.
std::unique_ptr<PreparedRun> bind(const Variant& variant, const Dataset& data, KRange k, std::string* why) {
  Problem p;
  p.m = data.m;
  p.n = data.n;
  p.k = k;
  const DeviceInfo device = device_for(variant);
  if (auto refusal = variant.can_implement(p, device)) {
    *why = *refusal;
    return nullptr;
  }
  return variant.prepare(p, data, resolve_params(variant, p, device, Params::object()), device);
}

Dataset blobs(int64_t m, int n, uint64_t seed) {
  GeneratorSpec spec;
  spec.kind = "blobs";
  spec.m = m;
  spec.n = n;
  spec.centers = 5;
  spec.seed = seed;
  return generate(spec);
}

// `groups` tight groups at 0, 10, 20, ... in every coordinate, one planted far point at 3.5 in
// every coordinate, and groups + 1 centroids: one per group and one at 50·groups, which no point
// is nearest to. The far point is nearest to the origin group's centroid and farthest from it.
// Two groups (K=3) for most variants; 63 (K=64) for tf32-window, which needs one K >= 64.
// `n` dimensions: 3, or 16 for a variant whose lanes split the features (warp-centric).
Dataset groups_and_an_outlier(int n, int groups) {
  Dataset d;
  d.n = n;
  const int per_group = 200;
  for (int g = 0; g < groups; ++g)
    for (int i = 0; i < per_group; ++i)
      for (int dim = 0; dim < d.n; ++dim) d.values.push_back(float(10 * g) + 0.001f * float((i * 7 + dim) % 13));
  for (int dim = 0; dim < d.n; ++dim) d.values.push_back(3.5f);
  d.m = int64_t(d.values.size()) / d.n;
  d.identity = {{"kind", "test"}};
  return d;
}

// The groups + 1 centroids of groups_and_an_outlier: 0, 10, ... and 50·groups in every coordinate.
std::vector<float> group_centroids(int n, int groups) {
  std::vector<float> c;
  for (int g = 0; g < groups; ++g) c.insert(c.end(), size_t(n), float(10 * g));
  c.insert(c.end(), size_t(n), float(50 * groups));
  return c;
}

std::vector<const Variant*> variants_to_check() {
  std::vector<const Variant*> out;
  for (const Variant* v : Registry::instance().all())
    if (v->name() != "auto") out.push_back(v);
  return out;
}

class StepPhases : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    variant_ = &Registry::instance().get(GetParam());
    if (variant_->runs_on_gpu() && gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  }
  // Binds; a refusal of a shape the variant is given here is a failure.
  std::unique_ptr<PreparedRun> bind_or_fail(const Dataset& data, KRange k) {
    std::string why;
    auto run = bind(*variant_, data, k, &why);
    EXPECT_NE(run, nullptr) << variant_->name() << " refused " << k.str() << ": " << why;
    return run;
  }
  const Variant* variant_ = nullptr;
};

bool splits_its_step(PreparedRun& run) {
  try {
    run.accumulate({});
    return true;
  } catch (const UnsupportedError&) {
    return false;
  }
}

// The first shape of these that the variant accepts: N=4 with K=3..5, then N=16 (warp-centric's
// lanes split the features), then one K=64 (tf32-window needs one K >= 64), then K=3..12
// (tensor-multik-passes takes only ranges beyond one tensor-multik pass).
struct Shape {
  int n;
  KRange k;
};
Shape shape_for(const Variant& v) {
  for (const Shape& shape :
       {Shape{4, {3, 5}}, Shape{16, {3, 5}}, Shape{4, {64, 64}}, Shape{16, {64, 64}}, Shape{4, {3, 12}}}) {
    Problem p;
    p.m = 6000;
    p.n = shape.n;
    p.k = shape.k;
    if (!v.can_implement(p, device_for(v))) return shape;
  }
  return {4, {3, 5}};  // refused: bind_or_fail then reports the variant's reason
}

// The outlier tests' shape: the first of (N, K) = (3, 3), (16, 3), (3, 64), (16, 64) that the
// variant accepts for groups_and_an_outlier (K - 1 groups).
struct OutlierShape {
  int n;
  int k;
};
OutlierShape outlier_shape_for(const Variant& v) {
  for (const OutlierShape shape : {OutlierShape{3, 3}, OutlierShape{16, 3}, OutlierShape{3, 64}, OutlierShape{16, 64}}) {
    Problem p;
    p.m = int64_t(200) * (shape.k - 1) + 1;
    p.n = shape.n;
    p.k = {shape.k, shape.k};
    if (!v.can_implement(p, device_for(v))) return shape;
  }
  return {3, 3};  // refused: bind_or_fail then reports the variant's reason
}

// tensor-multik-passes takes no single K (nor any range one tensor-multik pass holds): its
// update hands the policy to each pass's tensor-multik run, which these tests check, and
// tests/test_k_range_passes.cpp checks that each pass steps as tensor-multik does, policies
// included.
#define SKIP_RANGE_ONLY_VARIANT()                                                                              \
  if (variant_->name() == "tensor-multik-passes")                                                              \
  GTEST_SKIP() << "tensor-multik-passes takes only K ranges beyond one tensor-multik pass; its policies are "  \
                  "tensor-multik's (TensorMultiKPassesGpu.SplitStepIsEachPassAsTensorMultiK)"

// Two passes' centroids agree up to the last bits, and their counts exactly: FP64 atomics add
// in a run-to-run order, and a kernel that divides in place (tensor-multik's last block adds
// the data's mean to the mean of centred points) rounds unlike the update phase (the mean of
// the points).
void expect_same_step(const IterationResult& a, const IterationResult& b) {
  ASSERT_EQ(a.per_k.size(), b.per_k.size());
  for (size_t i = 0; i < a.per_k.size(); ++i) {
    ASSERT_EQ(a.per_k[i].centroids.size(), b.per_k[i].centroids.size());
    for (size_t j = 0; j < a.per_k[i].centroids.size(); ++j) {
      const double x = a.per_k[i].centroids[j], y = b.per_k[i].centroids[j];
      EXPECT_NEAR(x, y, 4e-7 * std::max({1.0, std::abs(x), std::abs(y)})) << "K=" << a.per_k[i].k << " value " << j;
    }
    EXPECT_EQ(a.per_k[i].counts, b.per_k[i].counts) << "K=" << a.per_k[i].k;
  }
}

TEST_P(StepPhases, SplitStepEqualsTheFusedStep) {
  const Shape shape = shape_for(*variant_);
  const Dataset data = blobs(6000, shape.n, 11);
  const KRange k = shape.k;
  const auto start = initial_centroids(data, k, InitMethod::RandomSample, 3);
  auto fused = bind_or_fail(data, k);
  auto split = bind_or_fail(data, k);
  ASSERT_TRUE(fused && split);
  split->set_centroids(start);
  ASSERT_TRUE(splits_its_step(*split)) << variant_->name() << " does not split its step";
  fused->set_centroids(start);
  fused->iterate(false);
  split->set_centroids(start);
  split->accumulate({});
  const StepSummary summary = split->update({});
  const IterationResult a = fused->read_back(), b = split->read_back();
  ASSERT_EQ(summary.per_k.size(), a.per_k.size());
  expect_same_step(a, b);
  for (size_t i = 0; i < a.per_k.size(); ++i) {
    // The same FP64 sum, possibly added in another order (csr-sparse's fused and split paths).
    EXPECT_NEAR(a.per_k[i].inertia, summary.per_k[i].inertia, 1e-12 * a.per_k[i].inertia);
    // The shift is Σ‖c_new − c_old‖², recomputed here from the read-back centroids.
    const int base = k.slot_offset(a.per_k[i].k);
    double shift = 0;
    for (size_t j = 0; j < b.per_k[i].centroids.size(); ++j) {
      const double diff = double(b.per_k[i].centroids[j]) - double(start[size_t(base) * data.n + j]);
      shift += diff * diff;
    }
    EXPECT_NEAR(summary.per_k[i].shift, shift, 1e-12 * std::max(1.0, shift));
    EXPECT_TRUE(summary.per_k[i].active);
  }
}

TEST_P(StepPhases, FrozenKKeepsItsCentroids) {
  const Shape shape = shape_for(*variant_);
  const Dataset data = blobs(5000, shape.n, 12);
  const KRange k = shape.k;
  const auto start = initial_centroids(data, k, InitMethod::RandomSample, 5);
  auto run = bind_or_fail(data, k);
  ASSERT_TRUE(run);
  run->set_centroids(start);
  ASSERT_TRUE(splits_its_step(*run)) << variant_->name() << " does not split its step";
  run->set_centroids(start);
  run->accumulate({});
  UpdateOptions options;
  options.active.assign(size_t(k.count()), 1);
  // K = kmin + 1 is frozen; a variant that runs one K (tf32-window) freezes that one.
  const int frozen = k.count() > 1 ? 1 : 0;
  options.active[size_t(frozen)] = 0;
  const StepSummary summary = run->update(options);
  const IterationResult got = run->read_back();
  const int frozen_k = k.kmin + frozen;
  const int base = k.slot_offset(frozen_k);
  const std::vector<float> expected(start.begin() + size_t(base) * data.n,
                                    start.begin() + size_t(base + frozen_k) * data.n);
  EXPECT_EQ(got.per_k[size_t(frozen)].centroids, expected);
  EXPECT_FALSE(summary.per_k[size_t(frozen)].active);
  EXPECT_EQ(summary.per_k[size_t(frozen)].shift, 0.0);
  if (k.count() > 1) EXPECT_GT(summary.per_k[0].shift, 0.0);  // the others moved
}

// AccumulateOptions::active: a run may leave a frozen K out of its pass (gemm-cublas does). The
// other Ks come out as from a pass over every K, and the frozen K keeps its centroids.
TEST_P(StepPhases, AFrozenKLeftOutOfThePassLeavesTheOtherKsAsAFullPass) {
  const Shape shape = shape_for(*variant_);
  const KRange k = shape.k;
  if (k.count() < 2) GTEST_SKIP() << variant_->name() << " runs one K here: nothing to leave out";
  const Dataset data = blobs(5000, shape.n, 14);
  const auto start = initial_centroids(data, k, InitMethod::RandomSample, 6);
  UpdateOptions options;
  options.active.assign(size_t(k.count()), 1);
  options.active[1] = 0;
  auto full = bind_or_fail(data, k);
  ASSERT_TRUE(full);
  full->set_centroids(start);
  ASSERT_TRUE(splits_its_step(*full)) << variant_->name() << " does not split its step";
  full->set_centroids(start);
  full->accumulate({});
  full->update(options);
  const IterationResult a = full->read_back();
  full.reset();  // one run at a time: shared-atomics' constant centroid bank is one per module
  auto skipping = bind_or_fail(data, k);
  ASSERT_TRUE(skipping);
  skipping->set_centroids(start);
  skipping->accumulate(AccumulateOptions{false, options.active});
  const StepSummary summary = skipping->update(options);
  const IterationResult b = skipping->read_back();
  ASSERT_EQ(a.per_k.size(), b.per_k.size());
  for (size_t i = 0; i < a.per_k.size(); ++i) {
    SCOPED_TRACE("K=" + std::to_string(a.per_k[i].k));
    if (!options.active[i]) {
      const int base = k.slot_offset(a.per_k[i].k);
      const std::vector<float> expected(start.begin() + size_t(base) * data.n,
                                        start.begin() + size_t(base + a.per_k[i].k) * data.n);
      EXPECT_EQ(b.per_k[i].centroids, expected);
      EXPECT_EQ(summary.per_k[i].shift, 0.0);
      continue;
    }
    IterationResult one_a, one_b;
    one_a.per_k.push_back(a.per_k[i]);
    one_b.per_k.push_back(b.per_k[i]);
    expect_same_step(one_a, one_b);
  }
}

TEST_P(StepPhases, AnUpdateWithoutASummaryMovesTheCentroidsAsOneWithIt) {
  const Shape shape = shape_for(*variant_);
  const Dataset data = blobs(6000, shape.n, 13);
  const KRange k = shape.k;
  const auto start = initial_centroids(data, k, InitMethod::RandomSample, 7);
  auto with = bind_or_fail(data, k);
  auto without = bind_or_fail(data, k);
  ASSERT_TRUE(with && without);
  with->set_centroids(start);
  ASSERT_TRUE(splits_its_step(*with)) << variant_->name() << " does not split its step";
  UpdateOptions no_summary;
  no_summary.summary = false;
  for (PreparedRun* run : {with.get(), without.get()}) run->set_centroids(start);
  // Two steps each: the second accumulates from the first one's centroids. One run after the
  // other, as this test was written: a variant's __constant__ centroid bank is one per module
  // and device, and an update without a summary returns with its step still running
  // (interleaved, shared-atomics' first step read the other run's centroids on an H200 at
  // 27a21c1). Runs on one GPU now take turns at the bank (variants/common/constant_bank_turn.hpp,
  // 72b87ce), since a batch (variants/batched/) puts several runs on one GPU.
  for (int step = 0; step < 2; ++step) {
    with->accumulate({});
    EXPECT_EQ(with->update({}).per_k.size(), size_t(k.count()));
  }
  for (int step = 0; step < 2; ++step) {
    without->accumulate({});
    const StepSummary none = without->update(no_summary);
    if (variant_->runs_on_gpu()) EXPECT_TRUE(none.per_k.empty());  // host runs compute it anyway
  }
  without->synchronize();
  expect_same_step(with->read_back(), without->read_back());
  // Without a summary there are no empty counts for farthest or random to act on.
  UpdateOptions farthest = no_summary;
  farthest.empty = EmptyPolicy::Farthest;
  without->accumulate({});
  if (variant_->runs_on_gpu()) EXPECT_THROW(without->update(farthest), InputError);
}

TEST_P(StepPhases, FarthestPolicyMovesTheFarthestPointIntoTheEmptyCluster) {
  SKIP_RANGE_ONLY_VARIANT();
  const OutlierShape shape = outlier_shape_for(*variant_);
  const int k = shape.k, empty_slot = shape.k - 1;
  const Dataset data = groups_and_an_outlier(shape.n, k - 1);
  const int n = data.n;
  const std::vector<float> start = group_centroids(n, k - 1);
  auto run = bind_or_fail(data, {k, k});
  ASSERT_TRUE(run);
  run->set_centroids(start);
  ASSERT_TRUE(splits_its_step(*run)) << variant_->name() << " does not split its step";
  run->set_centroids(start);
  run->accumulate({});
  UpdateOptions options;
  options.empty = EmptyPolicy::Farthest;
  const StepSummary summary = run->update(options);
  const IterationResult got = run->read_back();
  // Expected, from the data: the outlier (last row) leaves cluster 0 for cluster 2.
  const int64_t outlier = data.m - 1;
  std::vector<double> mean0(size_t(n), 0.0);
  int64_t count0 = 0;
  for (int64_t i = 0; i < outlier; ++i)
    if (data.at(i, 0) < 5) {
      for (int d = 0; d < n; ++d) mean0[size_t(d)] += data.at(i, d);
      ++count0;
    }
  for (int d = 0; d < n; ++d) {
    EXPECT_NEAR(got.per_k[0].centroids[size_t(d)], mean0[size_t(d)] / double(count0), 1e-6);
    EXPECT_EQ(got.per_k[0].centroids[size_t(empty_slot * n + d)], data.at(outlier, d));
  }
  EXPECT_EQ(got.per_k[0].counts[0], count0);
  EXPECT_EQ(got.per_k[0].counts[size_t(empty_slot)], 1);
  EXPECT_EQ(summary.per_k[0].empty, 1);
  EXPECT_EQ(summary.per_k[0].relocated, 1);
}

TEST_P(StepPhases, RandomPolicyMovesTheEmptyClusterOntoADataPoint) {
  SKIP_RANGE_ONLY_VARIANT();
  const OutlierShape shape = outlier_shape_for(*variant_);
  const int k = shape.k, empty_slot = shape.k - 1;
  const Dataset data = groups_and_an_outlier(shape.n, k - 1);
  const int n = data.n;
  const std::vector<float> start = group_centroids(n, k - 1);
  auto run = bind_or_fail(data, {k, k});
  ASSERT_TRUE(run);
  run->set_centroids(start);
  ASSERT_TRUE(splits_its_step(*run)) << variant_->name() << " does not split its step";
  run->set_centroids(start);
  run->accumulate({});
  UpdateOptions options;
  options.empty = EmptyPolicy::Random;
  options.seed = 77;
  const StepSummary summary = run->update(options);
  const IterationResult got = run->read_back();
  bool on_a_point = false;
  for (int64_t i = 0; i < data.m && !on_a_point; ++i) {
    bool same = true;
    for (int d = 0; d < n; ++d) same = same && got.per_k[0].centroids[size_t(empty_slot * n + d)] == data.at(i, d);
    on_a_point = same;
  }
  EXPECT_TRUE(on_a_point);
  EXPECT_EQ(got.per_k[0].counts[size_t(empty_slot)], 1);
  EXPECT_EQ(summary.per_k[0].relocated, 1);
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const Variant* v : variants_to_check()) out.push_back(v->name());
  return out;
}

std::string name_of(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  std::replace_if(s.begin(), s.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return s;
}

INSTANTIATE_TEST_SUITE_P(Variants, StepPhases, ::testing::ValuesIn(names()), name_of);

// Every GPU variant splits its step: the generic path (LloydState's deferred division) or its
// own (tensor-multik's sums-out kernel); the accumulators are device memory.
TEST(StepPhasesContract, EveryGpuVariantSplitsItsStep) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  for (const Variant* v : variants_to_check()) {
    if (!v->runs_on_gpu()) continue;
    const Shape shape = shape_for(*v);
    const Dataset data = blobs(4000, shape.n, 13);
    std::string why;
    auto run = bind(*v, data, shape.k, &why);
    ASSERT_NE(run, nullptr) << v->name() << ": " << why;
    run->set_centroids(initial_centroids(data, shape.k, InitMethod::FirstK, 0));
    EXPECT_NO_THROW(run->accumulate({})) << v->name();
    const AccumulatorRefs refs = run->accumulators();
    EXPECT_TRUE(refs.on_device) << v->name();
    EXPECT_NE(refs.sums, nullptr) << v->name();
  }
}

TEST(EmptyPolicy, ParsesTheThreeNamesAndRefusesOthers) {
  EXPECT_EQ(parse_empty_policy("keep"), EmptyPolicy::Keep);
  EXPECT_EQ(parse_empty_policy("farthest"), EmptyPolicy::Farthest);
  EXPECT_EQ(parse_empty_policy("random"), EmptyPolicy::Random);
  EXPECT_THROW(parse_empty_policy("nearest"), InputError);
  EXPECT_STREQ(to_string(EmptyPolicy::Farthest), "farthest");
}

}  // namespace
}  // namespace mk
