#pragma once
// Test hook of registers-multik (variants/registers_multik/): the run-time compiled kernel can be built without
// a GPU (NVRTC), so CI can read its machine code and resources.
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "variants/common/nvrtc_module.hpp"
#include "variants/variant.hpp"

namespace mk::registers_multik {

// The NVRTC request of the kernels a run of this point on `device` compiles.
gpu::RuntimeCompileRequest kernel_request(const Problem& problem, const Params& params, const DeviceInfo& device);

}  // namespace mk::registers_multik
