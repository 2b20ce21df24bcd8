// The autotuner without a GPU: strategies run over a recorded (fabricated, labelled)
// table1-like space through the replay evaluator; budgets, the crash-safe cache, buckets,
// the config file and the `mkbench run` hook are checked against hand-computed answers.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/errors.hpp"
#include "variants/tuned_params.hpp"
#include "tuner/budget.hpp"
#include "tuner/buckets.hpp"
#include "tuner/cache.hpp"
#include "tuner/config.hpp"
#include "tuner/default_gate.hpp"
#include "tuner/replay.hpp"
#include "tuner/search_space.hpp"
#include "tuner/strategy.hpp"
#include "tuner/tune_loop.hpp"
#include "tuner/tune_shapes.hpp"

namespace mk::tuner {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kFixture = std::string(MKBENCH_TEST_DATA) + "/tune_cache_table1_fixture.jsonl";

Problem shape(int n, int kmin, int kmax, int64_t m) {
  Problem problem;
  problem.n = n;
  problem.k.kmin = kmin;
  problem.k.kmax = kmax;
  problem.m = m;
  return problem;
}

const Problem kTable1 = shape(8, 3, 7, int64_t(32) << 20);

// A fresh folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("mkbench_tuner_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

class FakeVariant : public Variant {
 public:
  FakeVariant(std::string name, std::function<ParamSpace(const Problem&)> space,
              std::optional<std::string> refusal = std::nullopt)
      : name_(std::move(name)), space_(std::move(space)), refusal_(std::move(refusal)) {}
  std::string name() const override { return name_; }
  std::string description() const override { return "test stand-in"; }
  bool runs_on_gpu() const override { return false; }
  std::optional<std::string> can_implement(const Problem&, const DeviceInfo&) const override { return refusal_; }
  ParamSpace param_space(const Problem& problem, const DeviceInfo&) const override { return space_(problem); }
  // The first point of the space unless a test gives its own heuristic.
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    return default_ ? default_(problem) : param_space(problem, device).enumerate().front();
  }
  void set_default(std::function<Params(const Problem&)> heuristic) { default_ = std::move(heuristic); }
  void set_default(const Params& params) {
    default_ = [params](const Problem&) { return params; };
  }
  std::unique_ptr<PreparedRun> prepare(const Problem&, const Dataset&, const Params&,
                                       const DeviceInfo&) const override {
    throw UnsupportedError("test stand-in cannot run");
  }

 private:
  std::string name_;
  std::function<ParamSpace(const Problem&)> space_;
  std::optional<std::string> refusal_;
  std::function<Params(const Problem&)> default_;
};

// Independent of the tuner's loader: the recorded optimum read straight from the file.
double recorded_optimum_ms(const Problem& problem) {
  std::ifstream in(kFixture);
  std::string line;
  double best = 1e300;
  while (std::getline(in, line)) {
    const json row = json::parse(line);
    if (row.contains("schema") || !row.at("ok").get<bool>()) continue;
    const json& p = row.at("problem");
    if (p.at("n") != problem.n || p.at("k_min") != problem.k.kmin || p.at("k_max") != problem.k.kmax ||
        p.at("m") != problem.m)
      continue;
    best = std::min(best, row.at("median_ms").get<double>());
  }
  return best;
}

Evaluator counting(Evaluator inner, std::vector<std::string>* calls) {
  return [inner, calls](const Variant& variant, const Params& params, const Problem& problem) {
    calls->push_back(candidate_key(variant.name(), params));
    return inner(variant, params, problem);
  };
}

TuneOutcome tune_with(const std::string& strategy_name, const SearchSpace& space, const Evaluator& evaluate,
                      const Problem& problem, Budget budget, uint64_t seed) {
  auto strategy = make_strategy(strategy_name, space, seed);
  TuneOptions options;
  options.budget = budget;
  return run_tune(space, problem, *strategy, evaluate, options);
}

Budget evals(int64_t count) {
  Budget budget;
  budget.max_evals = count;
  return budget;
}

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

