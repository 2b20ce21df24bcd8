#include "variants/common/host_transfer.hpp"

#include <cuda_runtime.h>

#include <string>

#include "core/errors.hpp"

namespace mk::gpu {

namespace {
// Below this a locked copy saves less than the lock costs.
constexpr size_t kLockedCopyMinBytes = size_t(4) << 20;
constexpr size_t kTouchStride = 4096;
}  // namespace

bool page_lock(void* begin, size_t bytes) {
  if (cudaHostRegister(begin, bytes, cudaHostRegisterPortable) == cudaSuccess) return true;
  cudaGetLastError();  // the refusal is not the caller's error
  return false;
}

void page_unlock(void* begin) {
  cudaHostUnregister(begin);
  cudaGetLastError();
}

LabelValues copy_labels_to_host(const int32_t* device, size_t count) {
  LabelValues host(count);  // uninitialised, huge pages from 4 MiB (datasets/dataset.hpp)
  if (count == 0) return host;
  const size_t bytes = count * sizeof(int32_t);
  bool locked = false;
  if (bytes >= kLockedCopyMinBytes) {
    // First touch on all cores: one thread faulting 40 MB in took most of the read-back.
    const int64_t pages = int64_t((bytes + kTouchStride - 1) / kTouchStride);
    char* const begin = reinterpret_cast<char*>(host.data());
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < pages; ++p) begin[size_t(p) * kTouchStride] = 0;
    locked = page_lock(host.data(), bytes);
  }
  const cudaError_t status = cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost);
  if (locked) page_unlock(host.data());
  if (status != cudaSuccess) throw DeviceError(std::string("read labels: ") + cudaGetErrorString(status));
  return host;
}

}  // namespace mk::gpu
