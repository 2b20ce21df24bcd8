#pragma once
// The Hopper bulk copy engine (cp.async.bulk: one thread moves a contiguous range global →
// shared) and the shared-memory mbarriers that count its bytes, for the wgmma tile's ring of
// whole centroid tiles (kernel.cuh). The table is stored as the slots are laid out
// (table.cu), so a centroid tile is one contiguous copy. Built for sm_90 alone; elsewhere
// these trap, and only the wgmma instantiations (sm_90a) call them.
#include <cuda_runtime.h>

#include <cstdint>

namespace mk::gemm_window {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define MK_GW_SM90 1
#else
#define MK_GW_SM90 0
#endif

// One arrival (the copying thread's) and the bytes it announces complete a phase.
__device__ __forceinline__ void mbarrier_init(uint32_t bar) {
#if MK_GW_SM90
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
#else
  __trap();
#endif
}

// Makes the initialised barriers visible to the copy engine before any copy names them.
__device__ __forceinline__ void mbarrier_init_fence() {
#if MK_GW_SM90
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

// The copying thread: arrive on `bar`, expecting `bytes` from the copy issued next, then copy
// `bytes` (a multiple of 16, both addresses on 16 bytes) from `source` to shared `target`.
__device__ __forceinline__ void bulk_copy(uint32_t target, const void* source, uint32_t bytes, uint32_t bar) {
#if MK_GW_SM90
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   target),
               "l"(source), "r"(bytes), "r"(bar)
               : "memory");
#else
  __trap();
#endif
}

// Waits until the phase of parity `parity` of `bar` has completed: its copy has landed and is
// visible to this thread and to the wgmmas it issues next.
__device__ __forceinline__ void mbarrier_wait(uint32_t bar, uint32_t parity) {
#if MK_GW_SM90
  asm volatile(
      "{\n.reg .pred done;\nwait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#else
  __trap();
#endif
}

}  // namespace mk::gemm_window