ParamSpace two_axis_space() {
  ParamSpace space;
  space.axes.push_back({"x", {8, 1, 4, 2}, ""});  // declared out of numeric order on purpose
  space.axes.push_back({"y", {"a", "b"}, ""});
  space.restrictions.push_back({"not x=4 with y=a", [](const Params& p) { return !(p.at("x") == 4 && p.at("y") == "a"); }});
  return space;
}

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

// ------------------------------------------------------------------------- strategies

TEST(TunerStrategies, ExhaustiveFindsTheRecordedOptimumExactly) {
  const ReplayTable table = ReplayTable::load(kFixture, nullptr);
  for (const Problem& problem : table.problems()) {
    const SearchSpace space = table.space_for(problem);
    const TuneOutcome outcome = tune_with("exhaustive", space, table.evaluator(), problem, Budget{}, 1);
    ASSERT_TRUE(outcome.best());
    EXPECT_DOUBLE_EQ(outcome.best()->measurement.median_ms, recorded_optimum_ms(problem));
    EXPECT_EQ(outcome.new_evals, space.size());
    EXPECT_EQ(outcome.stop_reason, "space exhausted");
    ASSERT_TRUE(outcome.runner_up());
    EXPECT_GE(outcome.runner_up()->measurement.median_ms, outcome.best()->measurement.median_ms);
    EXPECT_NE(outcome.runner_up()->candidate.key(), outcome.best()->candidate.key());
  }
}

class TunerSampledStrategies : public ::testing::TestWithParam<std::string> {};

TEST_P(TunerSampledStrategies, ReachWithinFivePercentOnFortyPercentBudget) {
  const ReplayTable table = ReplayTable::load(kFixture, nullptr);
  for (const Problem& problem : table.problems()) {
    const SearchSpace space = table.space_for(problem);
    const double optimum = recorded_optimum_ms(problem);
    const int64_t budget = int64_t(space.size() * 4 / 10);
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      const TuneOutcome outcome = tune_with(GetParam(), space, table.evaluator(), problem, evals(budget), seed);
      ASSERT_TRUE(outcome.best());
      EXPECT_LE(outcome.best()->measurement.median_ms, optimum * 1.05)
          << GetParam() << " seed " << seed << " on " << problem.str();
      EXPECT_EQ(outcome.new_evals, size_t(budget));
    }
  }
}

TEST_P(TunerSampledStrategies, VisitEveryPointOnceWithoutBudget) {
  const ReplayTable table = ReplayTable::load(kFixture, nullptr);
  const SearchSpace space = table.space_for(kTable1);
  const TuneOutcome outcome = tune_with(GetParam(), space, table.evaluator(), kTable1, Budget{}, 3);
  std::set<std::string> keys;
  for (const auto& evaluation : outcome.history) keys.insert(evaluation.candidate.key());
  EXPECT_EQ(outcome.history.size(), space.size());
  EXPECT_EQ(keys.size(), space.size());
  EXPECT_EQ(outcome.stop_reason, "space exhausted");
}

TEST_P(TunerSampledStrategies, SameSeedSameVisitOrder) {
  const ReplayTable table = ReplayTable::load(kFixture, nullptr);
  const SearchSpace space = table.space_for(kTable1);
  const TuneOutcome a = tune_with(GetParam(), space, table.evaluator(), kTable1, evals(30), 11);
  const TuneOutcome b = tune_with(GetParam(), space, table.evaluator(), kTable1, evals(30), 11);
  ASSERT_EQ(a.history.size(), b.history.size());
  for (size_t i = 0; i < a.history.size(); ++i) EXPECT_EQ(a.history[i].candidate.key(), b.history[i].candidate.key());
}

INSTANTIATE_TEST_SUITE_P(Tuner, TunerSampledStrategies, ::testing::Values("random", "anneal"));

TEST(TunerStrategies, UnknownStrategyIsAnInputError) {
  EXPECT_THROW(make_strategy("genetic", SearchSpace{}, 1), InputError);
}

// ---------------------------------------------------------------------------- budgets

