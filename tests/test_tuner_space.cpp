// The tuner's search space without a GPU: shape buckets, the legal points of declared axes and
// their neighbours, pinned axes, and the replay tables (the recorded fixture, and defaults taken
// from recorded device limits), checked against hand-computed answers.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "tuner/replay.hpp"
#include "variants/variant.hpp"

#include "tests/tuner_fixtures.hpp"

namespace mk::tuner {
namespace {

using namespace fixtures;

// ---------------------------------------------------------------------------- buckets

TEST(TunerBuckets, ClassBoundaries) {
  EXPECT_EQ(n_class_of(1), 0);
  EXPECT_EQ(n_class_of(4), 0);
  EXPECT_EQ(n_class_of(5), 1);
  EXPECT_EQ(n_class_of(64), 4);
  EXPECT_EQ(n_class_of(65), 5);
  EXPECT_STREQ(k_class_name(k_class_of(parse_k_range("16"))), "single-small");
  EXPECT_STREQ(k_class_name(k_class_of(parse_k_range("3..7"))), "multi-small");
  EXPECT_STREQ(k_class_name(k_class_of(parse_k_range("17"))), "medium");
  EXPECT_STREQ(k_class_name(k_class_of(parse_k_range("3..20"))), "medium");   // ΣK = 207
  EXPECT_STREQ(k_class_name(k_class_of(parse_k_range("300"))), "large");
  EXPECT_STREQ(k_class_name(k_class_of(parse_k_range("2..45"))), "huge");     // ΣK = 1034
  const int64_t mi = int64_t(1) << 20;
  EXPECT_EQ(m_class_of(mi), 0);
  EXPECT_EQ(m_class_of(mi + 1), 1);
  EXPECT_EQ(m_class_of(32 * mi), 2);
  EXPECT_EQ(m_class_of(64 * mi + 1), 3);
  EXPECT_EQ(Bucket::of(kTable1).label(), "n<=8/multi-small/m<=64M");
}

TEST(TunerBuckets, LabelsRoundTripAndBadLabelsAreRejected) {
  for (int n = 0; n < kNClassCount; ++n)
    for (int k = 0; k < kKClassCount; ++k)
      for (int m = 0; m < kMClassCount; ++m) {
        const Bucket bucket{n, k, m};
        EXPECT_EQ(Bucket::parse(bucket.label()), bucket) << bucket.label();
      }
  EXPECT_THROW(Bucket::parse("n<=8/multi-small"), InputError);
  EXPECT_THROW(Bucket::parse("n<=7/multi-small/m<=64M"), InputError);
  EXPECT_EQ(Bucket::parse("n<=4/single-small/m<=1M").distance(Bucket::parse("n>64/huge/m>64M")), 5 + 4 + 3);
}

// ----------------------------------------------------------------------- search space

TEST(TunerSearchSpace, EnumeratesLegalPointsAndLeavesOutRefusingVariants) {
  FakeVariant usable("usable", [](const Problem&) { return two_axis_space(); });
  FakeVariant refusing("refusing", [](const Problem&) { return two_axis_space(); }, "cannot do this shape");
  const SearchSpace space = SearchSpace::build({&usable, &refusing}, kTable1, DeviceInfo{});
  EXPECT_EQ(space.size(), 7u);  // 4·2 combinations minus the restricted one
  ASSERT_EQ(space.refused().size(), 1u);
  EXPECT_EQ(space.refused()[0].first, "refusing");
  const ParamSpace reference = two_axis_space();
  std::set<std::string> keys;
  for (const Candidate& point : space.enumerate()) {
    EXPECT_EQ(point.variant, &usable);
    EXPECT_FALSE(reference.check(point.params)) << point.label();
    keys.insert(point.key());
  }
  EXPECT_EQ(keys.size(), space.size());
  Rng rng(7);
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(space.index_of(space.random_point(rng)));
}

TEST(TunerSearchSpace, NeighboursMoveOneAxisToTheAdjacentLegalValue) {
  FakeVariant variant("v", [](const Problem&) { return two_axis_space(); });
  const SearchSpace space = SearchSpace::build({&variant}, kTable1, DeviceInfo{});
  auto labels = [&](const Params& params) {
    std::set<std::string> out;
    for (const auto& neighbour : space.neighbours(Candidate{&variant, params})) out.insert(params_label(neighbour.params));
    return out;
  };
  // Numeric order 1,2,4,8 although declared 8,1,4,2.
  EXPECT_EQ(labels({{"x", 2}, {"y", "b"}}), (std::set<std::string>{"x=1,y=b", "x=4,y=b", "x=2,y=a"}));
  // x=4 is illegal with y=a, so the upward move goes on to x=8.
  EXPECT_EQ(labels({{"x", 2}, {"y", "a"}}), (std::set<std::string>{"x=1,y=a", "x=8,y=a", "x=2,y=b"}));
  EXPECT_EQ(labels({{"x", 8}, {"y", "b"}}), (std::set<std::string>{"x=4,y=b", "x=8,y=a"}));
}

TEST(TunerSearchSpace, PinnedAxesKeepOnlyThePinnedValue) {
  FakeVariant variant("v", [](const Problem&) { return two_axis_space(); });
  const SearchSpace space = SearchSpace::build({&variant}, kTable1, DeviceInfo{}, Params{{"x", 4}});
  ASSERT_EQ(space.size(), 1u);  // x=4 only with y=b (restriction)
  EXPECT_EQ(params_label(space.at(0).params), "x=4,y=b");
  // A pinned axis has no neighbours along it.
  EXPECT_TRUE(space.neighbours(space.at(0)).empty());
}

// Repeats are left out of a search, but a value the user pins is measured even where it repeats
// another point (gemm-window's arbitrate=deferred repeats auto beside update=sorted).
TEST(TunerSearchSpace, RepeatsAreSkippedUnlessAnAxisIsPinned) {
  auto with_repeat = [](const Problem&) {
    ParamSpace space = two_axis_space();
    space.repeats.push_back({"y=b repeats y=a", [](const Params& p) { return p.at("y") != "b"; }});
    return space;
  };
  FakeVariant variant("v", with_repeat);
  const SearchSpace free = SearchSpace::build({&variant}, kTable1, DeviceInfo{}, Params::object());
  for (size_t i = 0; i < free.size(); ++i) EXPECT_EQ(free.at(i).params.at("y"), "a");
  const SearchSpace pinned = SearchSpace::build({&variant}, kTable1, DeviceInfo{}, Params{{"y", "b"}});
  EXPECT_EQ(pinned.size(), 4u);  // x of 8, 1, 4, 2 with y=b
}

TEST(TunerSearchSpace, PinToAnUndeclaredValueOrUnknownAxisIsAnInputError) {
  FakeVariant variant("v", [](const Problem&) { return two_axis_space(); });
  EXPECT_THROW(SearchSpace::build({&variant}, kTable1, DeviceInfo{}, Params{{"x", 3}}), InputError);
  EXPECT_THROW(SearchSpace::build({&variant}, kTable1, DeviceInfo{}, Params{{"z", 1}}), InputError);
}

// ---------------------------------------------------------------------- replay fixture

TEST(TunerReplay, FixtureHoldsTwoShapesOfOneDevice) {
  const ReplayTable table = ReplayTable::load(kFixture, nullptr);
  const auto problems = table.problems();
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problem_key(problems[0]), problem_key(kTable1));
  EXPECT_EQ(table.device().name, "FIXTURE fabricated GPU");
  const SearchSpace space = table.space_for(kTable1);
  EXPECT_EQ(space.size(), 160u);  // 96 grid points + 54 ppt points + 10 naive-atomics points
  EXPECT_EQ(space.variant_names(), (std::vector<std::string>{"registers-multik", "naive-atomics"}));
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

TEST(TunerReplay, DefaultsComeFromTheRecordedDeviceLimits) {
  const DeviceInfo device = recording_device();
  const Params expected = Registry::instance().get("warp-centric").default_params(kTable1, device);
  const ReplayTable table = ReplayTable::from_records(recorded_space("warp-centric", device, true), "test");
  const SearchSpace space = table.space_for(kTable1);
  ASSERT_EQ(space.default_indices().size(), 1u) << joined(space.default_notes());
  EXPECT_EQ(space.at(space.default_indices()[0]).params, expected);
}

TEST(TunerReplay, KeyOnlyTableSkipsDefaultsThatNeedDeviceLimits) {
  const DeviceInfo device = recording_device();
  const Variant& warp = Registry::instance().get("warp-centric");
  DeviceInfo no_shared_memory = device;
  no_shared_memory.smem_per_block_optin = 0;
  if (warp.default_params(kTable1, device) == warp.default_params(kTable1, no_shared_memory))
    GTEST_SKIP() << "warp-centric's default no longer depends on shared memory: pick another variant";
  const ReplayTable table = ReplayTable::from_records(recorded_space("warp-centric", device, false), "test");
  const SearchSpace space = table.space_for(kTable1);
  EXPECT_TRUE(space.default_indices().empty());
  ASSERT_EQ(space.default_notes().size(), 1u);
  EXPECT_NE(space.default_notes()[0].find("device limits"), std::string::npos) << space.default_notes()[0];
}

TEST(TunerReplay, KeyOnlyTableStillGivesDefaultsThatNeedNoLimits) {
  const DeviceInfo device = recording_device();
  const Variant& naive = Registry::instance().get("naive-atomics");
  const Params expected = naive.default_params(kTable1, device);
  DeviceInfo bare = device_info_of(DeviceKey::of(device), json());
  if (naive.default_params(kTable1, bare) != expected)
    GTEST_SKIP() << "naive-atomics' default now depends on device limits: pick another variant";
  const ReplayTable table = ReplayTable::from_records(recorded_space("naive-atomics", device, false), "test");
  const SearchSpace space = table.space_for(kTable1);
  ASSERT_EQ(space.default_indices().size(), 1u) << joined(space.default_notes());
  EXPECT_EQ(space.at(space.default_indices()[0]).params, expected);
}

TEST(TunerReplay, TableWithoutAnSmCountGivesNoDefaults) {
  DeviceInfo device = recording_device();
  device.sm_count = 0;
  const ReplayTable table = ReplayTable::from_records(recorded_space("naive-atomics", device, false), "test");
  const SearchSpace space = table.space_for(kTable1);
  EXPECT_TRUE(space.default_indices().empty());
  ASSERT_EQ(space.default_notes().size(), 1u);
  EXPECT_NE(space.default_notes()[0].find("SM count"), std::string::npos) << space.default_notes()[0];
}

}  // namespace
}  // namespace mk::tuner
