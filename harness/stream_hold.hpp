#pragma once
// Keeps a stream busy for a while so that work enqueued behind it starts as soon as the
// stream frees, not when the host's launch reaches the GPU. Timing a launch from an idle
// stream puts the host's launch latency (a few µs) between the start event and the kernel;
// nvbench's blocking kernel and Triton's do_bench (its cache-clearing kernel) keep it out
// the same way.
#include <cuda_runtime.h>

namespace mk {

// One single-thread kernel that spins on the global timer for `microseconds`. Throws
// DeviceError when the launch fails.
void hold_stream(cudaStream_t stream, unsigned microseconds);

// Long enough for the host to enqueue the start event, a variant's launches (a few to a
// few dozen) and the stop event behind it.
inline constexpr unsigned kLaunchHoldMicroseconds = 200;

}  // namespace mk
