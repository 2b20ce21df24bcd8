#pragma once
// Tuning budgets (wall time and/or a number of new evaluations) and the clock they are
// read from; the clock is injectable so tests can check time budgets deterministically.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace mk::tuner {

using Clock = std::function<double()>;  // monotonic seconds
Clock steady_clock_seconds();

// "90s", "5m", "1.5h", "1h30m" -> seconds. InputError for a missing unit, a negative or
// zero total, or anything unparsable.
double parse_duration_seconds(const std::string& text);
std::string format_duration(double seconds);  // "5m", "1m30s", "12.5s"

struct Budget {
  std::optional<double> seconds;     // wall time for new evaluations
  std::optional<int64_t> max_evals;  // new evaluations; cached points are free
  bool unlimited() const { return !seconds && !max_evals; }
  std::string str() const;  // "5m", "40 evals", "5m or 40 evals", "whole space"
};

// The share of `remaining` for the next item when items are served in order and the
// item's weight is `weight` out of `weight_left` (its own weight included). Leftovers of
// earlier items (a space that ran out early) roll over to the later ones.
Budget share_of(const Budget& remaining, double weight, double weight_left);

}  // namespace mk::tuner
