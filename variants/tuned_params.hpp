#pragma once
// Hook into tuned configurations. Declared here, below the harness, so that a variant that
// picks another variant's parameters (`auto` for its delegate) needs no include upwards; the
// definition lives in tuner/tuned_config.cpp. When the user gives no tunables, `run` and the
// suites ask for the tuned parameters of the nearest bucket.
#include <optional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "variants/variant.hpp"

namespace mk {

// nullopt when no tuned configuration applies. On success `config_used` (if not null)
// receives a human description: "<path> bucket <...>".
std::optional<Params> tuned_params_for(const Variant& variant, const Problem& problem,
                                       const DeviceInfo& device, std::string* config_used);

// The variants measured at the closest shape of the problem's N and K classes (TunedConfig::nearest_auto) in the tuned
// configuration's "auto" table (tuner/config.hpp), fastest first: `auto`'s order of preference. nullopt when tuned configs
// are off or no table applies. On success `source` (if not null) receives "<path> auto table,
// measured on <shape> (<source>)".
std::optional<std::vector<std::string>> measured_variant_order(const Problem& problem, const DeviceInfo& device,
                                                               std::string* source);

// Process-wide switch behind `--no-tuned` (and `mkbench tune`, which measures the points it
// asks for): variants that choose another variant's parameters themselves, such as `auto`
// for its delegate, ask tuned_params_for only while it is on. On by default.
void set_tuned_configs_enabled(bool enabled);
bool tuned_configs_enabled();

}  // namespace mk
