// Weak stand-in: a build without the tuner has no tuned configurations.
#include "harness/tuned_config.hpp"

namespace mk {

__attribute__((weak)) std::optional<Params> tuned_params_for(const Variant&, const Problem&,
                                                             const DeviceInfo&, std::string*) {
  return std::nullopt;
}

}  // namespace mk
