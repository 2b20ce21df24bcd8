#include <atomic>

#include "variants/tuned_params.hpp"

namespace mk {
namespace {
std::atomic<bool> tuned_configs_on{true};
}

void set_tuned_configs_enabled(bool enabled) { tuned_configs_on = enabled; }
bool tuned_configs_enabled() { return tuned_configs_on; }

}  // namespace mk
