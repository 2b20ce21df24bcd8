#pragma once
// What a runtime-compiled kernel costs, for the compile tests of tensor-multik and
// registers-multik: compiled by NVRTC (no GPU needed) and read from the cubin's ELF records
// (variants/common/cubin_info.hpp), not from ptxas's text, which changes between toolkits.
#include <gtest/gtest.h>

#include <string>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "variants/common/cubin_info.hpp"
#include "variants/common/nvrtc_module.hpp"

namespace mk::testing_support {

struct KernelResources {
  int registers = 0;
  long long frame_bytes = 0;  // local memory per thread: spills plus local arrays
  std::string log;            // NVRTC's log (warnings), without ptxas's report
};

// Throws (the test fails with the message) when NVRTC fails or the cubin lacks a figure; the
// message names the toolkit.
inline KernelResources kernel_resources(const gpu::RuntimeCompileRequest& request, const std::string& kernel) {
  const gpu::KernelImage image = gpu::compile_image(request);
  const gpu::CubinKernel found = gpu::read_cubin_kernel(image.cubin, kernel, gpu::nvrtc_version());
  return {found.registers, found.frame_bytes, image.log};
}

// A synthetic GPU of compute capability cc_major.cc_minor for compile-only tests.
inline DeviceInfo nvrtc_target(int cc_major, int cc_minor) {
  DeviceInfo device;
  device.is_gpu = true;
  device.name = "NVRTC target";
  device.cc_major = cc_major;
  device.cc_minor = cc_minor;
  device.sm_count = 132;
  device.smem_per_block_optin = cc_major >= 9 ? 227 * 1024 : 163 * 1024;
  device.global_mem_bytes = int64_t(80) << 30;
  return device;
}

inline Problem multik_shape(int n, int kmin, int kmax, int64_t m = 1 << 20) {
  Problem problem;
  problem.m = m;
  problem.n = n;
  problem.k = KRange{kmin, kmax};
  return problem;
}

}  // namespace mk::testing_support
