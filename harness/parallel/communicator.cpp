#include "harness/parallel/communicator.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace mk {

std::chrono::duration<double> collective_timeout() {
  constexpr double kDefaultSeconds = 300;
  const char* text = std::getenv("MKBENCH_COLLECTIVE_TIMEOUT_S");
  if (!text || !*text) return std::chrono::duration<double>(kDefaultSeconds);
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(text, &end);
  if (errno || end == text || *end || !std::isfinite(seconds) || seconds <= 0)
    throw InputError(std::string("MKBENCH_COLLECTIVE_TIMEOUT_S must be a positive number of seconds, got '") + text +
                     "'");
  return std::chrono::duration<double>(seconds);
}

}  // namespace mk
