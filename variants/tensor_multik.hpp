#pragma once
// Test hook of variants/tensor_multik.cu: the run-time compiled kernel can be built (NVRTC
// needs no GPU), so CI proves every specialisation compiles and does not spill.
#include <string>

#include "harness/problem.hpp"
#include "harness/variant.hpp"

namespace mk::tensor_multik {

// NVRTC's log for the kernel of this problem and parameter point, ptxas's resource report
// included; throws DeviceError when it does not compile.
std::string compile_report(const Problem& problem, const Params& params, int cc_major, int cc_minor);

}  // namespace mk::tensor_multik
