#pragma once
// gemm-window's mainloop pieces: the block's points converted once per point tile into a
// resident FP16 A tile (with each point's ‖x̃‖² and FP16 residual ‖x_h − x̃‖²), the FP16
// centroid table streamed in chunks of BN columns × 32 dims (cp.async, a ring of kStages slots,
// or the whole table resident), and one chunk's MMAs into the warp's 32 × BN/WN keys.
//
// Shared layouts: rows of 16-byte pieces (8 halves), piece c of row r stored at c XOR a
// function of r, so the 8 rows one ldmatrix phase reads fall in 8 different bank groups:
// c ^ (r & 7) when a row has a multiple of 8 pieces, c ^ ((r >> 1) & 3) when it has 4 mod 8.
#include <cuda_fp16.h>

#include "variants/gemm_window/block.cuh"
#include "variants/gemm_window/ptx.cuh"

namespace mk::gemm_window {

__device__ __forceinline__ int swizzle(int piece, int row, int pieces_per_row) {
  return (pieces_per_row & 7) == 0 ? piece ^ (row & 7) : piece ^ ((row >> 1) & 3);
}

// Dims 8·piece .. +7 of point p: (x − μ)·scale rounded to FP16, and the two squared norms.
__device__ __forceinline__ uint4 convert_piece(const KernelArgs& a, int64_t p, bool valid, int piece, float scale,
                                               float& norm2, float& residual2) {
  const int d0 = piece * 8;
  float v[8];
  if (valid && (a.n & 3) == 0 && d0 + 8 <= a.n) {
    const float4* x = reinterpret_cast<const float4*>(a.points + p * a.n + d0);
    const float4* mu = reinterpret_cast<const float4*>(a.center + d0);
    const float4 x0 = __ldg(x), x1 = __ldg(x + 1), m0 = __ldg(mu), m1 = __ldg(mu + 1);
    v[0] = x0.x - m0.x, v[1] = x0.y - m0.y, v[2] = x0.z - m0.z, v[3] = x0.w - m0.w;
    v[4] = x1.x - m1.x, v[5] = x1.y - m1.y, v[6] = x1.z - m1.z, v[7] = x1.w - m1.w;
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int d = d0 + e;
      v[e] = valid && d < a.n ? __ldg(a.points + p * a.n + d) - __ldg(a.center + d) : 0.f;
    }
  }
  uint32_t packed[4];
#pragma unroll
  for (int e = 0; e < 8; e += 2) {
    const float lo = v[e] * scale, hi = v[e + 1] * scale;  // a power of two: exact
    packed[e / 2] = pack_half2(lo, hi);
    const __half2 h = *reinterpret_cast<const __half2*>(&packed[e / 2]);
    // A float minus its FP16 rounding is exact (Sterbenz, or the value itself when it rounds to 0).
    const float rlo = __low2float(h) - lo, rhi = __high2float(h) - hi;
    norm2 = fmaf(lo, lo, norm2);
    norm2 = fmaf(hi, hi, norm2);
    residual2 = fmaf(rlo, rlo, residual2);
    residual2 = fmaf(rhi, rhi, residual2);
  }
  return make_uint4(packed[0], packed[1], packed[2], packed[3]);
}

