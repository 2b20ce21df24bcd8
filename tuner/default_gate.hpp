#pragma once
// What the tuned config records must never make `mkbench run` slower than the variants'
// hand-picked defaults. A measured winner that is not its variant's default replaces that
// default only with evidence: the two-sided Mann-Whitney U test of the perf gate
// (reports/stats.hpp) on the timing samples, and a median clearly below the default's.
// Otherwise the default is recorded, so timing noise cannot choose the config.
#include <optional>
#include <string>

#include "core/problem.hpp"
#include "tuner/config.hpp"
#include "tuner/strategy.hpp"
#include "tuner/tune_loop.hpp"

namespace mk::tuner {

struct DefaultGate {
  double alpha = 0.05;     // p-value below which the samples are taken to differ
  double min_gain = 0.02;  // the winner's median must be at least this fraction lower
};

struct GateVerdict {
  Evaluation chosen;          // the winner, or its variant's default
  bool is_default = false;    // `chosen` is the variant's default point
  bool default_kept = false;  // the default replaced a winner that lacked the evidence
  // "tuned: 7.5% faster than default, p=0.0002",
  // "default: winner 1.2% faster, not significant (p=0.31)", ...
  std::string reason;
};

// `variant_default`: the visit of the default point of `winner`'s variant, if there was
// one; `has_default`: whether that variant has a default point in the space at all. With
// no usable default measurement the winner stands, as before there was a gate.
GateVerdict judge_against_default(const Evaluation& winner, const std::optional<Evaluation>& variant_default,
                                  bool has_default, const DefaultGate& gate = {});

ConfigChoice choice_of(const Evaluation& evaluation, const Problem& problem, bool is_default);

struct ConfigPick {
  ConfigChoice best;
  std::optional<ConfigChoice> runner_up;
  std::string chosen;            // GateVerdict::reason of the best
  std::string runner_up_chosen;  // the same for a runner-up of another variant, else empty
};

// What the config records for one tuned shape; nullopt when no point was measured ok.
// The best is the fastest point judged against its variant's default. When the default
// is kept, the runner-up is the winner it displaced; otherwise it is the next fastest
// point, judged against its own variant's default when it belongs to another variant
// (`mkbench run` uses it for that variant).
std::optional<ConfigPick> pick_for_config(const TuneOutcome& outcome, const Problem& problem,
                                          const DefaultGate& gate = {});

}  // namespace mk::tuner
