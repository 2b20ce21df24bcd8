#pragma once
// The Hopper warpgroup MMA (wgmma, sm_90a) that gemm-window's wgmma tiles use instead of
// ldmatrix + mma.sync: both operands come from shared memory through 64-bit descriptors, and
// one instruction does a warpgroup's m64nNk16. Only the translation units built for sm_90a
// (kernel_*_wgmma.cu, their own CMake target) define MK_GW_SM90A; elsewhere these trap, and
// variant.cpp's tile_refusal keeps the wgmma tile out of the space, the defaults and prepare.
//
// Operand layout: the table chunk slots' (mainloop.cuh): rows of 64 bytes (32 halves, one
// k-chunk), the four 16-byte pieces of row r stored at piece XOR (r/2)%4: wgmma's 64-byte
// swizzle, whose pattern is address bits 4-5 XOR bits 7-8, so every 8 rows (512 bytes) start
// on 512 bytes. K-major for both operands (the points' dims and the centroids' dims run
// along k), no transposition; a k16 step is the chunk's start plus 32 bytes.
#include <cuda_runtime.h>

#include <cstdint>

namespace mk::gemm_window {

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MK_GW_SM90A 1
#else
#define MK_GW_SM90A 0
#endif

// Descriptor of a K-major, 64-byte-swizzled operand starting at shared address `address`:
// start >> 4 (bits 0-13), leading offset unused by swizzled K-major layouts (1, bits 16-29),
// 512 bytes between 8-row groups (bits 32-45), base offset 0 (every group starts on 512),
// swizzle mode 2 = 64 bytes (bits 62-63). Built from its two words, so that stepping through a
// tile adds 16-byte units to the lower word alone (the start never carries out of its 14 bits:
// shared addresses are below 2^18).
constexpr uint32_t kDescriptorHigh = (512 >> 4) | (2u << 30);
__device__ __forceinline__ uint32_t descriptor_low(uint32_t address) { return ((address & 0x3ffff) >> 4) | (1u << 16); }
__device__ __forceinline__ uint64_t descriptor(uint32_t low) { return (uint64_t(kDescriptorHigh) << 32) | low; }

// Orders this thread's earlier accesses of the accumulators (the previous tile's fold) before
// the wgmmas that overwrite them.
__device__ __forceinline__ void wgmma_fence() {
#if MK_GW_SM90A
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_commit() {
#if MK_GW_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
#if MK_GW_SM90A
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#endif
}

// Shared-memory writes by ordinary stores and cp.async (the generic proxy) made visible to the
// tensor cores' reads (the async proxy); each writing thread fences before the barrier.
__device__ __forceinline__ void fence_shared_for_wgmma() {
#if MK_GW_SM90A
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// Defined for N = 64, the one wgmma tile's (a 128-column tile measured slower,
// reports/results/nvidia-h200/ab/gemm-window-wgmma.txt). d (N/2 floats a thread: for each n8 column group j, d[4j..4j+3] = rows g, g, g+8, g+8 of
// the warp's 16, columns 2t, 2t+1: mma.sync's D fragment, repeated) = A·B, plus d when
// accumulate is nonzero. Starting a tile with accumulate = 0 rather than from values moved into
// d keeps ordinary instructions from defining accumulators while other wgmmas are in flight,
// which makes ptxas serialise every wgmma of the kernel (its C7515).
template <int N>
__device__ __forceinline__ void wgmma_f16(float* d, uint64_t a, uint64_t b, int accumulate);

template <>
__device__ __forceinline__ void wgmma_f16<64>(float* d, uint64_t a, uint64_t b, int accumulate) {
#if MK_GW_SM90A
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(accumulate));
#else
  __trap();
#endif
}

}  // namespace mk::gemm_window