// Fills the A tile with the block's BM points from base (rows past m are zeros) and writes
// xn2/ex per row. Every warp takes whole rows; no barrier inside (the caller syncs after).
template <class S>
__device__ __forceinline__ void fill_points(const KernelArgs& a, const Smem& s, int64_t base, float scale) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int pieces = a.npad / 8;
  if (pieces >= 32) {
    for (int row = warp; row < S::BM; row += S::kWarps) {
      const int64_t p = base + row;
      const bool valid = p < a.m;
      float norm2 = 0.f, residual2 = 0.f;
      for (int piece = lane; piece < pieces; piece += 32) {
        const uint4 value = convert_piece(a, p, valid, piece, scale, norm2, residual2);
        reinterpret_cast<uint4*>(s.a)[row * pieces + swizzle(piece, row, pieces)] = value;
      }
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) {
        norm2 += __shfl_xor_sync(kFullWarp, norm2, offset);
        residual2 += __shfl_xor_sync(kFullWarp, residual2, offset);
      }
      if (lane == 0) {
        s.xn2[row] = norm2;
        s.ex[row] = residual2;
      }
    }
  } else {
    // Several rows per warp pass: lane → (row lane/pieces, piece lane%pieces).
    const int rows_per_pass = 32 / pieces;
    const int local_row = lane / pieces, piece = lane - local_row * pieces;
    for (int row0 = warp * rows_per_pass; row0 < S::BM; row0 += S::kWarps * rows_per_pass) {
      if (lane < rows_per_pass && row0 + lane < S::BM) {
        s.xn2[row0 + lane] = 0.f;
        s.ex[row0 + lane] = 0.f;
      }
      __syncwarp();
      const int row = row0 + local_row;
      if (local_row < rows_per_pass && row < S::BM) {
        const int64_t p = base + row;
        float norm2 = 0.f, residual2 = 0.f;
        const uint4 value = convert_piece(a, p, p < a.m, piece, scale, norm2, residual2);
        reinterpret_cast<uint4*>(s.a)[row * pieces + swizzle(piece, row, pieces)] = value;
        atomicAdd(&s.xn2[row], norm2);
        atomicAdd(&s.ex[row], residual2);
      }
      __syncwarp();
    }
  }
}

// Chunk q of the table (centroid tile q / chunks, dims 32·(q % chunks) ..) into a slot of
// BN rows × 4 pieces. Every thread of the block takes part; completion is the caller's
// cp.async group.
template <class S>
__device__ __forceinline__ void copy_chunk(const KernelArgs& a, __half* slot, int q) {
  const int tile = q / a.chunks, kchunk = q - tile * a.chunks;
  const __half* source = a.table + int64_t(tile) * S::BN * a.npad + kchunk * kChunkDims;
  for (int i = threadIdx.x; i < S::BN * 4; i += S::kThreads) {
    const int row = i >> 2, piece = i & 3;
    cp_async_16(smem_address(slot + (row * 4 + swizzle(piece, row, 4)) * 8), source + int64_t(row) * a.npad + piece * 8);
  }
}

// One chunk (two k16 steps) of the warp's keys: acc[m-tile][n-tile][4] += A·B.
template <class S>
__device__ __forceinline__ void mma_chunk(const Smem& s, const __half* slot, int kchunk, int pieces,
                                          float (&acc)[2][S::kNTiles][4]) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wm = warp / S::WN, wn = warp - wm * S::WN;
  const int matrix = lane >> 3, row8 = lane & 7;
#pragma unroll
  for (int ks = 0; ks < 2; ++ks) {
    uint32_t afrag[2][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
      const int row = wm * 32 + mt * 16 + (matrix & 1) * 8 + row8;
      const int piece = kchunk * 4 + ks * 2 + (matrix >> 1);
      ldmatrix_x4(afrag[mt], smem_address(s.a + (row * pieces + swizzle(piece, row, pieces)) * 8));
    }
#pragma unroll
    for (int pair = 0; pair < S::kNTiles / 2; ++pair) {
      const int brow = wn * S::kWarpColumns + pair * 16 + (matrix >> 1) * 8 + row8;
      const int bpiece = ks * 2 + (matrix & 1);
      uint32_t b[4];
      ldmatrix_x4(b, smem_address(slot + (brow * 4 + swizzle(bpiece, brow, 4)) * 8));
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        mma_f16(acc[mt][2 * pair], afrag[mt], b[0], b[1]);
        mma_f16(acc[mt][2 * pair + 1], afrag[mt], b[2], b[3]);
      }
    }
  }
}

}  // namespace mk::gemm_window