TEST(TunerBudget, MaxEvalsIsNeverExceeded) {
  const ReplayTable table = ReplayTable::load(kFixture, nullptr);
  const SearchSpace space = table.space_for(kTable1);
  for (const std::string& name : strategy_names())
    for (int64_t limit : {1, 7, 40}) {
      std::vector<std::string> calls;
      std::ostringstream progress;
      auto strategy = make_strategy(name, space, 5);
      TuneOptions options;
      options.budget = evals(limit);
      options.progress = &progress;
      const TuneOutcome outcome = run_tune(space, kTable1, *strategy, counting(table.evaluator(), &calls), options);
      EXPECT_EQ(calls.size(), size_t(limit)) << name;
      EXPECT_EQ(outcome.new_evals, size_t(limit)) << name;
      EXPECT_EQ(outcome.stop_reason, "max evals reached");
      // One progress line per evaluation, plus best-so-far lines.
      std::istringstream lines(progress.str());
      std::string line;
      size_t evaluation_lines = 0, best_lines = 0;
      while (std::getline(lines, line)) (line.find("best so far") == 0 ? best_lines : evaluation_lines)++;
      EXPECT_EQ(evaluation_lines, size_t(limit)) << name;
      EXPECT_GE(best_lines, 1u);
    }
}

TEST(TunerBudget, TimeBudgetStopsBeforeStartingPastTheLimit) {
  const ReplayTable table = ReplayTable::load(kFixture, nullptr);
  const SearchSpace space = table.space_for(kTable1);
  auto now = std::make_shared<double>(100.0);
  const Evaluator replay = table.evaluator();
  // Every measurement takes one second of fake time.
  Evaluator slow = [now, replay](const Variant& v, const Params& p, const Problem& problem) {
    *now += 1.0;
    return replay(v, p, problem);
  };
  auto strategy = make_strategy("random", space, 1);
  TuneOptions options;
  options.budget.seconds = 10.5;
  options.clock = [now] { return *now; };
  const TuneOutcome outcome = run_tune(space, kTable1, *strategy, slow, options);
  // Evaluations start at t = 0, 1, …, 10 (all < 10.5); the one at t = 11 is not started.
  EXPECT_EQ(outcome.new_evals, 11u);
  EXPECT_DOUBLE_EQ(outcome.seconds, 11.0);
  EXPECT_EQ(outcome.stop_reason, "time budget spent");
}

TEST(TunerBudget, DurationsParseWithUnitsOnly) {
  EXPECT_DOUBLE_EQ(parse_duration_seconds("90s"), 90);
  EXPECT_DOUBLE_EQ(parse_duration_seconds("5m"), 300);
  EXPECT_DOUBLE_EQ(parse_duration_seconds("1.5h"), 5400);
  EXPECT_DOUBLE_EQ(parse_duration_seconds("1h30m"), 5400);
  for (const char* bad : {"", "10", "5x", "-5m", "0s", "m"})
    EXPECT_THROW(parse_duration_seconds(bad), InputError) << bad;
}

TEST(TunerBudget, SharesSplitEvenlyAndUseEverything) {
  Budget remaining;
  remaining.max_evals = 10;
  remaining.seconds = 90;
  std::vector<int64_t> given;
  double weight_left = 1.0;
  for (int i = 0; i < 3; ++i) {
    const Budget share = share_of(remaining, 1.0 / 3, weight_left);
    weight_left -= 1.0 / 3;
    EXPECT_NEAR(*share.seconds, 30.0, 1e-9);
    given.push_back(*share.max_evals);
    *remaining.max_evals -= *share.max_evals;
    *remaining.seconds -= *share.seconds;
  }
  EXPECT_EQ(given, (std::vector<int64_t>{3, 3, 4}));
}

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

// ----------------------------------------------------------------------------- config

