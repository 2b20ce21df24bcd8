// auto's measured order (issue 32): the "auto" table of a tuned configuration, parsed and
// written back, its nearest shape, and auto following it before its built-in order.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include <unistd.h>

#include "core/errors.hpp"
#include "tests/synthetic_devices.hpp"
#include "tuner/config.hpp"
#include "variants/tuned_params.hpp"

namespace mk {
std::pair<std::string, std::string> choose_auto_delegate(const Problem& problem, const DeviceInfo& device,
                                                         double sparse_threshold);
}

namespace {

using namespace mk;
using testing_support::h100_like;

Problem shape(int64_t m, int n, int kmin, int kmax) { return testing_support::make_problem(m, n, kmin, kmax); }

// A configuration with the given "auto" entries (each a problem and its times).
std::string config_text(const std::string& table) {
  return R"({"schema": "mkbench.tuned-config/1", "device": {"slug": "test"}, "updated": "", "entries": [],
             "auto": )" + table + "}";
}

const char* kTwoShapes = R"([
  {"problem": {"n": 8, "k_min": 16, "k_max": 16, "m": 1048576},
   "times_ms": {"tensor-multik": 2.0, "shared-atomics": 1.0, "registers-multik": 1.5}, "source": "a.json@abc"},
  {"problem": {"n": 128, "k_min": 1024, "k_max": 1024, "m": 2097152},
   "times_ms": {"warp-centric": 80.0, "gemm-window": 5.0}}
])";

TEST(AutoTable, IsReadFastestFirstAndWrittenBack) {
  const tuner::TunedConfig config = tuner::parse_config_text(config_text(kTwoShapes), "test");
  ASSERT_EQ(config.auto_table.size(), 2u);
  const auto& first = config.auto_table[0].times_ms;
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0].first, "shared-atomics");
  EXPECT_EQ(first[1].first, "registers-multik");
  EXPECT_EQ(first[2].first, "tensor-multik");
  EXPECT_EQ(config.auto_table[0].source, "a.json@abc");
  const tuner::TunedConfig again =
      tuner::parse_config_text(tuner::config_to_json(config).dump(), "written back");
  ASSERT_EQ(again.auto_table.size(), 2u);
  EXPECT_EQ(again.auto_table[1].problem.n, 128);
  EXPECT_EQ(again.auto_table[1].times_ms[0].first, "gemm-window");
  EXPECT_DOUBLE_EQ(again.auto_table[1].times_ms[1].second, 80.0);
}

TEST(AutoTable, AConfigWithoutOneHasNoneAndWritesNone) {
  const tuner::TunedConfig config = tuner::parse_config_text(
      R"({"schema": "mkbench.tuned-config/1", "device": {}, "updated": "", "entries": []})", "test");
  EXPECT_TRUE(config.auto_table.empty());
  EXPECT_EQ(config.nearest_auto(shape(1 << 20, 8, 16, 16)), nullptr);
  EXPECT_FALSE(tuner::config_to_json(config).contains("auto"));
}

