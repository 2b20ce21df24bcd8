#pragma once
// Test hooks of tensor-multik (variants/tensor_multik/): the run-time compiled kernel can be built (NVRTC
// needs no GPU), so CI proves every specialisation compiles and does not spill.
#include <string>

#include "datasets/dataset.hpp"
#include "core/problem.hpp"
#include "variants/common/nvrtc_module.hpp"
#include "variants/variant.hpp"

namespace mk::tensor_multik {

// NVRTC's log for the kernel of this problem and parameter point, ptxas's resource report
// included; throws DeviceError when it does not compile.
std::string compile_report(const Problem& problem, const Params& params, int cc_major, int cc_minor,
                           float point_scale = 1.f);

// The NVRTC request of the kernel a run of this point compiles (gpu::compile_image builds it
// without a GPU). `store_labels`: the kernel of iterations that keep labels (its own only with
// operands=prepared); `timeline`: the MKBENCH_TIMELINE diagnostic's.
gpu::RuntimeCompileRequest kernel_request(const Problem& problem, const Params& params, int cc_major, int cc_minor,
                                          float point_scale = 1.f, bool store_labels = false, bool timeline = false);

// The power of two the FP16 update multiplies points by (1 when none is needed).
float update_point_scale(const Dataset& data);

}  // namespace mk::tensor_multik