ConfigEntry entry_for(const Problem& problem, const std::string& best_variant, Params best,
                      std::optional<std::pair<std::string, Params>> runner_up = std::nullopt) {
  ConfigEntry entry;
  entry.bucket = Bucket::of(problem);
  entry.problem = problem;
  entry.best = ConfigChoice{best_variant, std::move(best), 0.45, gops_of(problem, 0.45), 10};
  if (runner_up) entry.runner_up = ConfigChoice{runner_up->first, runner_up->second, 0.47, gops_of(problem, 0.47), 10};
  entry.evals_new = 60;
  entry.evals_cached = 4;
  entry.space_size = 160;
  entry.strategy = "anneal";
  entry.seed = 9;
  entry.budget = "60 evals";
  entry.stop_reason = "max evals reached";
  entry.date = "2026-01-02T03:04:05Z";
  entry.device = "Test GPU";
  return entry;
}

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

// ------------------------------------------------------------- the real evaluator

TEST(TunerHarnessEvaluator, MeasuresTheCpuBaselineThroughTheHarness) {
  const Variant* cpu = Registry::instance().find("cpu-openmp");
  if (!cpu) GTEST_SKIP() << "cpu-openmp is not registered in this build";
  const DeviceInfo host = query_host_cpu();
  const Problem problem = shape(4, 3, 5, 4096);
  HarnessEvaluatorOptions options;
  options.samples = 5;
  options.warmup = 1;
  options.verify_first = true;
  const Evaluator evaluate = make_harness_evaluator(host, options);
  const Measurement measurement = evaluate(*cpu, cpu->default_params(problem, host), problem);
  ASSERT_TRUE(measurement.ok) << measurement.reason;
  ASSERT_EQ(measurement.samples_ms.size(), 5u);
  std::vector<double> sorted = measurement.samples_ms;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_DOUBLE_EQ(measurement.median_ms, sorted[2]);
  EXPECT_GT(measurement.median_ms, 0);
}

// ------------------------------------------------------------------ the tune command

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

CommandResult run_mkbench(const std::string& arguments) {
  const std::string command = std::string(MKBENCH_BINARY) + " " + arguments + " 2>&1";
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, got);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST(TunerCommand, ReplayCompareReportsEveryStrategy) {
  const CommandResult result = run_mkbench("tune --replay " + kFixture + " --compare --max-evals 64 --repeats 3");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const char* name : {"exhaustive\t1\t", "random\t3\t", "anneal\t3\t"})
    EXPECT_NE(result.output.find(name), std::string::npos) << name << "\n" << result.output;
  EXPECT_NE(result.output.find("160 recorded points"), std::string::npos) << result.output;
}

