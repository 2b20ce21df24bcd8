#include "apps/fit/progress_line.hpp"

#include <cstdio>

namespace mk {

namespace {

// More Ks than this would not fit a terminal line: their inertia is summed.
constexpr size_t kPerKInertiaUpTo = 6;

std::string scientific(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6e", value);
  return text;
}

}  // namespace

std::string progress_line(int restart, int restarts, int iteration, const StepSummary& step,
                          const std::vector<uint8_t>& active_before) {
  int moving = 0;  // Ks this step updated (a K that converges in it still counts here)
  for (size_t index = 0; index < step.per_k.size(); ++index)
    moving += active_before.empty() || active_before[index] ? 1 : 0;
  std::string line = "fit: ";
  if (restarts > 1) line += "restart " + std::to_string(restart + 1) + "/" + std::to_string(restarts) + " ";
  line += "iter " + std::to_string(iteration) + ": " + std::to_string(moving) + " of " +
          std::to_string(step.per_k.size()) + " K moving; inertia";
  if (step.per_k.size() <= kPerKInertiaUpTo) {
    for (const KStepSummary& ks : step.per_k) line += " k=" + std::to_string(ks.k) + " " + scientific(ks.inertia);
  } else {
    double total = 0;
    for (const KStepSummary& ks : step.per_k) total += ks.inertia;
    line += " (sum over K) " + scientific(total);
  }
  return line;
}

}  // namespace mk
