// The tuner's crash-safe cache without a GPU: records reload exactly, a torn last line (kill -9
// mid-write) and failed records are measured again, and a killed tune or tune suite, resumed,
// measures what an uninterrupted one would have, charged for what the cache already holds.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tuner/replay.hpp"
#include "tuner/strategy.hpp"
#include "tuner/tune_shapes.hpp"

#include "tests/tuner_fixtures.hpp"

namespace mk::tuner {
namespace {

using namespace fixtures;

// ------------------------------------------------------------------------------ cache

CacheRecord sample_record(const std::string& variant, int grid, double median) {
  CacheRecord record;
  record.device = DeviceKey{"Test GPU", "9.0", 132, "580.1"};
  record.variant = variant;
  record.params = {{"grid", grid}, {"layout", "soa"}};
  record.problem = kTable1;
  record.bucket = Bucket::of(kTable1).label();
  record.measurement = Measurement{{median * 0.99, median, median * 1.01}, median, true, ""};
  record.strategy = "random";
  record.time = "2026-01-01T00:00:00Z";
  return record;
}

TEST(TunerCache, AppendedRecordsReloadExactly) {
  TempDir dir;
  const std::string path = dir.file("sub/cache.jsonl");  // folder created on demand
  {
    TuneCache cache(path, nullptr);
    cache.append(sample_record("a", 264, 0.4513));
    cache.append(sample_record("a", 528, 0.123456789012345));
  }
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
  EXPECT_EQ(text.back(), '\n');
  TuneCache reloaded(path, nullptr);
  ASSERT_EQ(reloaded.records().size(), 2u);
  const CacheRecord expected = sample_record("a", 528, 0.123456789012345);
  const CacheRecord* found = reloaded.find(expected.key());
  ASSERT_TRUE(found);
  EXPECT_EQ(found->measurement.samples_ms, expected.measurement.samples_ms);
  EXPECT_EQ(found->measurement.median_ms, expected.measurement.median_ms);
  EXPECT_EQ(found->params, expected.params);
  EXPECT_EQ(found->bucket, "n<=8/multi-small/m<=64M");
}

TEST(TunerCache, ResumeAfterATornLastLineReusesCachedPointsOnly) {
  const ReplayTable table = ReplayTable::load(kFixture, nullptr);
  const SearchSpace space = table.space_for(kTable1);
  const DeviceKey device{"Test GPU", "9.0", 132, "580.1"};
  TempDir dir;
  const std::string path = dir.file("cache.jsonl");

  std::vector<std::string> first_calls;
  {
    TuneCache cache(path, nullptr);
    auto strategy = make_strategy("random", space, 42);
    TuneOptions options;
    options.budget = evals(20);
    options.cache = &cache;
    options.device = device;
    run_tune(space, kTable1, *strategy, counting(table.evaluator(), &first_calls), options);
  }
  ASSERT_EQ(first_calls.size(), 20u);
  // A kill -9 in the middle of the 20th write: the file ends inside that line.
  const auto full_size = fs::file_size(path);
  fs::resize_file(path, full_size - 25);

  std::ostringstream warnings;
  TuneCache cache(path, &warnings);
  EXPECT_NE(warnings.str().find("cut short"), std::string::npos) << warnings.str();
  EXPECT_TRUE(cache.load_report().torn_tail);
  EXPECT_EQ(cache.records().size(), 19u);

  std::vector<std::string> resumed_calls;
  auto strategy = make_strategy("random", space, 42);
  TuneOptions options;
  options.budget = evals(20);
  options.cache = &cache;
  options.device = device;
  const TuneOutcome outcome =
      run_tune(space, kTable1, *strategy, counting(table.evaluator(), &resumed_calls), options);
  EXPECT_EQ(outcome.cached_evals, 19u);
  EXPECT_EQ(outcome.new_evals, 20u);
  const std::set<std::string> cached(first_calls.begin(), first_calls.begin() + 19);
  for (const auto& key : resumed_calls) EXPECT_FALSE(cached.count(key)) << "re-measured cached point " << key;
  // The torn point is the first one measured again.
  ASSERT_FALSE(resumed_calls.empty());
  EXPECT_EQ(resumed_calls.front(), first_calls[19]);

  // The torn fragment was cut off: every line of the file is a whole record.
  std::ifstream in(path);
  std::string line;
  size_t lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_NO_THROW(record_from_json(json::parse(line), "line"));
  }
  EXPECT_EQ(lines, 39u);
}

TEST(TunerCache, FailedRecordsAreMeasuredAgainOnResume) {
  TempDir dir;
  FakeVariant variant("v", [](const Problem&) { return two_axis_space(); });
  const SearchSpace space = SearchSpace::build({&variant}, kTable1, DeviceInfo{});
  const DeviceKey device{"Test GPU", "9.0", 132, "580.1"};
  const std::string path = dir.file("cache.jsonl");
  std::vector<std::string> calls;
  Evaluator flaky = [&calls](const Variant& v, const Params& p, const Problem&) {
    calls.push_back(candidate_key(v.name(), p));
    const bool first_try = std::count(calls.begin(), calls.end(), calls.back()) == 1;
    return first_try ? Measurement{{}, 0, false, "out of memory"} : Measurement{{1.0}, 1.0, true, ""};
  };
  for (int run = 0; run < 2; ++run) {
    TuneCache cache(path, nullptr);
    auto strategy = make_exhaustive_strategy(space);
    TuneOptions options;
    options.cache = &cache;
    options.device = device;
    const TuneOutcome outcome = run_tune(space, kTable1, *strategy, flaky, options);
    EXPECT_EQ(outcome.new_evals, space.size());
    EXPECT_EQ(bool(outcome.best()), run == 1);
  }
  EXPECT_EQ(calls.size(), 2 * space.size());
}

TEST(TunerCache, EvalSecondsAndDeviceLimitsSurviveTheFile) {
  TempDir dir;
  CacheRecord record = sample_record("a", 264, 0.45);
  record.eval_seconds = 2.5;
  record.device_limits = device_limits_of(recording_device());
  {
    TuneCache cache(dir.file("cache.jsonl"), nullptr);
    cache.append(record);
  }
  TuneCache reloaded(dir.file("cache.jsonl"), nullptr);
  ASSERT_EQ(reloaded.records().size(), 1u);
  EXPECT_DOUBLE_EQ(reloaded.records()[0].eval_seconds, 2.5);
  EXPECT_EQ(device_info_of(reloaded.records()[0].device, reloaded.records()[0].device_limits).smem_per_block_optin,
            232448);
}

// ------------------------------------------------------------ budgets across a kill

struct Killed {};

// Every measurement takes one second of a fake clock; `kill_at` (1-based) stops the
// process, as kill -9 would, in the middle of that measurement.
class FakeLab {
 public:
  Clock clock() const {
    auto now = now_;
    return [now] { return *now; };
  }
  // Keys "shape|variant|params" of the finished measurements go to `measured`.
  Evaluator evaluator(std::vector<std::string>* measured, int kill_at = 0) const {
    auto now = now_;
    auto calls = std::make_shared<int>(0);
    return [now, calls, measured, kill_at](const Variant& variant, const Params& params, const Problem& problem) {
      if (++*calls == kill_at) throw Killed{};
      *now += 1.0;
      measured->push_back(problem_key(problem) + "|" + candidate_key(variant.name(), params));
      const double ms = 1.0 + std::abs(params.at("x").get<int>() - 7) / 10.0;
      return timed({ms * 0.99, ms, ms * 1.01});
    };
  }

