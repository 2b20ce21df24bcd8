// The tuned config without a GPU: the file round-trips through an atomic write, retuning keeps
// the earlier best, the nearest bucket is found, and `tuned_params_for` (what `mkbench run` and
// the suites apply) gives a config's params only where they are legal and switched on.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <utility>

#include "variants/tuned_params.hpp"

#include "tests/synthetic_devices.hpp"
#include "tests/tuner_fixtures.hpp"
#include "variants/variant.hpp"

namespace mk::tuner {
namespace {

using namespace fixtures;

// ----------------------------------------------------------------------------- config

TEST(TunerConfig, RoundTripsThroughAnAtomicWrite) {
  TempDir dir;
  TunedConfig config;
  config.device = DeviceKey{"Test GPU", "9.0", 132, "580.1"}.to_json();
  config.updated = "2026-01-02T03:04:05Z";
  config.merge(entry_for(kTable1, "registers-multik", {{"grid", 528}, {"block", 256}},
                         std::make_pair(std::string("naive-atomics"), Params{{"block", 256}})));
  config.merge(entry_for(shape(4, 3, 5, int64_t(32) << 20), "registers-multik", {{"grid", 264}}));
  const std::string path = dir.file("test-gpu.json");
  save_config_atomically(path, config);
  for (const auto& item : fs::directory_iterator(dir.path()))
    EXPECT_EQ(item.path().filename(), "test-gpu.json") << "temp file left behind";

  const TunedConfig loaded = load_config(path);
  EXPECT_EQ(config_to_json(loaded), config_to_json(config));
  ASSERT_EQ(loaded.entries.size(), 2u);
  EXPECT_EQ(loaded.entries[0].bucket.label(), "n<=4/multi-small/m<=64M");  // bucket-sorted
  const ConfigEntry& table1 = loaded.entries[1];
  EXPECT_EQ(table1.best.params, (Params{{"grid", 528}, {"block", 256}}));
  ASSERT_TRUE(table1.runner_up);
  EXPECT_EQ(table1.runner_up->variant, "naive-atomics");
  EXPECT_EQ(table1.evals_new, 60u);
  EXPECT_EQ(table1.strategy, "anneal");

  // Re-tuning a shape replaces its entry instead of adding a second one.
  config.merge(entry_for(kTable1, "registers-multik", {{"grid", 396}}));
  EXPECT_EQ(config.entries.size(), 2u);
  EXPECT_THROW(config_from_json(json{{"schema", "other"}}, "x"), InputError);
}

// The cached loader parses a file once, and again when the file is rewritten.
TEST(TunerConfig, CachedLoadSeesARewrittenFile) {
  TempDir dir;
  TunedConfig config;
  config.device = DeviceKey{"Test GPU", "9.0", 132, "580.1"}.to_json();
  config.merge(entry_for(kTable1, "registers-multik", {{"grid", 528}}));
  const std::string path = dir.file("test-gpu.json");
  save_config_atomically(path, config);
  const auto first = load_config_cached(path);
  EXPECT_EQ(load_config_cached(path), first) << "the unchanged file was parsed again";
  EXPECT_EQ(config_to_json(*first), config_to_json(load_config(path)));

  config.merge(entry_for(shape(4, 3, 5, int64_t(32) << 20), "registers-multik", {{"grid", 264}}));
  save_config_atomically(path, config);
  const auto second = load_config_cached(path);
  EXPECT_NE(second, first);
  EXPECT_EQ(second->entries.size(), 2u);
  EXPECT_EQ(first->entries.size(), 1u) << "a config handed out changed under its holder";
  EXPECT_THROW(load_config_cached(dir.file("missing.json")), InputError);
}

// Tuning one variant into a shape another variant was tuned for keeps that variant's point.
TEST(TunerConfig, RetuningAnotherVariantKeepsTheEarlierBestAsBestOrRunnerUp) {
  TunedConfig config;
  config.merge(entry_for(kTable1, "registers-multik", {{"grid", 2112}}));  // 0.45 ms
  ConfigEntry faster = entry_for(kTable1, "tensor-multik", {{"block", 512}},
                                 std::make_pair(std::string("tensor-multik"), Params{{"block", 256}}));
  faster.best.median_ms = 0.30;
  config.merge(faster);
  ASSERT_EQ(config.entries.size(), 1u);
  EXPECT_EQ(config.entries[0].best.variant, "tensor-multik");
  ASSERT_TRUE(config.entries[0].runner_up);
  EXPECT_EQ(config.entries[0].runner_up->variant, "registers-multik");
  EXPECT_EQ(config.entries[0].runner_up->params, (Params{{"grid", 2112}}));

  ConfigEntry slower = entry_for(kTable1, "naive-atomics", {{"block", 128}});
  slower.best.median_ms = 5.0;
  config.merge(slower);
  EXPECT_EQ(config.entries[0].best.variant, "tensor-multik");
  ASSERT_TRUE(config.entries[0].runner_up);
  EXPECT_EQ(config.entries[0].runner_up->variant, "naive-atomics");

  // Re-tuning the best's own variant replaces it as before.
  config.merge(entry_for(kTable1, "tensor-multik", {{"block", 384}}));
  EXPECT_EQ(config.entries[0].best.params, (Params{{"block", 384}}));
}

TEST(TunerConfig, NearestPrefersTheExactBucketThenTheClosestOne) {
  TunedConfig config;
  config.merge(entry_for(shape(4, 3, 5, int64_t(32) << 20), "small-n", {{"grid", 1}}));
  config.merge(entry_for(kTable1, "table1", {{"grid", 2}}));
  config.merge(entry_for(shape(128, 1000, 1000, int64_t(100) << 20), "huge", {{"grid", 3}}));
  auto pick = [&](const Problem& problem) {
    const auto entries = config.nearest(problem);
    return entries.empty() ? std::string("none") : entries.front()->best.variant;
  };
  EXPECT_EQ(pick(kTable1), "table1");                              // exact
  EXPECT_EQ(pick(shape(6, 3, 7, int64_t(20) << 20)), "table1");    // same bucket, other shape
  EXPECT_EQ(pick(shape(16, 3, 7, int64_t(32) << 20)), "table1");   // n<=16: distance 1 vs 2 and 10
  EXPECT_EQ(pick(shape(3, 3, 4, int64_t(8) << 20)), "small-n");    // n<=4, m<=8M: distance 1
  EXPECT_EQ(pick(shape(100, 900, 900, int64_t(200) << 20)), "huge");
  EXPECT_TRUE(TunedConfig{}.nearest(kTable1).empty());
}

TEST(TunerConfig, ChosenReasonsAndDefaultFlagsSurviveTheFile) {
  TempDir dir;
  TunedConfig config;
  ConfigEntry entry = entry_for(kTable1, "registers-multik", {{"grid", 0}}, std::make_pair(std::string("registers-multik"), Params{{"grid", 264}}));
  entry.best.is_default = true;
  entry.chosen = "default: winner 1.2% faster, not significant (p=0.31)";
  entry.runner_up_chosen = "default: winner 0.5% faster, not significant (p=0.8)";
  config.merge(entry);
  save_config_atomically(dir.file("c.json"), config);
  const TunedConfig loaded = load_config(dir.file("c.json"));
  ASSERT_EQ(loaded.entries.size(), 1u);
  EXPECT_TRUE(loaded.entries[0].best.is_default);
  EXPECT_FALSE(loaded.entries[0].runner_up->is_default);
  EXPECT_EQ(loaded.entries[0].chosen, entry.chosen);
  EXPECT_EQ(loaded.entries[0].runner_up_chosen, entry.runner_up_chosen);
}

// ---------------------------------------------------------------- `mkbench run` hook

class ConfigDirScope {
 public:
  explicit ConfigDirScope(const std::string& dir) {
    if (const char* old = std::getenv("MKBENCH_CONFIG_DIR")) previous_ = old;
    setenv("MKBENCH_CONFIG_DIR", dir.c_str(), 1);
  }
  ~ConfigDirScope() {
    if (previous_) setenv("MKBENCH_CONFIG_DIR", previous_->c_str(), 1);
    else unsetenv("MKBENCH_CONFIG_DIR");
  }

