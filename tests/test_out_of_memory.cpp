// GPU out of memory must surface as a DeviceError (exit 4) naming the request, never a crash.
#include <gtest/gtest.h>

#include <string>

#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "variants/common/gpu_lloyd_state.cuh"

namespace mk {
namespace {

TEST(OutOfMemory, FailedAllocationIsADeviceErrorNamingTheRequest) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  void* pointer = nullptr;
  try {
    gpu::allocate_bytes(&pointer, size_t(1) << 50, "test buffer");  // 1 PiB
    FAIL() << "a 1 PiB cudaMalloc unexpectedly succeeded";
  } catch (const DeviceError& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("out of memory"), std::string::npos) << text;
    EXPECT_NE(text.find("test buffer"), std::string::npos) << text;
    EXPECT_EQ(error.exit_code, kExitDevice);
  }
}

TEST(OutOfMemory, ProblemLargerThanDeviceMemoryIsRefusedWithAReason) {
  Problem problem;
  problem.m = int64_t(1) << 28;
  problem.n = 32;
  problem.k = {3, 7};
  DeviceInfo small;
  small.is_gpu = true;
  small.global_mem_bytes = int64_t(16) << 30;  // 16 GiB: the 32 GiB of points cannot fit
  const auto reason = gpu::check_fits_in_memory(problem, small);
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("MiB"), std::string::npos) << *reason;
}

}  // namespace
}  // namespace mk
