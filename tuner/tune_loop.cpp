#include "tuner/tune_loop.hpp"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <unordered_set>

#include "core/errors.hpp"
#include "harness/format.hpp"
#include "harness/results.hpp"
#include "tuner/buckets.hpp"

namespace mk::tuner {
namespace {

std::string format_ms(double ms) { return formatted("%.4g ms", ms); }

std::string format_gops(double gops) { return formatted("%.1f Gops/s", gops); }

}  // namespace

std::optional<Evaluation> TuneOutcome::best() const {
  std::optional<Evaluation> best;
  for (const auto& evaluation : history)
    if (evaluation.measurement.ok && (!best || evaluation.measurement.median_ms < best->measurement.median_ms))
      best = evaluation;
  return best;
}

std::optional<Evaluation> TuneOutcome::runner_up() const {
  const auto winner = best();
  if (!winner) return std::nullopt;
  const std::string winner_key = winner->candidate.key();
  std::optional<Evaluation> second;
  for (const auto& evaluation : history)
    if (evaluation.measurement.ok && evaluation.candidate.key() != winner_key &&
        (!second || evaluation.measurement.median_ms < second->measurement.median_ms))
      second = evaluation;
  return second;
}

bool TuneOutcome::is_default(const Candidate& candidate) const {
  auto found = default_keys.find(candidate.variant ? candidate.variant->name() : std::string());
  return found != default_keys.end() && found->second == candidate.key();
}

std::optional<Evaluation> TuneOutcome::default_of(const std::string& variant) const {
  auto found = default_keys.find(variant);
  if (found == default_keys.end()) return std::nullopt;
  for (const auto& evaluation : history)
    if (evaluation.candidate.key() == found->second) return evaluation;
  return std::nullopt;
}

std::optional<size_t> TuneOutcome::visits_to_reach(double target_ms, double tolerance) const {
  for (size_t i = 0; i < history.size(); ++i)
    if (history[i].measurement.ok && history[i].measurement.median_ms <= target_ms * (1 + tolerance)) return i + 1;
  return std::nullopt;
}

TuneOutcome run_tune(const SearchSpace& space, const Problem& problem, Strategy& strategy,
                     const Evaluator& evaluate, const TuneOptions& options) {
  TuneOutcome outcome;
  outcome.space_size = space.size();
  outcome.strategy = strategy.name();
  for (size_t index : space.default_indices())
    outcome.default_keys[space.at(index).variant->name()] = space.at(index).key();
  const double start = options.clock();
  const std::string bucket = Bucket::of(problem).label();
  std::unordered_set<std::string> visited;
  std::optional<double> best_ms;
  const std::string total = options.budget.max_evals ? std::to_string(*options.budget.max_evals)
                                                     : std::to_string(space.size());
  auto say = [&](const std::string& line) {
    if (options.progress) *options.progress << options.progress_prefix << line << "\n" << std::flush;
  };
  auto cached_record = [&](const Candidate& candidate) -> const CacheRecord* {
    if (!options.cache) return nullptr;
    const CacheRecord* cached =
        options.cache->find(cache_key(options.device, candidate.variant->name(), problem, candidate.params));
    // Failed points are measured again: the failure may have been transient (memory
    // held by another process), and a refusal costs nothing to repeat.
    return cached && cached->measurement.ok ? cached : nullptr;
  };

  if (options.cache) {
    size_t cached_points = 0;
    double cached_seconds = 0;
    for (const Candidate& candidate : space.enumerate())
      if (const CacheRecord* cached = cached_record(candidate)) {
        ++cached_points;
        cached_seconds += cached->eval_seconds;
      }
    const std::string points = std::to_string(cached_points) + " measured points of this shape";
    if (options.budget.seconds)
      say("cache already accounts for " + format_duration(cached_seconds) + " of the " +
          format_duration(*options.budget.seconds) + " budget (" + points + ", charged as they are reused)");
    else
      say("cache already holds " + points + " (" + format_duration(cached_seconds) + " of measurement)");
  }

  size_t next_default = 0;
  auto propose = [&]() -> std::optional<Candidate> {
    // The defaults are what `mkbench run` uses untuned: measuring them first is what lets
    // the config keep a default that nothing beats, whatever the strategy and budget.
    while (next_default < space.default_indices().size()) {
      const Candidate& candidate = space.at(space.default_indices()[next_default++]);
      if (!visited.count(candidate.key())) return candidate;
    }
    return strategy.next(outcome.history);
  };

  while (true) {
    if (options.budget.max_evals && int64_t(outcome.new_evals) >= *options.budget.max_evals) {
      outcome.stop_reason = "max evals reached";
      break;
    }
    if (options.budget.seconds && outcome.charged_seconds() >= *options.budget.seconds) {
      outcome.stop_reason = "time budget spent";
      break;
    }
    std::optional<Candidate> proposal = propose();
    if (!proposal) {
      outcome.stop_reason = "space exhausted";
      break;
    }
    const auto index = space.index_of(*proposal);
    if (!index || !visited.insert(proposal->key()).second)
      throw std::logic_error("strategy " + strategy.name() + " proposed " +
                             (index ? "an already visited point " : "a point outside the space ") +
                             proposal->label());
    Evaluation evaluation{space.at(*index), {}, false};
    const Variant& variant = *evaluation.candidate.variant;

    if (const CacheRecord* cached = cached_record(evaluation.candidate)) {
      evaluation.measurement = cached->measurement;
      evaluation.from_cache = true;
      ++outcome.cached_evals;
      outcome.cached_seconds += cached->eval_seconds;
    } else {
      const double eval_start = options.clock();
      try {
        evaluation.measurement = evaluate(variant, evaluation.candidate.params, problem);
      } catch (const UnsupportedError& refused) {
        evaluation.measurement = Measurement{{}, 0, false, refused.what()};
      }
      const double eval_seconds = std::max(0.0, options.clock() - eval_start);
      outcome.measured_seconds += eval_seconds;
      ++outcome.new_evals;
      if (options.cache) {
        CacheRecord record;
        record.device = options.device;
        record.device_limits = options.device_limits;
        record.variant = variant.name();
        record.params = evaluation.candidate.params;
        record.problem = problem;
        record.bucket = bucket;
        record.measurement = evaluation.measurement;
        record.strategy = strategy.name();
        record.time = utc_now_iso();
        record.eval_seconds = eval_seconds;
        options.cache->append(record);
      }
    }
    outcome.history.push_back(evaluation);

    const Measurement& m = evaluation.measurement;
    std::string line = evaluation.from_cache ? "cached " : std::to_string(outcome.new_evals) + "/" + total + " ";
    line += evaluation.candidate.label() + (outcome.is_default(evaluation.candidate) ? " (default): " : ": ");
    line += m.ok ? format_ms(m.median_ms) + " (" + format_gops(gops_of(problem, m.median_ms)) + ")"
                 : "failed: " + m.reason;
    say(line);
    if (m.ok && (!best_ms || m.median_ms < *best_ms)) {
      best_ms = m.median_ms;
      say("best so far: " + evaluation.candidate.label() + " " + format_ms(m.median_ms) + " (" +
          format_gops(gops_of(problem, m.median_ms)) + ") after " + std::to_string(outcome.history.size()) +
          " points");
    }
  }
  outcome.seconds = options.clock() - start;
  return outcome;
}

}  // namespace mk::tuner
