#include "core/problem.hpp"

#include <cctype>
#include <cerrno>
#include <limits>
#include <cmath>
#include <cstdlib>

#include "core/errors.hpp"

namespace mk {

const char* to_string(Layout layout) { return layout == Layout::AoS ? "aos" : "soa"; }

Layout parse_layout(const std::string& text) {
  if (text == "aos" || text == "row") return Layout::AoS;
  if (text == "soa" || text == "col") return Layout::SoA;
  throw InputError("unknown layout '" + text + "' (expected aos or soa)");
}

const char* to_string(InitMethod method) {
  return method == InitMethod::FirstK ? "first" : "random";
}

InitMethod parse_init(const std::string& text) {
  if (text == "first") return InitMethod::FirstK;
  if (text == "random") return InitMethod::RandomSample;
  throw InputError("unknown init '" + text + "' (expected first or random)");
}

std::string KRange::str() const {
  return kmin == kmax ? std::to_string(kmin) : std::to_string(kmin) + ".." + std::to_string(kmax);
}

static int parse_int_strict(const std::string& text, const std::string& what) {
  if (text.empty()) throw InputError("empty " + what);
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0') throw InputError("cannot parse " + what + " '" + text + "'");
  // A value past int's range would otherwise wrap to a small, plausible K.
  if (errno == ERANGE || value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max())
    throw InputError(what + " '" + text + "' is out of range");
  return static_cast<int>(value);
}

KRange parse_k_range(const std::string& text) {
  KRange range;
  auto dots = text.find("..");
  if (dots == std::string::npos) {
    range.kmin = range.kmax = parse_int_strict(text, "K");
  } else {
    range.kmin = parse_int_strict(text.substr(0, dots), "K range start");
    range.kmax = parse_int_strict(text.substr(dots + 2), "K range end");
  }
  if (range.kmin < 1) throw InputError("K must be at least 1 (got " + text + ")");
  if (range.kmax < range.kmin) throw InputError("K range end is below its start: " + text);
  if (range.kmax > kMaxK) throw InputError("K above " + std::to_string(kMaxK) + " is not supported: " + text);
  return range;
}

std::string Problem::str() const {
  return "N=" + std::to_string(n) + " K=" + k.str() + " M=" + format_count(m) +
         (batch > 1 ? " B=" + std::to_string(batch) : std::string());
}

void validate(const Problem& problem) {
  if (problem.n < 1) throw InputError("N (dimensions) must be at least 1, got " + std::to_string(problem.n));
  if (problem.m < 1) throw InputError("M (points) must be at least 1, got " + std::to_string(problem.m));
  if (problem.k.kmin < 1) throw InputError("K must be at least 1, got " + std::to_string(problem.k.kmin));
  if (problem.k.kmax < problem.k.kmin) throw InputError("K range end is below its start: " + problem.k.str());
  if (problem.k.kmax > kMaxK)
    throw InputError("K above " + std::to_string(kMaxK) + " is not supported: " + problem.k.str());
  if (problem.batch < 1 || problem.batch > kMaxBatch)
    throw InputError("the batch must hold 1 to " + std::to_string(kMaxBatch) + " problems, got " +
                     std::to_string(problem.batch));
  if (problem.k.kmax > problem.m)
    throw InputError("K=" + std::to_string(problem.k.kmax) + " exceeds the number of points M=" +
                     std::to_string(problem.m));
}

int64_t parse_count(const std::string& text) {
  if (text.empty()) throw InputError("empty count");
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  std::string suffix(end);
  double scale = 1;
  if (suffix == "K" || suffix == "k") scale = 1024.0;
  else if (suffix == "M" || suffix == "m") scale = 1024.0 * 1024.0;
  else if (suffix == "G" || suffix == "g") scale = 1024.0 * 1024.0 * 1024.0;
  else if (!suffix.empty()) throw InputError("cannot parse count '" + text + "' (use e.g. 1000, 1e6, 32M)");
  double result = value * scale;
  if (!(result >= 0) || result > 9e18 || std::floor(result) != result)
    throw InputError("count '" + text + "' is not a whole non-negative number");
  return static_cast<int64_t>(result);
}

std::string format_count(int64_t value) {
  const int64_t mi = 1 << 20, ki = 1 << 10;
  if (value >= mi && value % mi == 0) return std::to_string(value / mi) + "M";
  if (value >= ki && value % ki == 0) return std::to_string(value / ki) + "K";
  return std::to_string(value);
}

}  // namespace mk