TEST(TunerCommand, ReplayCompareOnAPinnedSubspace) {
  const CommandResult result =
      run_mkbench("tune --replay " + kFixture + " --dims 8 --k 3..7 --points 32M --variants registers-multik" +
                  " --fix block=256 --fix layout=aos --compare --max-evals 10 --repeats 3");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // 25 registers-multik points at block 256, AoS; naive-atomics (also recorded) is left out.
  EXPECT_NE(result.output.find("25 recorded points"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("block=256"), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find("block=128"), std::string::npos) << result.output;
}

TEST(TunerCommand, ReplayTuneWritesAConfigWithOneEntryPerShape) {
  TempDir dir;
  const std::string out = dir.file("replayed.json");
  const CommandResult result =
      run_mkbench("tune --replay " + kFixture + " --strategy exhaustive --config-out " + out);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const TunedConfig config = load_config(out);
  ASSERT_EQ(config.entries.size(), 2u);
  for (const auto& entry : config.entries) {
    EXPECT_DOUBLE_EQ(entry.best.median_ms, recorded_optimum_ms(entry.problem));
    EXPECT_EQ(entry.evals_new, 160u);
    EXPECT_EQ(entry.strategy, "exhaustive");
  }
}

TEST(TunerCommand, BadArgumentsExitWithInputError) {
  EXPECT_EQ(run_mkbench("tune --replay " + kFixture + " --budget 10").exit_code, kExitBadInput);
  EXPECT_EQ(run_mkbench("tune --replay " + kFixture + " --strategy genetic").exit_code, kExitBadInput);
  EXPECT_EQ(run_mkbench("tune --replay /nonexistent/cache.jsonl").exit_code, kExitBadInput);
  EXPECT_EQ(run_mkbench("tune --dims 8 --k 3..7").exit_code, kExitBadInput);
  EXPECT_EQ(run_mkbench("tune --replay " + kFixture + " --fix block").exit_code, kExitBadInput);
  EXPECT_EQ(run_mkbench("tune --replay " + kFixture + " --fix block=300 --compare").exit_code, kExitBadInput);
}

// `mkbench run` rows record the tuned entry that chose their params, as suite rows do (the
// README's promise; before, the entry only went to stderr). The reference is the config written
// here: its params must be the row's, and --no-tuned must leave both out.
TEST(TunerCommand, RunRecordsTheTunedConfigInItsRow) {
  TempDir dir;
  const Problem problem = shape(2, 3, 3, 1000);
  const Params tuned{{"threads", 1}, {"schedule_chunk", 1024}};
  TunedConfig config;
  config.merge(entry_for(problem, "cpu-openmp", tuned));
  // `run` looks the config up under the device it measures on: the host CPU, or GPU 0 when there is one.
  std::set<std::string> slugs{query_host_cpu().slug()};
  if (gpu_count() > 0) slugs.insert(query_device(0).slug());
  for (const auto& slug : slugs) save_config_atomically(dir.file(slug + ".json"), config);
  const std::string env = "MKBENCH_CONFIG_DIR='" + dir.path().string() + "' ";
  const std::string run = "run --variant cpu-openmp --dims 2 --k 3 --points 1000 --iters 2 --warmup 0 --no-peak-measure ";
  const auto row_of = [](const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in).at("rows").at(0);
  };

  const std::string command = std::string(MKBENCH_BINARY) + " " + run + "--out " + dir.file("tuned.json") + " 2>&1";
  ASSERT_EQ(std::system((env + command + " >/dev/null").c_str()), 0) << command;
  const auto row = row_of(dir.file("tuned.json"));
  ASSERT_TRUE(row.contains("tuned_config")) << row.dump(2);
  EXPECT_NE(row.at("tuned_config").get<std::string>().find(".json bucket "), std::string::npos) << row.dump(2);
  EXPECT_EQ(row.at("params").at("threads"), 1);
  EXPECT_EQ(row.at("params").at("schedule_chunk"), 1024);

  const std::string plain = std::string(MKBENCH_BINARY) + " " + run + "--no-tuned --out " + dir.file("plain.json");
  ASSERT_EQ(std::system((env + plain + " >/dev/null 2>&1").c_str()), 0) << plain;
  EXPECT_FALSE(row_of(dir.file("plain.json")).contains("tuned_config"));
}


// --------------------------------------------------------------------- defaults first

ParamSpace eight_points(const Problem&) {
  ParamSpace space;
  space.axes.push_back({"x", {1, 2, 3, 4, 5, 6, 7, 8}, ""});
  return space;
}

Measurement timed(std::vector<double> samples) {
  Measurement measurement;
  measurement.median_ms = median_of(samples);
  measurement.samples_ms = std::move(samples);
  measurement.ok = true;
  return measurement;
}

// Smooth in x so that the annealing walk has somewhere to go.
Measurement by_x(const Variant&, const Params& params, const Problem&) {
  const double ms = 1.0 + 0.01 * params.at("x").get<double>();
  return timed({ms * 0.99, ms, ms * 1.01});
}

TEST(TunerDefaults, EveryStrategyMeasuresTheDefaultsFirst) {
  FakeVariant a("a", eight_points);
  a.set_default(Params{{"x", 6}});
  FakeVariant b("b", [](const Problem&) { return two_axis_space(); });
  b.set_default(Params{{"x", 2}, {"y", "b"}});  // the last point in enumeration order
  const SearchSpace space = SearchSpace::build({&a, &b}, kTable1, DeviceInfo{});
  const std::string a_default = candidate_key("a", {{"x", 6}});
  const std::string b_default = candidate_key("b", {{"x", 2}, {"y", "b"}});
  for (const std::string& name : strategy_names())
    for (uint64_t seed : {1, 2, 3}) {
      const TuneOutcome outcome = tune_with(name, space, by_x, kTable1, evals(6), seed);
      ASSERT_GE(outcome.history.size(), 2u);
      EXPECT_EQ(outcome.history[0].candidate.key(), a_default) << name << " seed " << seed;
      EXPECT_EQ(outcome.history[1].candidate.key(), b_default) << name << " seed " << seed;
    }
}

