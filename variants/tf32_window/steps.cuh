#pragma once
// A warp's unit of work is a step of 32 consecutive points. This file holds what a step
// needs around the sweeps: which step comes next, where each of a lane's four rows sits in
// it, the warp's shared-memory scratch, and the L2 prefetch of the following step.
#include <cuda_runtime.h>

#include <cstdint>

#include "variants/tf32_window/layout.hpp"
#include "variants/tf32_window/window_args.hpp"

namespace mk::tf32_window {

// Device helpers exist only where the kernel body does (sm_80+), and for the host pass.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
// Per warp: 32 labels, 32 scan masks, 32 ambiguity flags, a work list of up to 8 in-window
// keys for each of 32 rows, and 32 packed exact minima.
struct WarpScratch {
  int* label;               // the sweep's label, replaced by the exact one where ambiguous
  unsigned* scan;           // quad lanes whose columns to scan
  int* ambiguous;           // row needs exact arbitration
  int* work;                // (row << 16) | centroid, ≤ 256
  unsigned long long* exact;  // per row: the smallest pack_exact(distance, index)
};

__device__ __forceinline__ WarpScratch warp_scratch(int* scratch_base, int warp) {
  int* base = scratch_base + warp * kWarpScratchWords;
  return {base, reinterpret_cast<unsigned*>(base + 32), base + 64, base + 96,
          reinterpret_cast<unsigned long long*>(base + 352)};  // 8-byte aligned
}

// Row r = 0..3 of lane group g within a step: m-tile r/2, row g (+8 for odd r), as the
// MMA's A and D fragments hold them.
__device__ __forceinline__ int row_in_step(int r, int g) { return (r >> 1) * 16 + (r & 1) * 8 + g; }

__device__ __forceinline__ void prefetch_to_l2(const void* address) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(address));
}

// A whole step's rows on their way to L2 (one 128-byte line per lane and 32 dims): issued
// during the arbitration and update of the step before, so its first loads wait on L2, not
// DRAM.
__device__ __forceinline__ void prefetch_step(const WindowArgs& a, int64_t step, int lane) {
  if ((step + 1) * 32 <= a.m) {
    const char* rows = reinterpret_cast<const char*>(a.points + step * 32 * a.n);
    for (int line = lane; line < a.n; line += 32) prefetch_to_l2(rows + 128 * line);
  }
}

// Steps are handed out by a counter: how many exact scans a step needs varies, and a static
// split left warps idle at the final barrier. Kernels ask for the next step as a step
// begins and read the answer only once its sweep is done: lane 0 holds the atomic's ticket
// until then, so its round trip hides behind the sweep.
// (PTX, not atomicAdd: the compiler turns a one-lane atomicAdd into a warp-aggregated one
// whose result shuffle waits for the round trip on the spot.)
__device__ __forceinline__ unsigned long long request_step(const WindowArgs& a, int lane) {
  unsigned long long ticket = 0;
  if (lane == 0) asm volatile("atom.global.add.u64 %0, [%1], 1;" : "=l"(ticket) : "l"(a.next_step));
  return ticket;
}
__device__ __forceinline__ int64_t granted_step(unsigned long long ticket) {
  return static_cast<int64_t>(__shfl_sync(0xffffffffu, ticket, 0));
}

#endif

}  // namespace mk::tf32_window
