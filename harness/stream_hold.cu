#include "harness/stream_hold.hpp"

#include <string>

#include "core/errors.hpp"

namespace mk {

namespace {

__device__ unsigned long long global_timer_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

__global__ void spin_for(unsigned long long nanoseconds) {
  const unsigned long long start = global_timer_ns();
  while (global_timer_ns() - start < nanoseconds) __nanosleep(1000);
}

}  // namespace

void hold_stream(cudaStream_t stream, unsigned microseconds) {
  spin_for<<<1, 1, 0, stream>>>(1000ull * microseconds);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw DeviceError(std::string("stream hold: ") + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

}  // namespace mk