 private:
  std::shared_ptr<double> now_ = std::make_shared<double>(1000.0);
};

ParamSpace thirty_points(const Problem&) {
  std::vector<json> values;
  for (int x = 1; x <= 30; ++x) values.push_back(x);
  ParamSpace space;
  space.axes.push_back({"x", values, ""});
  return space;
}

const DeviceKey kTestDevice{"Test GPU", "9.0", 132, "580.1"};

class TunerResume : public ::testing::Test {
 protected:
  TuneOutcome tune(const std::string& cache_name, const Evaluator& evaluate, std::ostream* progress = nullptr) {
    TuneCache cache(dir_.file(cache_name), nullptr);
    auto strategy = make_strategy("random", space_, 3);
    TuneOptions options;
    options.budget.seconds = 10.5;
    options.clock = lab_.clock();
    options.progress = progress;
    options.cache = &cache;
    options.device = kTestDevice;
    return run_tune(space_, kTable1, *strategy, evaluate, options);
  }

  TempDir dir_;
  FakeLab lab_;
  FakeVariant variant_{"v", thirty_points};
  SearchSpace space_ = SearchSpace::build({&variant_}, kTable1, DeviceInfo{});
};

TEST_F(TunerResume, KilledTuneMeasuresWhatAnUninterruptedOneWouldHave) {
  std::vector<std::string> reference;
  tune("reference.jsonl", lab_.evaluator(&reference));
  ASSERT_EQ(reference.size(), 11u);  // started at 0, 1, …, 10 s of the 10.5 s
  std::vector<std::string> before_kill, after_kill;
  EXPECT_THROW(tune("cache.jsonl", lab_.evaluator(&before_kill, 5)), Killed);
  ASSERT_EQ(before_kill.size(), 4u);
  const TuneOutcome resumed = tune("cache.jsonl", lab_.evaluator(&after_kill));
  EXPECT_EQ(resumed.cached_evals, 4u);
  EXPECT_DOUBLE_EQ(resumed.cached_seconds, 4.0);
  EXPECT_EQ(after_kill.size(), 7u);  // 11 in all, as without the kill
  EXPECT_DOUBLE_EQ(resumed.charged_seconds(), 11.0);
  for (const auto& key : after_kill)
    EXPECT_EQ(std::count(before_kill.begin(), before_kill.end(), key), 0) << "measured twice: " << key;
  std::set<std::string> together(before_kill.begin(), before_kill.end());
  together.insert(after_kill.begin(), after_kill.end());
  EXPECT_EQ(together, std::set<std::string>(reference.begin(), reference.end()));
}

TEST_F(TunerResume, RerunningAFinishedTuneMeasuresNothing) {
  std::vector<std::string> first, second;
  const TuneOutcome finished = tune("cache.jsonl", lab_.evaluator(&first));
  const TuneOutcome again = tune("cache.jsonl", lab_.evaluator(&second));
  EXPECT_TRUE(second.empty());
  EXPECT_EQ(again.cached_evals, first.size());
  EXPECT_EQ(again.stop_reason, "time budget spent");
  EXPECT_EQ(again.best()->candidate.key(), finished.best()->candidate.key());
}

TEST_F(TunerResume, ShapeStartSaysHowMuchBudgetTheCacheAccountsFor) {
  std::vector<std::string> measured;
  EXPECT_THROW(tune("cache.jsonl", lab_.evaluator(&measured, 5)), Killed);
  std::ostringstream progress;
  tune("cache.jsonl", lab_.evaluator(&measured), &progress);
  const std::string first_line = progress.str().substr(0, progress.str().find('\n'));
  EXPECT_EQ(first_line, "cache already accounts for 4s of the 10.5s budget (4 measured points of this shape, "
                        "charged as they are reused)");
}

TEST_F(TunerResume, RecordsWithoutEvalSecondsChargeNothing) {
  CacheRecord old = sample_record("v", 0, 1.0);
  old.device = kTestDevice;
  old.params = {{"x", 1}};  // the default point, so the tune certainly reuses it
  json line = record_to_json(old);
  line.erase("eval_seconds");  // as written before the field existed
  std::ofstream(dir_.file("old.jsonl")) << line.dump() << "\n";
  std::vector<std::string> measured;
  const TuneOutcome resumed = tune("old.jsonl", lab_.evaluator(&measured));
  EXPECT_EQ(resumed.cached_evals, 1u);
  EXPECT_DOUBLE_EQ(resumed.cached_seconds, 0.0);
  EXPECT_EQ(measured.size(), 11u);  // the whole 10.5 s still to spend
}

TEST(TunerResumeSuite, ResumedSuiteIsChargedForWhatTheCacheAlreadyMeasured) {
  TempDir dir;
  FakeLab lab;
  FakeVariant variant("v", thirty_points);
  // Two buckets (n<=8 and n<=4): 5 s each of the 10 s, five measurements each.
  const std::vector<Problem> problems = {kTable1, shape(4, 3, 5, int64_t(32) << 20)};
  auto suite = [&](const std::string& cache_name, const Evaluator& evaluate) {
    TuneCache cache(dir.file(cache_name), nullptr);
    std::vector<ShapeJob> jobs;
    for (const Problem& problem : problems)
      jobs.push_back({problem, [&variant, problem] { return SearchSpace::build({&variant}, problem, DeviceInfo{}); },
                      [evaluate] { return evaluate; }});
    ShapesOptions options;
    options.strategy = "random";
    options.seed = 3;
    options.budget.seconds = 10;
    options.clock = lab.clock();
    options.cache = &cache;
    options.device = kTestDevice;
    return tune_shapes(jobs, options);
  };
  std::vector<std::string> reference;
  suite("reference.jsonl", lab.evaluator(&reference));
  ASSERT_EQ(reference.size(), 10u);
  std::vector<std::string> before_kill, after_kill;
  EXPECT_THROW(suite("cache.jsonl", lab.evaluator(&before_kill, 8)), Killed);  // in the second shape
  ASSERT_EQ(before_kill.size(), 7u);
  const auto resumed = suite("cache.jsonl", lab.evaluator(&after_kill));
  EXPECT_EQ(after_kill.size(), 3u);
  double charged = 0;
  for (const auto& shape : resumed) charged += shape.outcome.charged_seconds();
  EXPECT_DOUBLE_EQ(charged, 10.0);
  std::set<std::string> together(before_kill.begin(), before_kill.end());
  together.insert(after_kill.begin(), after_kill.end());
  EXPECT_EQ(together, std::set<std::string>(reference.begin(), reference.end()));
}

}  // namespace
}  // namespace mk::tuner