TEST(TunerDefaults, DefaultsCountTowardMaxEvals) {
  FakeVariant a("a", eight_points);
  a.set_default(Params{{"x", 6}});
  FakeVariant b("b", eight_points);
  b.set_default(Params{{"x", 3}});
  const SearchSpace space = SearchSpace::build({&a, &b}, kTable1, DeviceInfo{});
  std::vector<std::string> calls;
  const TuneOutcome outcome = tune_with("random", space, counting(by_x, &calls), kTable1, evals(1), 4);
  EXPECT_EQ(calls, (std::vector<std::string>{candidate_key("a", {{"x", 6}})}));
  EXPECT_EQ(outcome.stop_reason, "max evals reached");
}

TEST(TunerDefaults, DefaultOutsideTheSpaceIsNotProposed) {
  FakeVariant a("a", eight_points);
  a.set_default(Params{{"x", 9}});
  const SearchSpace space = SearchSpace::build({&a}, kTable1, DeviceInfo{});
  EXPECT_TRUE(space.default_indices().empty());
  EXPECT_EQ(space.default_notes(), (std::vector<std::string>{"a: default x=9 is not a point of the search space"}));
  const TuneOutcome outcome = tune_with("exhaustive", space, by_x, kTable1, evals(1), 1);
  ASSERT_EQ(outcome.history.size(), 1u);
  EXPECT_EQ(outcome.history[0].candidate.key(), candidate_key("a", {{"x", 1}}));  // enumeration order
}

// A recording device as an H100 reports itself.
DeviceInfo recording_device() {
  DeviceInfo device;
  device.is_gpu = true;
  device.name = "FIXTURE replay GPU";
  device.cc_major = 9;
  device.sm_count = 132;
  device.driver = "fixture";
  device.global_mem_bytes = int64_t(80) << 30;
  device.l2_bytes = int64_t(50) << 20;
  device.smem_per_block_optin = 232448;
  device.smem_per_sm = 233472;
  device.regs_per_sm = 65536;
  device.max_threads_per_sm = 2048;
  return device;
}

