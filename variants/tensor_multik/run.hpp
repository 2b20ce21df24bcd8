#pragma once
// tensor-multik's prepared run: device buffers, the compiled kernel of its parameter point, one
// launch per Lloyd iteration (and MKBENCH_TIMELINE's dump of the last launch, when set).
#include <memory>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "datasets/dataset.hpp"
#include "variants/variant.hpp"

namespace mk::tensor_multik {

std::unique_ptr<PreparedRun> make_run(const Problem& problem, const Dataset& data, const Params& params,
                                      const DeviceInfo& device);

}  // namespace mk::tensor_multik
