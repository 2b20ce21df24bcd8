// The tuner's strategies without a GPU: exhaustive, random and annealing runs over the recorded
// (fabricated, labelled) table1-like fixture through the replay evaluator, their budgets, the
// defaults measured first, and the gate that keeps a default against a winner within the noise.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tuner/budget.hpp"
#include "tuner/default_gate.hpp"
#include "tuner/replay.hpp"
#include "tuner/strategy.hpp"

#include "tests/tuner_fixtures.hpp"

namespace mk::tuner {
namespace {

using namespace fixtures;

TuneOutcome tune_with(const std::string& strategy_name, const SearchSpace& space, const Evaluator& evaluate,
                      const Problem& problem, Budget budget, uint64_t seed) {
  auto strategy = make_strategy(strategy_name, space, seed);
  TuneOptions options;
  options.budget = budget;
  return run_tune(space, problem, *strategy, evaluate, options);
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

// --------------------------------------------------------------------- defaults first

ParamSpace eight_points(const Problem&) {
  ParamSpace space;
  space.axes.push_back({"x", {1, 2, 3, 4, 5, 6, 7, 8}, ""});
  return space;
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

// ------------------------------------------------------------- winners vs defaults

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

}  // namespace
}  // namespace mk::tuner
