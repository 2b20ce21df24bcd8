#pragma once
// The tune loop: propose the variants' default points, then ask the strategy; take each
// point from the cache or measure it, record, report progress, stop at the budget or when
// the strategy is done.
#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>

#include "tuner/budget.hpp"
#include "tuner/cache.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/search_space.hpp"
#include "tuner/strategy.hpp"

namespace mk::tuner {

struct TuneOptions {
  Budget budget;
  Clock clock = steady_clock_seconds();
  std::ostream* progress = nullptr;  // one line per evaluation plus best-so-far lines
  std::string progress_prefix;      // e.g. "[2/5 n<=8/multi-small/m<=64M]"
  // Where measured points are appended and cached points are found; with no cache every
  // point is measured. `device` keys the records.
  TuneCache* cache = nullptr;
  DeviceKey device;
  nlohmann::json device_limits;  // device_limits_of the device, written with each record
};

struct TuneOutcome {
  History history;           // in visit order, cached points included
  size_t new_evals = 0;      // measured now
  size_t cached_evals = 0;   // taken from the cache
  size_t space_size = 0;
  double seconds = 0;           // wall time of this run by the options' clock
  double measured_seconds = 0;  // evaluation time of the points measured now
  double cached_seconds = 0;    // recorded evaluation time of the points taken from the cache
  std::string strategy;
  std::string stop_reason;   // "space exhausted" | "max evals reached" | "time budget spent"
  // Candidate::key of each variant's default point (SearchSpace::default_indices).
  std::map<std::string, std::string> default_keys;

  // What the time budget counts: evaluation time, whether spent now or before a kill.
  double charged_seconds() const { return measured_seconds + cached_seconds; }
  // Lowest median among ok evaluations, and the next lowest distinct point.
  std::optional<Evaluation> best() const;
  std::optional<Evaluation> runner_up() const;
  bool is_default(const Candidate& candidate) const;
  // The evaluation of `variant`'s default point, if it was visited.
  std::optional<Evaluation> default_of(const std::string& variant) const;
  // Visits (1-based, cached ones included) until a point within `tolerance` (0.05 = 5%)
  // of `target_ms` had been seen; nullopt if none was.
  std::optional<size_t> visits_to_reach(double target_ms, double tolerance) const;
};

// Proposes the space's default points first, then whatever the strategy proposes. A
// point found in the cache is not measured again; it is free for --max-evals but its
// recorded eval_seconds count toward the time budget, so a tune killed and run again
// with the same command measures for the budget in total.
// std::logic_error if the strategy proposes a point outside the space or twice (a bug).
TuneOutcome run_tune(const SearchSpace& space, const Problem& problem, Strategy& strategy,
                     const Evaluator& evaluate, const TuneOptions& options);

}  // namespace mk::tuner
