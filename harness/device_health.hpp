#pragma once
// After a row failed on the GPU: can this process still use the device? Most CUDA errors
// (an invalid launch configuration, an allocation that failed) leave the context working, so
// a suite goes on to the next row. A sticky error (an illegal address, a kernel that trapped
// or timed out) poisons the context: every later call returns it, and only a new process gets
// a working GPU again (CUDA Programming Guide, "Error Checking").
#include <optional>
#include <string>

namespace mk {

// True for the runtime's sticky error codes (cudaError_t values).
bool is_sticky_cuda_error(int code);

// nullopt when the context still works (or no GPU is in use); else the sticky error's name
// and text. Probes by synchronising the device twice: a sticky error comes back both times.
// An injected sticky fault (harness/fault_injection.hpp) is reported here too.
std::optional<std::string> unusable_context_reason(bool gpu_in_use);

}  // namespace mk
