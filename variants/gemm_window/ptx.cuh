#pragma once
// The Ampere-and-later instructions gemm-window's mainloop is made of: m16n8k16 FP16 MMA
// with FP32 accumulation, ldmatrix, and cp.async. Compiled to a trap below sm_80, where
// can_implement refuses (the default build covers sm_75).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace mk::gemm_window {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define MK_GW_SM80 1
#else
#define MK_GW_SM80 0
#endif

__device__ __forceinline__ uint32_t smem_address(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// D = A·B + D for one m16n8k16 tile. Fragments (g = lane/4, t = lane%4):
// A a0:(g, 2t..2t+1) a1:(g+8, 2t..) a2:(g, 2t+8..) a3:(g+8, 2t+8..);
// B b0:(k 2t..2t+1, n g) b1:(k 2t+8.., n g); D d0:(g, 2t) d1:(g, 2t+1) d2:(g+8, 2t) d3:(g+8, 2t+1).
__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if MK_GW_SM80
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();
#endif
}

// Brings the 128-byte line holding `address` into L2 without waiting for it (no register is
// written, so the thread does not stall on it).
__device__ __forceinline__ void prefetch_l2(const void* address) {
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(address));
}

// Four 8×8 matrices of 16-bit values; lane i names row i%8 of matrix i/8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t address) {
#if MK_GW_SM80
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
#else
  __trap();
#endif
}

// 16 bytes global → shared, bypassing L1 (the table is read once per block and tile).
__device__ __forceinline__ void cp_async_16(uint32_t shared_address, const void* global) {
#if MK_GW_SM80
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address), "l"(global));
#else
  __trap();
#endif
}

// The same with only the first `bytes` (0..16) read and the rest of the 16 zero-filled: the
// piece that straddles the end of an array.
__device__ __forceinline__ void cp_async_16_partial(uint32_t shared_address, const void* global, int bytes) {
#if MK_GW_SM80
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address), "l"(global), "r"(bytes));
#else
  __trap();
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if MK_GW_SM80
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
#if MK_GW_SM80
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
#endif
}

__device__ __forceinline__ uint32_t pack_half2(float low, float high) {
  const __half2 pair = __floats2half2_rn(low, high);  // low lands in the lower 16 bits
  return *reinterpret_cast<const uint32_t*>(&pair);
}

}  // namespace mk::gemm_window
