#include "tuner/budget.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/errors.hpp"

namespace mk::tuner {

Clock steady_clock_seconds() {
  return [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
}

double parse_duration_seconds(const std::string& text) {
  const std::string hint = " (use e.g. 90s, 5m, 1.5h or 1h30m)";
  if (text.empty()) throw InputError("empty --budget" + hint);
  double total = 0;
  size_t position = 0;
  while (position < text.size()) {
    const char* begin = text.c_str() + position;
    char* end = nullptr;
    const double amount = std::strtod(begin, &end);
    if (end == begin || *begin == '-' || *begin == '+')
      throw InputError("cannot parse budget '" + text + "'" + hint);
    position += size_t(end - begin);
    if (position >= text.size())
      throw InputError("budget '" + text + "' needs a unit: s, m or h" + hint);
    const char unit = text[position++];
    if (unit == 's') total += amount;
    else if (unit == 'm') total += amount * 60;
    else if (unit == 'h') total += amount * 3600;
    else throw InputError("unknown unit '" + std::string(1, unit) + "' in budget '" + text + "'" + hint);
  }
  if (!(total > 0) || !std::isfinite(total)) throw InputError("budget '" + text + "' must be positive");
  return total;
}

std::string format_duration(double seconds) {
  std::ostringstream out;
  if (seconds < 60) {
    out << std::round(seconds * 10) / 10 << "s";
    return out.str();
  }
  const long whole = long(std::lround(seconds));
  const long hours = whole / 3600, minutes = whole % 3600 / 60, rest = whole % 60;
  if (hours) out << hours << "h";
  if (minutes) out << minutes << "m";
  if (rest) out << rest << "s";
  return out.str();
}

std::string Budget::str() const {
  if (unlimited()) return "whole space";
  std::string out;
  if (seconds) out = format_duration(*seconds);
  if (max_evals) out += (out.empty() ? "" : " or ") + std::to_string(*max_evals) + " evals";
  return out;
}

Budget share_of(const Budget& remaining, double weight, double weight_left) {
  const double fraction = weight_left > 0 ? std::min(1.0, weight / weight_left) : 1.0;
  Budget share;
  if (remaining.seconds) share.seconds = std::max(0.0, *remaining.seconds * fraction);
  if (remaining.max_evals)
    share.max_evals = std::max<int64_t>(0, int64_t(std::floor(double(*remaining.max_evals) * fraction + 1e-9)));
  return share;
}

}  // namespace mk::tuner