TEST(AutoTable, MalformedEntriesAreRefusedByName) {
  for (const char* bad : {R"({"problem": {"n": 8, "k_min": 3, "k_max": 3, "m": 100}, "times_ms": {}})",
                          R"({"problem": {"n": 8, "k_min": 3, "k_max": 3, "m": 100}, "times_ms": {"a": -1}})",
                          R"({"problem": {"n": 8, "k_min": 3, "k_max": 3, "m": 100}, "times_ms": {"a": "fast"}})",
                          R"({"times_ms": {"a": 1}})", R"(7)"}) {
    try {
      tuner::parse_config_text(config_text(std::string("[") + bad + "]"), "bad.json");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.json: auto[0]"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(tuner::parse_config_text(config_text("{}"), "bad.json"), InputError);
}

TEST(AutoTable, TheNearestShapeIsTheClosestOfTheProblemsOwnBucket) {
  const tuner::TunedConfig config = tuner::parse_config_text(config_text(kTwoShapes), "test");
  const tuner::AutoMeasurement* small = config.nearest_auto(shape(800000, 8, 16, 16));
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->problem.n, 8);
  const tuner::AutoMeasurement* wide = config.nearest_auto(shape(1 << 21, 96, 1000, 1000));
  ASSERT_NE(wide, nullptr);
  EXPECT_EQ(wide->problem.n, 128);
  // Another bucket (more points than the 1M measured, another N class, a K range): the table
  // says nothing there.
  EXPECT_EQ(config.nearest_auto(shape(1 << 25, 8, 16, 16)), nullptr);
  EXPECT_EQ(config.nearest_auto(shape(1 << 20, 4, 16, 16)), nullptr);
  EXPECT_EQ(config.nearest_auto(shape(1 << 20, 8, 3, 7)), nullptr);
  // Above 1M points the M class may differ: 128/1024 measured at 2M serves 32M.
  const tuner::AutoMeasurement* more = config.nearest_auto(shape(1 << 25, 128, 1024, 1024));
  ASSERT_NE(more, nullptr);
  EXPECT_EQ(more->problem.m, 1 << 21);
  // ...but not at or below 1M, where launch and latency decide.
  EXPECT_EQ(config.nearest_auto(shape(1 << 20, 128, 1024, 1024)), nullptr);
}

TEST(AutoTable, AShapeOfTheProblemsOwnMClassComesBeforeACloserOneOfAnother) {
  // 2M (M class 1M..8M) and 9M (8M..64M), both N=32 class and one small K.
  const tuner::TunedConfig config = tuner::parse_config_text(config_text(R"([
    {"problem": {"n": 20, "k_min": 8, "k_max": 8, "m": 2097152},
     "times_ms": {"tensor-multik": 1.0, "registers-multik": 1.2}},
    {"problem": {"n": 32, "k_min": 8, "k_max": 8, "m": 9437184},
     "times_ms": {"registers-multik": 0.33, "tensor-multik": 0.63}}
  ])"), "test");
  // 4M at N=32: the 9M shape is nearer (2.25x the points) than the 2M one (2x the points and
  // 1.6x the dimensions), but only the 2M one is of its M class.
  const tuner::AutoMeasurement* own = config.nearest_auto(shape(1 << 22, 32, 8, 8));
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(own->problem.n, 20);
  // 1M points (the class at or below 1M) take neither: below 1M the class must match.
  EXPECT_EQ(config.nearest_auto(shape(1 << 20, 32, 8, 8)), nullptr);
}

// A temporary MKBENCH_CONFIG_DIR holding a configuration for the synthetic H100's slug.
class AutoFollowsTheTable : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("mkbench-auto-table-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    if (const char* old = std::getenv("MKBENCH_CONFIG_DIR")) old_ = old, had_old_ = true;
    ::setenv("MKBENCH_CONFIG_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (had_old_) ::setenv("MKBENCH_CONFIG_DIR", old_.c_str(), 1);
    else ::unsetenv("MKBENCH_CONFIG_DIR");
    set_tuned_configs_enabled(true);
    std::filesystem::remove_all(dir_);
  }
  void write(const std::string& table) {
    std::ofstream(dir_ / (h100_like().slug() + ".json")) << config_text(table);
  }
  std::filesystem::path dir_;
  std::string old_;
  bool had_old_ = false;
};

TEST_F(AutoFollowsTheTable, TheFastestMeasuredVariantThatRunsIsChosen) {
  write(kTwoShapes);
  const Problem problem = shape(1 << 20, 8, 16, 16);
  const auto [delegate, reason] = choose_auto_delegate(problem, h100_like(), 0.7);
  EXPECT_EQ(delegate, "shared-atomics");
  EXPECT_NE(reason.find("auto table, measured on"), std::string::npos) << reason;
  // --no-tuned: the built-in order, which puts tensor-multik first for this shape class.
  set_tuned_configs_enabled(false);
  EXPECT_EQ(choose_auto_delegate(problem, h100_like(), 0.7).first, "tensor-multik");
}

TEST_F(AutoFollowsTheTable, AMeasuredVariantThatRefusesTheShapeIsPassedOver) {
  // tf32-window was fastest where it was measured (one K) but refuses a K range.
  write(R"([{"problem": {"n": 8, "k_min": 3, "k_max": 7, "m": 1048576},
             "times_ms": {"tf32-window": 0.5, "registers-multik": 1.0, "auto": 0.1, "csr-sparse": 0.2}}])");
  const auto [delegate, reason] = choose_auto_delegate(shape(1 << 20, 8, 3, 7), h100_like(), 0.7);
  EXPECT_EQ(delegate, "registers-multik") << reason;
  EXPECT_NE(reason.find("tf32-window:"), std::string::npos) << reason;
}

TEST_F(AutoFollowsTheTable, AShapeOfAnotherBucketGetsTheBuiltInOrder) {
  write(kTwoShapes);
  const auto [delegate, reason] = choose_auto_delegate(shape(1 << 25, 8, 16, 16), h100_like(), 0.7);
  EXPECT_EQ(delegate, "tensor-multik");
  EXPECT_NE(reason.find("built-in order"), std::string::npos) << reason;
}

TEST_F(AutoFollowsTheTable, ACpuVariantInTheTableIsNeverTheDelegate) {
  write(R"([{"problem": {"n": 8, "k_min": 16, "k_max": 16, "m": 1048576},
             "times_ms": {"cpu-openmp": 0.1, "shared-atomics": 1.0, "tensor-multik": 2.0}}])");
  EXPECT_EQ(choose_auto_delegate(shape(1 << 20, 8, 16, 16), h100_like(), 0.7).first, "shared-atomics");
}

TEST_F(AutoFollowsTheTable, WithNoVariantOfTheTableRunningTheBuiltInOrderDecides) {
  write(R"([{"problem": {"n": 8, "k_min": 3, "k_max": 7, "m": 1048576}, "times_ms": {"tf32-window": 0.5,
             "no-such-variant": 0.4}}])");
  const auto [delegate, reason] = choose_auto_delegate(shape(1 << 20, 8, 3, 7), h100_like(), 0.7);
  EXPECT_EQ(delegate, "tensor-multik");
  EXPECT_NE(reason.find("built-in order"), std::string::npos) << reason;
}

}  // namespace
