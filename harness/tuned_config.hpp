#pragma once
// Hook from `mkbench run` into tuned configurations (implemented in tuner/). When the
// user gives no tunables, run asks for the tuned parameters of the nearest bucket.
// harness/tuned_config_fallback.cpp provides a weak "nothing tuned" definition so the
// harness links without the tuner.
#include <optional>
#include <string>

#include "harness/device_info.hpp"
#include "harness/problem.hpp"
#include "harness/variant.hpp"

namespace mk {

// nullopt when no tuned configuration applies. On success `config_used` (if not null)
// receives a human description: "<path> bucket <...>".
std::optional<Params> tuned_params_for(const Variant& variant, const Problem& problem,
                                       const DeviceInfo& device, std::string* config_used);

// Process-wide switch behind `--no-tuned` (and `mkbench tune`, which measures the points it
// asks for): variants that choose another variant's parameters themselves, such as `auto`
// for its delegate, ask tuned_params_for only while it is on. On by default.
void set_tuned_configs_enabled(bool enabled);
bool tuned_configs_enabled();

}  // namespace mk