 private:
  std::optional<std::string> previous_;
};

DeviceInfo test_device() {
  DeviceInfo device;
  device.is_gpu = true;
  device.name = "Tuner Test Device 7e3a";  // no real config carries this slug
  device.cc_major = 9;
  device.sm_count = 132;
  return device;
}

// Grid values depend on M as in registers-multik: at most M/1024 blocks.
ParamSpace grid_space(const Problem& problem) {
  ParamSpace space;
  std::vector<json> grids;
  for (int64_t grid : {132, 264, 528, 1056, 2112})
    if (grid * 1024 <= problem.m) grids.push_back(grid);
  space.axes.push_back({"grid", grids, ""});
  space.axes.push_back({"block", {128, 256}, ""});
  return space;
}

TEST(TunerTunedParams, MissingConfigGivesNothing) {
  TempDir dir;
  ConfigDirScope scope(dir.path().string());
  FakeVariant variant("registers-multik", grid_space);
  std::string used = "untouched";
  EXPECT_FALSE(tuned_params_for(variant, kTable1, test_device(), &used));
  EXPECT_EQ(used, "untouched");
}

TEST(TunerTunedParams, MatchingBucketGivesTheTunedParamsWhenLegal) {
  TempDir dir;
  ConfigDirScope scope(dir.path().string());
  const DeviceInfo device = test_device();
  TunedConfig config;
  config.merge(entry_for(kTable1, "registers-multik", {{"grid", 1056}, {"block", 256}},
                         std::make_pair(std::string("runner"), Params{{"grid", 264}, {"block", 128}})));
  save_config_atomically(dir.file(device.slug() + ".json"), config);

  FakeVariant best("registers-multik", grid_space);
  FakeVariant runner("runner", grid_space);
  FakeVariant other("other", grid_space);
  std::string used;
  const auto params = tuned_params_for(best, kTable1, device, &used);
  ASSERT_TRUE(params);
  EXPECT_EQ(*params, (Params{{"grid", 1056}, {"block", 256}}));
  EXPECT_NE(used.find("n<=8/multi-small/m<=64M"), std::string::npos) << used;
  EXPECT_NE(used.find(device.slug() + ".json"), std::string::npos) << used;

  const auto runner_params = tuned_params_for(runner, kTable1, device, nullptr);
  ASSERT_TRUE(runner_params);
  EXPECT_EQ(*runner_params, (Params{{"grid", 264}, {"block", 128}}));
  EXPECT_FALSE(tuned_params_for(other, kTable1, device, nullptr));

  // Nearest bucket (M=16M is still m<=64M, N=12 is n<=16): used when the grid is legal…
  EXPECT_TRUE(tuned_params_for(best, shape(12, 3, 7, int64_t(16) << 20), device, nullptr));
  // …but at M=512K a grid of 1056 blocks is not in the space: fall back to the heuristic.
  EXPECT_FALSE(tuned_params_for(best, shape(8, 3, 7, int64_t(512) << 10), device, nullptr));
}

// A config written before the variant grew an axis still applies; the new axis takes the
// variant's default (fixed in 2df0a30: tensor-multik's new `fragments` axis had silently voided every entry).
TEST(TunerTunedParams, EntryTunedBeforeAnAxisExistedKeepsItsParamsAndTheAxisDefault) {
  TempDir dir;
  ConfigDirScope scope(dir.path().string());
  const DeviceInfo device = test_device();
  TunedConfig config;
  config.merge(entry_for(kTable1, "registers-multik", {{"grid", 1056}}));
  save_config_atomically(dir.file(device.slug() + ".json"), config);
  FakeVariant variant("registers-multik", grid_space);
  variant.set_default(Params{{"grid", 132}, {"block", 256}});
  const auto params = tuned_params_for(variant, kTable1, device, nullptr);
  ASSERT_TRUE(params);
  EXPECT_EQ(*params, (Params{{"grid", 1056}, {"block", 256}}));
}

// registers-multik tuned with rows=shared at N=32: at N=30 (rows of 120 bytes cannot be staged in
// 16-byte pieces) the entry's other values still apply, with the rows read from global memory,
// instead of the whole entry being passed over for the defaults.
TEST(TunerTunedParams, RegistersMultiKStagedRowsFromANearbyShapeBecomeGlobalWhereTheyCannotBeStaged) {
  TempDir dir;
  ConfigDirScope scope(dir.path().string());
  const DeviceInfo device = testing_support::h200();
  const Variant& variant = Registry::instance().get("registers-multik");
  const Problem tuned_on = shape(32, 8, 8, int64_t(10) << 20);
  Params tuned = variant.default_params(tuned_on, device);
  tuned["block"] = 512;
  tuned["rows"] = "shared";
  ASSERT_FALSE(variant.param_space(tuned_on, device).check(tuned).has_value());
  TunedConfig config;
  config.merge(entry_for(tuned_on, "registers-multik", tuned));
  save_config_atomically(dir.file(device.slug() + ".json"), config);

  const auto same = tuned_params_for(variant, tuned_on, device, nullptr);
  ASSERT_TRUE(same);
  EXPECT_EQ(*same, tuned);
  const auto nearby = tuned_params_for(variant, shape(30, 8, 8, int64_t(10) << 20), device, nullptr);
  ASSERT_TRUE(nearby) << "the N=32 entry was passed over at N=30";
  EXPECT_EQ(nearby->at("rows"), "global");
  EXPECT_EQ(nearby->at("block"), 512);
}

// `--no-tuned` (and `mkbench tune`) switch tuned configs off for the whole process, so a
// variant that looks up another variant's tuned parameters (auto) gets none either.
TEST(TunerTunedParams, SwitchedOffGivesNothingEvenWithAMatchingEntry) {
  TempDir dir;
  ConfigDirScope scope(dir.path().string());
  const DeviceInfo device = test_device();
  TunedConfig config;
  config.merge(entry_for(kTable1, "registers-multik", {{"grid", 1056}, {"block", 256}}));
  save_config_atomically(dir.file(device.slug() + ".json"), config);
  FakeVariant variant("registers-multik", grid_space);
  struct SwitchBackOn {
    ~SwitchBackOn() { set_tuned_configs_enabled(true); }
  } restore;
  set_tuned_configs_enabled(false);
  std::string used = "untouched";
  EXPECT_FALSE(tuned_params_for(variant, kTable1, device, &used));
  EXPECT_EQ(used, "untouched");
  set_tuned_configs_enabled(true);
  EXPECT_TRUE(tuned_params_for(variant, kTable1, device, &used));
}

TEST(TunerTunedParams, MalformedConfigIsAnInputError) {
  TempDir dir;
  ConfigDirScope scope(dir.path().string());
  const DeviceInfo device = test_device();
  std::ofstream(dir.file(device.slug() + ".json")) << "{ not json";
  FakeVariant variant("registers-multik", grid_space);
  EXPECT_THROW(tuned_params_for(variant, kTable1, device, nullptr), InputError);
}

TEST(TunerTunedParams, KeptDefaultAppliesTheHeuristicOfTheShapeAtHand) {
  TempDir dir;
  ConfigDirScope scope(dir.path().string());
  const DeviceInfo device = test_device();
  TunedConfig config;
  ConfigEntry entry = entry_for(kTable1, "registers-multik", {{"grid", 1056}, {"block", 256}});
  entry.best.is_default = true;
  config.merge(entry);
  save_config_atomically(dir.file(device.slug() + ".json"), config);
  FakeVariant variant("registers-multik", grid_space);
  variant.set_default([](const Problem& problem) {
    return Params{{"grid", problem.m >= (int64_t(32) << 20) ? 1056 : 264}, {"block", 256}};
  });
  // Same bucket, where grid=1056 is legal too but the heuristic says 264.
  std::string used;
  const auto params = tuned_params_for(variant, shape(8, 3, 7, int64_t(16) << 20), device, &used);
  ASSERT_TRUE(params);
  EXPECT_EQ(*params, (Params{{"grid", 264}, {"block", 256}}));
  EXPECT_NE(used.find("the default, kept by the tune"), std::string::npos) << used;
}

}  // namespace
}  // namespace mk::tuner
