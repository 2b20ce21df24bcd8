#include "harness/device_health.hpp"

#include <cuda_runtime.h>

#include "harness/fault_injection.hpp"

namespace mk {

bool is_sticky_cuda_error(int code) {
  switch (static_cast<cudaError_t>(code)) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

std::optional<std::string> unusable_context_reason(bool gpu_in_use) {
  if (auto simulated = simulated_sticky_error()) return simulated;
  if (!gpu_in_use) return std::nullopt;
  cudaGetLastError();  // a non-sticky error ends here
  const cudaError_t first = cudaDeviceSynchronize();
  if (first == cudaSuccess) return std::nullopt;
  cudaGetLastError();
  const cudaError_t second = cudaDeviceSynchronize();
  if (second == cudaSuccess && !is_sticky_cuda_error(first)) return std::nullopt;
  const cudaError_t shown = second == cudaSuccess ? first : second;
  return std::string(cudaGetErrorName(shown)) + " (" + cudaGetErrorString(shown) + ")";
}

}  // namespace mk
