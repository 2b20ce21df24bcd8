#pragma once
// The FP16 tensor-core pieces of the key sweeps: m16n8k16 MMAs with FP32 accumulation, a
// lane's B fragments of one n-tile from the shared-memory image, and which centroid a lane's
// i-th key is.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace mk::tf32_window {

// Device helpers exist only where the kernel body does (sm_80+), and for the host pass.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
__device__ __forceinline__ uint32_t pack_half2(float low, float high) {
  const __half2 pair = __floats2half2_rn(low, high);  // low lands in the lower 16 bits
  return *reinterpret_cast<const uint32_t*>(&pair);
}

// (low − fp16(low))² + (high − fp16(high))² for a pair packed by pack_half2: exact
// differences (a float and its FP16 rounding are within a factor of two), squared in FP32.
__device__ __forceinline__ float half2_residual2(float low, float high, uint32_t packed) {
  const float2 back = __half22float2(*reinterpret_cast<const __half2*>(&packed));
  const float dl = low - back.x, dh = high - back.y;
  return fmaf(dl, dl, dh * dh);
}

// D = A·B + C for one m16n8k16 FP16 tile with FP32 accumulation.
__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1, float c0,
                                        float c1, float c2, float c3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c0), "f"(c1), "f"(c2), "f"(c3));
#else
  __trap();  // unreachable: can_implement refuses devices below sm_80
#endif
}

template <int H>
__device__ __forceinline__ void load_f16_fragments(const uint32_t* tile, uint32_t (&b)[H][2]) {
  if constexpr (H % 2 == 0) {
#pragma unroll
    for (int q = 0; q < H / 2; ++q) {
      const uint4 v = reinterpret_cast<const uint4*>(tile)[q];
      b[2 * q][0] = v.x, b[2 * q][1] = v.y, b[2 * q + 1][0] = v.z, b[2 * q + 1][1] = v.w;
    }
  } else {
#pragma unroll
    for (int q = 0; q < H; ++q) {
      const uint2 v = reinterpret_cast<const uint2*>(tile)[q];
      b[q][0] = v.x, b[q][1] = v.y;
    }
  }
}

template <int H>
__device__ __forceinline__ void f16_tile_keys(float (&d)[4], const uint32_t (&frag)[H][4], const uint32_t (&b)[H][2],
                                              const float4& cn) {
  mma_f16(d, frag[0], b[0][0], b[0][1], cn.x, cn.y, cn.z, cn.w);
#pragma unroll
  for (int s = 1; s < H; ++s) mma_f16(d, frag[s], b[s][0], b[s][1], d[0], d[1], d[2], d[3]);
}

// A lane's MMA operands for one n-tile: its B fragments and the C quad of norms.
// Shared memory holds the table, then the norm quads, then the count weights, so the
// look-ahead one past the last n-tile reads in-bounds values that go unused.
template <int H>
struct NTileOperands {
  uint32_t b[H][2];
  float4 cn;
};

template <int H>
__device__ __forceinline__ NTileOperands<H> load_ntile(const uint32_t* lane_image, const float4* norm_quads_s, int nt,
                                                       int t) {
  NTileOperands<H> tile;
  load_f16_fragments<H>(lane_image + nt * 32 * H * 2, tile.b);
  tile.cn = norm_quads_s[nt * 4 + t];
  return tile;
}

// Column of the lane's i-th key: n-tile i/2, parity i%2.
__device__ __forceinline__ int lane_column(int i, int t) { return (i >> 1) * 8 + 2 * t + (i & 1); }
#endif

}  // namespace mk::tf32_window
