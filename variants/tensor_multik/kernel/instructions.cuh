// tensor-multik, runtime-compiled: the PTX instructions the stages are written in (tensor-core
// MMAs, the FP16 transpose, cp.async, shared loads at 32-bit addresses) and the splits of FP32
// values into the MMAs' hi + lo operands.
#pragma once

#include "config.cuh"

// D = A·B + D (accumulate) and D = A·B + C (first product of a tile, C = the tile's ‖c‖²
// quad straight from shared memory, so no register moves build the initial accumulator).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma_tf32_from(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1,
                                              const float4 c) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
}

// The same value, out of a shuffle: ptxas can neither recompute it nor merge it with its source,
// so it keeps a register of its own for the whole kernel. A second copy of a value that an MMA
// needs in another register pair, or an address ptxas would otherwise rebuild from the thread
// index every step, costs one shuffle per kernel instead of moves per step.
__device__ __forceinline__ unsigned pinned(unsigned v) { return __shfl_sync(FULL_MASK, v, threadIdx.x & 31); }
#define PIN_IF_ROOM(v) (PIN_IF_ROOM_ENABLED ? pinned(v) : (unsigned)(v))
__device__ __forceinline__ const float* pinned_pointer(const float* p) {
  if (!PIN_IF_ROOM_ENABLED) return p;
  const unsigned long long bits = reinterpret_cast<unsigned long long>(p);
  return reinterpret_cast<const float*>((unsigned long long)pinned((unsigned)bits) |
                                        ((unsigned long long)pinned((unsigned)(bits >> 32)) << 32));
}

// Shared loads at a 32-bit shared address (a pinned one stays a register plus an immediate).
__device__ __forceinline__ float4 lds128(unsigned addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0,%1,%2,%3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ float lds32(unsigned addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ float2 lds64(unsigned addr) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0,%1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr) : "memory");
  return v;
}

__device__ __forceinline__ unsigned tf32_rna(float v) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return r;
}

// Points for the distances: hi rounded to nearest (integer add of half a TF32 ulp, then
// mask), lo = v − hi exactly. Rounding, not truncation, keeps the expansion unbiased: its
// error feeds the inertia directly.
__device__ __forceinline__ void split_nearest(float v, unsigned& hi, unsigned& lo) {
  hi = (__float_as_uint(v) + 0x1000u) & 0xffffe000u;
  lo = __float_as_uint(v - __uint_as_float(hi));
}

#if UPDATE_F16
// D += A·B with A 16×16 and B 16×8 in FP16, FP32 accumulators.
__device__ __forceinline__ void mma_f16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_f16_from(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1,
                                             const float4 c) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
}
// m16n8k8: A is two words (rows g and g+8, k = 2t, 2t+1), B one (k = 2t, 2t+1, column g).
__device__ __forceinline__ void mma_f16_k8(float (&d)[4], unsigned a0, unsigned a1, unsigned b) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(b));
}
__device__ __forceinline__ void mma_f16_k8_from(float (&d)[4], unsigned a0, unsigned a1, unsigned b, const float4 c) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a0), "r"(a1), "r"(b), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
}
// An 8×8 FP16 fragment (lane 4r + c: row r, columns 2c, 2c+1) transposed across the warp.
__device__ __forceinline__ unsigned transpose8x8(unsigned v) {
  unsigned r;
  asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(v));
  return r;
}

// Two values as FP16 hi and lo pairs (first value in the low half): hi rounded to nearest,
// lo = v − hi rounded again, so each value keeps ~22 bits inside FP16's range.
__device__ __forceinline__ void split_half2(float v0, float v1, unsigned& hi, unsigned& lo) {
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(hi) : "f"(v1), "f"(v0));
  float h0, h1;
  asm("{.reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.f32.f16 %0, l;\n cvt.f32.f16 %1, h;}\n"
      : "=f"(h0), "=f"(h1)
      : "r"(hi));
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(lo) : "f"(v1 - h1), "f"(v0 - h0));
}
#else
// Points for the update: truncating split, 2 instructions; the pair keeps ~21 bits, which
// is plenty for sums checked to 1e-4.
__device__ __forceinline__ void split_truncate(float v, unsigned& hi, unsigned& lo) {
  hi = __float_as_uint(v) & 0xffffe000u;
  lo = __float_as_uint(v - __uint_as_float(hi));
}
#endif

__device__ __forceinline__ void cp_async16(unsigned smem_dst, const float* gmem_src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_dst), "l"(gmem_src) : "memory");
}
__device__ __forceinline__ void cp_async4(unsigned smem_dst, const float* gmem_src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_dst), "l"(gmem_src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Where (row, dim) of a staged step lives. For N=16 a row is 4 chunks of 16 bytes and two
