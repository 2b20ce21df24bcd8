// The strong definition of the harness hook (variants/tuned_params.hpp): `mkbench run`
// without explicit tunables asks here for the tuned parameters of the nearest bucket.
#include "variants/tuned_params.hpp"

#include <memory>
#include <optional>

#include "tuner/config.hpp"

namespace mk {

std::optional<Params> tuned_params_for(const Variant& variant, const Problem& problem, const DeviceInfo& device,
                                       std::string* config_used) {
  if (!tuned_configs_enabled()) return std::nullopt;
  const auto path = tuner::find_config_for(device.slug());
  if (!path) return std::nullopt;
  const std::shared_ptr<const tuner::TunedConfig> loaded = tuner::load_config_cached(*path);
  const tuner::TunedConfig& config = *loaded;
  const tuner::Bucket wanted = tuner::Bucket::of(problem);
  const ParamSpace space = variant.param_space(problem, device);
  for (const tuner::ConfigEntry* entry : config.nearest(problem)) {
    for (const tuner::ConfigChoice* choice : {&entry->best, entry->runner_up ? &*entry->runner_up : nullptr}) {
      if (!choice || choice->variant != variant.name()) continue;
      // The tune found nothing measurably faster than the default: the heuristic applies,
      // worked out for this shape (the recorded params are its answer for the tuned one).
      Params params = choice->is_default ? variant.default_params(problem, device) : choice->params;
      // An entry tuned before an axis existed says nothing about it: that axis keeps the
      // variant's default, rather than the whole entry being dropped as incomplete.
      std::optional<Params> defaults;
      for (const Axis& axis : space.axes)
        if (!params.contains(axis.name)) {
          if (!defaults) defaults = variant.default_params(problem, device);
          if (defaults->contains(axis.name)) params[axis.name] = defaults->at(axis.name);
        }
      params = variant.adapt_tuned_params(problem, device, params);
      // Axis values such as the grid depend on M: params tuned on another shape may not
      // be legal here, and then the variant's own heuristic is the better guess.
      if (space.check(params)) continue;
      if (config_used) {
        *config_used = *path + " bucket " + entry->bucket.label() +
                       (entry->bucket == wanted ? " (exact" : " (nearest to " + wanted.label()) + ", tuned on " +
                       entry->problem.str() + ", " + (choice == &entry->best ? "best" : "runner-up") +
                       (choice->is_default ? ": the default, kept by the tune" : "") + ")";
      }
      return params;
    }
  }
  return std::nullopt;
}

std::optional<std::vector<std::string>> measured_variant_order(const Problem& problem, const DeviceInfo& device,
                                                               std::string* source) {
  if (!tuned_configs_enabled()) return std::nullopt;
  const auto path = tuner::find_config_for(device.slug());
  if (!path) return std::nullopt;
  const std::shared_ptr<const tuner::TunedConfig> loaded = tuner::load_config_cached(*path);
  const tuner::AutoMeasurement* measured = loaded->nearest_auto(problem);
  if (!measured) return std::nullopt;
  std::vector<std::string> order;
  for (const auto& [variant, ms] : measured->times_ms) order.push_back(variant);
  if (source)
    *source = *path + " auto table, measured on " + measured->problem.str() +
              (measured->source.empty() ? "" : " (" + measured->source + ")");
  return order;
}

}  // namespace mk
