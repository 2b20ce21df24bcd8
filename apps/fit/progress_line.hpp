#pragma once
// The per-step progress line of `mkbench fit` on stderr: step, how many Ks still move, and
// the inertia (per K for short ranges, summed otherwise).
#include <string>
#include <vector>

#include "variants/step.hpp"

namespace mk {

// restarts > 1 prefixes the restart ("restart 2/3").
std::string progress_line(int restart, int restarts, int iteration, const StepSummary& step,
                          const std::vector<uint8_t>& active_before);

}  // namespace mk
