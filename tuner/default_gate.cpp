#include "tuner/default_gate.hpp"

#include <cstdio>

#include "harness/format.hpp"
#include "reports/stats.hpp"

namespace mk::tuner {
namespace {

std::string percent(double fraction) { return formatted("%.1f%%", fraction * 100); }

std::string p_text(double p) { return formatted("p=%.2g", p); }

}  // namespace

GateVerdict judge_against_default(const Evaluation& winner, const std::optional<Evaluation>& variant_default,
                                  bool has_default, const DefaultGate& gate) {
  const std::string variant = winner.candidate.variant ? winner.candidate.variant->name() : "?";
  GateVerdict verdict{winner, false, false, ""};
  if (!has_default) {
    verdict.reason = "tuned: " + variant + " has no default point in the search space";
    return verdict;
  }
  if (!variant_default) {
    verdict.reason = "tuned: the default of " + variant + " was not measured";
    return verdict;
  }
  if (!variant_default->measurement.ok) {
    verdict.reason = "tuned: the default of " + variant + " failed (" + variant_default->measurement.reason + ")";
    return verdict;
  }
  if (variant_default->candidate.key() == winner.candidate.key()) {
    verdict.is_default = true;
    verdict.reason = "default: no faster point of " + variant + " measured";
    return verdict;
  }

  const double default_ms = variant_default->measurement.median_ms;
  const double gain = 1.0 - winner.measurement.median_ms / default_ms;
  auto keep_default = [&](const std::string& why) {
    verdict.chosen = *variant_default;
    verdict.is_default = true;
    verdict.default_kept = true;
    verdict.reason = "default: winner " + percent(gain) + " faster, " + why;
    return verdict;
  };
  if (winner.measurement.samples_ms.empty() || variant_default->measurement.samples_ms.empty())
    return keep_default("no timing samples to test");
  const double p = reports::mann_whitney_u(winner.measurement.samples_ms, variant_default->measurement.samples_ms).p_value;
  if (!(p < gate.alpha)) return keep_default("not significant (" + p_text(p) + ")");
  if (gain < gate.min_gain) return keep_default("less than " + percent(gate.min_gain) + " (" + p_text(p) + ")");
  verdict.reason = "tuned: " + percent(gain) + " faster than default, " + p_text(p);
  return verdict;
}

ConfigChoice choice_of(const Evaluation& evaluation, const Problem& problem, bool is_default) {
  ConfigChoice choice;
  choice.variant = evaluation.candidate.variant->name();
  choice.params = evaluation.candidate.params;
  choice.median_ms = evaluation.measurement.median_ms;
  choice.gops = gops_of(problem, evaluation.measurement.median_ms);
  choice.samples = evaluation.measurement.samples_ms.size();
  choice.is_default = is_default;
  return choice;
}

std::optional<ConfigPick> pick_for_config(const TuneOutcome& outcome, const Problem& problem,
                                          const DefaultGate& gate) {
  auto judge = [&](const Evaluation& winner) {
    const std::string variant = winner.candidate.variant->name();
    return judge_against_default(winner, outcome.default_of(variant), outcome.default_keys.count(variant) > 0, gate);
  };
  const auto fastest = outcome.best();
  if (!fastest) return std::nullopt;
  const GateVerdict best = judge(*fastest);
  ConfigPick pick;
  pick.best = choice_of(best.chosen, problem, best.is_default);
  pick.chosen = best.reason;
  if (best.default_kept) {
    pick.runner_up = choice_of(*fastest, problem, false);
    return pick;
  }
  const auto second = outcome.runner_up();
  if (!second) return pick;
  if (second->candidate.variant == fastest->candidate.variant) {
    pick.runner_up = choice_of(*second, problem, outcome.is_default(second->candidate));
    return pick;
  }
  const GateVerdict runner_up = judge(*second);
  pick.runner_up = choice_of(runner_up.chosen, problem, runner_up.is_default);
  pick.runner_up_chosen = runner_up.reason;
  return pick;
}

}  // namespace mk::tuner