// One record per point of a registered variant's space on `device`, the first point
// fastest; device limits only when asked for (older caches have none).
std::vector<CacheRecord> recorded_space(const std::string& variant_name, const DeviceInfo& device,
                                        bool with_limits) {
  const Variant& variant = Registry::instance().get(variant_name);
  std::vector<CacheRecord> records;
  double ms = 1.0;
  for (const Params& params : variant.param_space(kTable1, device).enumerate()) {
    CacheRecord record;
    record.device = DeviceKey::of(device);
    if (with_limits) record.device_limits = device_limits_of(device);
    record.variant = variant_name;
    record.params = params;
    record.problem = kTable1;
    record.bucket = Bucket::of(kTable1).label();
    record.measurement = timed({ms});
    ms += 0.01;
    records.push_back(record);
  }
  return records;
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

// ------------------------------------------------------------- winners vs defaults

// Ten samples around 1 ms that overlap heavily with any copy scaled by 1-2%.
const std::vector<double> kNoisy = {1.00, 0.95, 1.05, 0.97, 1.03, 0.99, 1.01, 0.96, 1.04, 1.02};

std::vector<double> scaled(std::vector<double> samples, double factor) {
  for (double& sample : samples) sample *= factor;
  return samples;
}

Evaluation evaluation_at(const Variant& variant, Params params, std::vector<double> samples) {
  return Evaluation{Candidate{&variant, std::move(params)}, timed(std::move(samples)), false};
}

TEST(TunerDefaultGate, SignificantlyFasterWinnerIsRecorded) {
  FakeVariant variant("v", eight_points);
  const Evaluation fallback = evaluation_at(variant, {{"x", 1}}, {1.00, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.08, 1.09});
  const Evaluation winner = evaluation_at(variant, {{"x", 2}}, {0.90, 0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99});
  const GateVerdict verdict = judge_against_default(winner, fallback, true);
  EXPECT_EQ(verdict.chosen.candidate.key(), winner.candidate.key());
  EXPECT_FALSE(verdict.default_kept);
  // Medians 0.945 and 1.045; disjoint samples of ten: z = 49.5/sqrt(175), p = 0.00018.
  EXPECT_EQ(verdict.reason, "tuned: 9.6% faster than default, p=0.00018");
}

TEST(TunerDefaultGate, WinnerWithinTheNoiseKeepsTheDefault) {
  FakeVariant variant("v", eight_points);
  const Evaluation fallback = evaluation_at(variant, {{"x", 1}}, kNoisy);
  const Evaluation winner = evaluation_at(variant, {{"x", 2}}, scaled(kNoisy, 0.988));
  const GateVerdict verdict = judge_against_default(winner, fallback, true);
  EXPECT_EQ(verdict.chosen.candidate.key(), fallback.candidate.key());
  EXPECT_TRUE(verdict.default_kept);
  EXPECT_EQ(verdict.reason.rfind("default: winner 1.2% faster, not significant (p=", 0), 0u) << verdict.reason;
}

TEST(TunerDefaultGate, SignificantGainBelowTwoPercentKeepsTheDefault) {
  FakeVariant variant("v", eight_points);
  const Evaluation fallback =
      evaluation_at(variant, {{"x", 1}}, {1.000, 1.001, 1.002, 1.003, 1.004, 1.005, 1.006, 1.007, 1.008, 1.009});
  const Evaluation winner =
      evaluation_at(variant, {{"x", 2}}, {0.990, 0.991, 0.992, 0.993, 0.994, 0.995, 0.996, 0.997, 0.998, 0.999});
  const GateVerdict verdict = judge_against_default(winner, fallback, true);
  EXPECT_EQ(verdict.chosen.candidate.key(), fallback.candidate.key());
  EXPECT_EQ(verdict.reason, "default: winner 1.0% faster, less than 2.0% (p=0.00018)");
}

TEST(TunerDefaultGate, WinnerStandsWhenTheVariantHasNoDefaultPoint) {
  FakeVariant variant("v", eight_points);
  const Evaluation winner = evaluation_at(variant, {{"x", 2}}, kNoisy);
  const GateVerdict verdict = judge_against_default(winner, std::nullopt, false);
  EXPECT_EQ(verdict.chosen.candidate.key(), winner.candidate.key());
  EXPECT_EQ(verdict.reason, "tuned: v has no default point in the search space");
}

TEST(TunerDefaultGate, WinnerStandsWhenTheDefaultFailed) {
  FakeVariant variant("v", eight_points);
  const Evaluation winner = evaluation_at(variant, {{"x", 2}}, kNoisy);
  const Evaluation failed{Candidate{&variant, {{"x", 1}}}, Measurement{{}, 0, false, "out of memory"}, false};
  const GateVerdict verdict = judge_against_default(winner, failed, true);
  EXPECT_EQ(verdict.chosen.candidate.key(), winner.candidate.key());
  EXPECT_EQ(verdict.reason, "tuned: the default of v failed (out of memory)");
}

// x=3 is 1.2% faster than the default x=6 (within the noise), the rest 50% slower.
Measurement noisy_optimum_at_3(const Variant&, const Params& params, const Problem&) {
  const int x = params.at("x").get<int>();
  return timed(scaled(kNoisy, x == 3 ? 0.988 : x == 6 ? 1.0 : 1.5));
}

TEST(TunerDefaultGate, ConfigKeepsTheDefaultAndMakesTheWinnerTheRunnerUp) {
  FakeVariant variant("v", eight_points);
  variant.set_default(Params{{"x", 6}});
  const SearchSpace space = SearchSpace::build({&variant}, kTable1, DeviceInfo{});
  const TuneOutcome outcome = tune_with("exhaustive", space, noisy_optimum_at_3, kTable1, Budget{}, 1);
  ASSERT_EQ(outcome.best()->candidate.params, (Params{{"x", 3}}));
  const auto pick = pick_for_config(outcome, kTable1);
  ASSERT_TRUE(pick);
  EXPECT_EQ(pick->best.params, (Params{{"x", 6}}));
  EXPECT_TRUE(pick->best.is_default);
  ASSERT_TRUE(pick->runner_up);
  EXPECT_EQ(pick->runner_up->params, (Params{{"x", 3}}));
  EXPECT_FALSE(pick->runner_up->is_default);
  EXPECT_EQ(pick->chosen.rfind("default: winner 1.2% faster, not significant", 0), 0u) << pick->chosen;
}

TEST(TunerDefaultGate, RunnerUpOfAnotherVariantIsJudgedAgainstItsOwnDefault) {
  FakeVariant a("a", eight_points), b("b", eight_points);
  a.set_default(Params{{"x", 6}});
  b.set_default(Params{{"x", 6}});
  // a: x=1 twice as fast as its default (disjoint samples). b: x=2 within the noise of
  // its default, and second fastest overall.
  Evaluator evaluate = [&](const Variant& variant, const Params& params, const Problem&) {
    const int x = params.at("x").get<int>();
    if (&variant == &a) return timed(scaled(kNoisy, x == 1 ? 0.5 : x == 6 ? 1.0 : 1.5));
    return timed(scaled(kNoisy, x == 2 ? 0.7 * 0.988 : x == 6 ? 0.7 : 1.5));
  };
  const SearchSpace space = SearchSpace::build({&a, &b}, kTable1, DeviceInfo{});
  const TuneOutcome outcome = tune_with("exhaustive", space, evaluate, kTable1, Budget{}, 1);
  ASSERT_EQ(outcome.runner_up()->candidate.key(), candidate_key("b", {{"x", 2}}));
  const auto pick = pick_for_config(outcome, kTable1);
  ASSERT_TRUE(pick && pick->runner_up);
  EXPECT_EQ(pick->best.params, (Params{{"x", 1}}));
  EXPECT_EQ(pick->runner_up->variant, "b");
  EXPECT_EQ(pick->runner_up->params, (Params{{"x", 6}}));
  EXPECT_TRUE(pick->runner_up->is_default);
  EXPECT_EQ(pick->runner_up_chosen.rfind("default: winner 1.2% faster", 0), 0u) << pick->runner_up_chosen;
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

// A naive-atomics table where one point is 1.2% faster than the default, within the noise.
TEST(TunerCommand, ReplayConfigKeepsTheDefaultWhenTheWinnerIsWithinTheNoise) {
  TempDir dir;
  const DeviceInfo device = recording_device();
  const Variant& naive = Registry::instance().get("naive-atomics");
  const Params fallback = naive.default_params(kTable1, device_info_of(DeviceKey::of(device), json()));
  std::optional<Params> winner;
  std::ofstream out(dir.file("table.jsonl"));
  for (CacheRecord record : recorded_space("naive-atomics", device, false)) {
    double factor = 1.5;
    if (record.params == fallback) {
      factor = 1.0;
    } else if (!winner) {
      winner = record.params;
      factor = 0.988;
    }
    record.measurement = timed(scaled(kNoisy, factor));
    out << record_to_json(record).dump() << "\n";
  }
  out.close();
  ASSERT_TRUE(winner);
  const CommandResult result = run_mkbench("tune --replay " + dir.file("table.jsonl") +
                                           " --strategy exhaustive --config-out " + dir.file("config.json"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const TunedConfig config = load_config(dir.file("config.json"));
  ASSERT_EQ(config.entries.size(), 1u);
  const ConfigEntry& entry = config.entries[0];
  EXPECT_EQ(entry.best.params, fallback);
  EXPECT_TRUE(entry.best.is_default);
  ASSERT_TRUE(entry.runner_up);
  EXPECT_EQ(entry.runner_up->params, *winner);
  EXPECT_EQ(entry.chosen.rfind("default: winner 1.2% faster, not significant", 0), 0u) << entry.chosen;
}

}  // namespace
}  // namespace mk::tuner
