#pragma once
// gemm-window's mainloop pieces: the block's points converted once per point tile into a
// resident FP16 A tile (with each point's ‖x̃‖² and FP16 residual ‖x_h − x̃‖²), the FP16
// centroid table streamed in chunks of BN columns × 32 dims (cp.async, a ring of ring_stages
// stages of stage_chunks chunks each, or the whole table resident; the wgmma tile's ring of
// whole centroid tiles by bulk copy is kernel.cuh's), one chunk's MMAs into the warp's
// 32 × BN/WN keys, and the wgmma tile's whole centroid tile of wgmmas.
//
// Shared layouts: rows of 16-byte pieces (8 halves), piece c of row r stored at c XOR a
// function of r, so the 8 rows one ldmatrix phase reads fall in 8 different bank groups:
// c ^ (r & 7) when a row has a multiple of 8 pieces, c ^ ((r >> 1) & 3) when it has 4 mod 8.
// The wgmma tile's A tile is chunk-major instead, as the table chunks are (a_piece).
#include <cuda_fp16.h>

#include "variants/gemm_window/block.cuh"
#include "variants/gemm_window/ptx.cuh"
#include "variants/gemm_window/wgmma.cuh"

namespace mk::gemm_window {

__device__ __forceinline__ int swizzle(int piece, int row, int pieces_per_row) {
  return (pieces_per_row & 7) == 0 ? piece ^ (row & 7) : piece ^ ((row >> 1) & 3);
}

// The 16-byte piece `piece` of A tile row `row`, as an index into the tile. mma.sync: rows of
// all the pieces, swizzled as above. wgmma: the table chunks' layout (wgmma.cuh), chunk-major
// (k-chunk, row, 4 pieces XOR (row/2)%4), so one descriptor per m64 half and k16 step reads it.
template <class S>
__device__ __forceinline__ int a_piece(int row, int piece, int pieces) {
  if constexpr (S::kWgmma) return ((piece >> 2) * S::BM + row) * 4 + ((piece & 3) ^ ((row >> 1) & 3));
  else return row * pieces + swizzle(piece, row, pieces);
}

// A point's values from global memory (read-only path) or, staged, from shared memory.
template <bool Staged>
__device__ __forceinline__ float4 load_point4(const float4* p) {
  if constexpr (Staged) return *p;
  else return __ldg(p);
}
template <bool Staged>
__device__ __forceinline__ float load_point(const float* p) {
  if constexpr (Staged) return *p;
  else return __ldg(p);
}

// Dims 8·piece .. +7 of the point whose FP32 row is `row` as read (zeros past the data or
// the row's end, and for a null row). Loading apart from converting lets the fill issue
// several pieces' loads before it waits for any (fill_rows).
template <bool Staged>
__device__ __forceinline__ void load_piece(const KernelArgs& a, const float* row, int piece, float (&v)[8]) {
  const int d0 = piece * 8;
  if (row && (a.n & 3) == 0 && d0 + 8 <= a.n) {
    const float4* x = reinterpret_cast<const float4*>(row + d0);
    const float4 x0 = load_point4<Staged>(x), x1 = load_point4<Staged>(x + 1);
    v[0] = x0.x, v[1] = x0.y, v[2] = x0.z, v[3] = x0.w, v[4] = x1.x, v[5] = x1.y, v[6] = x1.z, v[7] = x1.w;
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = row && d0 + e < a.n ? load_point<Staged>(row + d0 + e) : 0.f;
  }
}

// The loaded piece (load_piece) of a point row (null past the data) as (x − μ)·scale rounded
// to FP16, and the two squared norms; zeros past the row's end.
__device__ __forceinline__ uint4 convert_piece(const KernelArgs& a, bool row, int piece, const float (&x)[8], float scale,
                                               float& norm2, float& residual2) {
  const int d0 = piece * 8;
  float v[8];
  if (row && (a.n & 3) == 0 && d0 + 8 <= a.n) {
    const float4* mu = reinterpret_cast<const float4*>(a.center + d0);
    const float4 m0 = __ldg(mu), m1 = __ldg(mu + 1);
    v[0] = x[0] - m0.x, v[1] = x[1] - m0.y, v[2] = x[2] - m0.z, v[3] = x[3] - m0.w;
    v[4] = x[4] - m1.x, v[5] = x[5] - m1.y, v[6] = x[6] - m1.z, v[7] = x[7] - m1.w;
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = row && d0 + e < a.n ? x[e] - __ldg(a.center + d0 + e) : 0.f;
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

// The FP32 row of tile row `row` (base + row is the point): from the staged buffer or the
// data; null past the data.
template <bool Staged>
__device__ __forceinline__ const float* point_row(const KernelArgs& a, const float* staged, int64_t base, int row) {
  if (base + row >= a.m) return nullptr;
  return Staged ? staged + row * a.n : a.points + (base + row) * a.n;
}

// Where a row has fewer than 32 pieces, several rows share a warp pass: lane → (row lane / seg,
// piece lane % seg), seg the pieces rounded up to a power of two, so a row's lanes meet in a
// shuffle reduction (shared FP32 atomics compile to a CAS loop on sm_90: 9 % of the stall
// samples on 128/1024/2M, ncu).
struct PassLanes {
  int seg, rows_per_pass, local_row, piece;
};
__device__ __forceinline__ PassLanes pass_lanes(int pieces, int lane) {
  PassLanes p;
  p.seg = 1;
  while (p.seg < pieces) p.seg <<= 1;
  p.rows_per_pass = 32 / p.seg;
  p.local_row = lane / p.seg;
  p.piece = lane - p.local_row * p.seg;
  return p;
}

// Fills the A tile with the block's BM points from base (rows past m are zeros) and writes
// xn2/ex per row. Every warp takes whole rows; no barrier inside (the caller syncs after).
// Where the tile fills ahead (config.hpp's fill_ahead, with the measurements), each thread
// issues a batch's loads (kFillItems pieces, or kFillPasses passes) before it converts any:
// one wait a batch instead of one a row or pass. The fill's first subtraction waiting on its
// point loads was 16 % of the main kernel's stall samples at 128/1024/2M (128x64/wgmma) and
// 15 % at 768/1000/1M (64x256/2x4; ncu source counters, H200, cda2be8). Larger batches spill
// on some tiles (ptxas: 4 pieces and 4 passes cost 128x128/4x1 16 bytes at sm_90).
constexpr int kFillItems = 2, kFillPasses = 4;
template <class S, bool Staged>
__device__ __forceinline__ void fill_rows_ahead(const KernelArgs& a, const Smem& s, int64_t base, float scale,
                                          const float* staged) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int pieces = a.npad / 8;
  if (pieces >= 32) {
    // Items are (row, piece a lane) in order, the warp's rows one after another, each with its
    // pieces_per_lane pieces; a batch is kItems consecutive items, so a row's norms may run
    // across batches (not with the wgmma tile, the one that fills ahead: its at most 416 dims
    // are at most two pieces a lane).
    const int pieces_per_lane = (pieces + 31) / 32;
    int row = warp, p = 0;  // the next item
    float norm2 = 0.f, residual2 = 0.f;
    while (row < S::BM) {  // warp-uniform
      constexpr int kItems = kFillItems;
      float v[kItems][8];
      int item_row[kItems], item_piece[kItems];
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        item_row[i] = row, item_piece[i] = p;
        if (row < S::BM && lane + 32 * p < pieces)
          load_piece<Staged>(a, point_row<Staged>(a, staged, base, row), lane + 32 * p, v[i]);
        if (++p == pieces_per_lane) p = 0, row += S::kWarps;
      }
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        const int r = item_row[i], piece = lane + 32 * item_piece[i];
        if (r >= S::BM) break;  // warp-uniform
        if (piece < pieces)
          reinterpret_cast<uint4*>(s.a)[a_piece<S>(r, piece, pieces)] =
              convert_piece(a, base + r < a.m, piece, v[i], scale, norm2, residual2);
        if (item_piece[i] == pieces_per_lane - 1) {  // the row is done
#pragma unroll
          for (int offset = 16; offset > 0; offset >>= 1) {
            norm2 += __shfl_xor_sync(kFullWarp, norm2, offset);
            residual2 += __shfl_xor_sync(kFullWarp, residual2, offset);
          }
          if (lane == 0) {
            s.xn2[r] = norm2;
            s.ex[r] = residual2;
          }
          norm2 = residual2 = 0.f;
        }
      }
    }
  } else {
    const PassLanes lanes = pass_lanes(pieces, lane);
    const int seg = lanes.seg, rows_per_pass = lanes.rows_per_pass, stride = S::kWarps * rows_per_pass;
    const int local_row = lanes.local_row, piece = lanes.piece;
    constexpr int kPasses = kFillPasses;
    for (int row0 = warp * rows_per_pass; row0 < S::BM; row0 += kPasses * stride) {
      float v[kPasses][8];
#pragma unroll
      for (int b = 0; b < kPasses; ++b) {
        const int row = row0 + b * stride + local_row;
        const bool mine = row < S::BM && piece < pieces;
        load_piece<Staged>(a, mine ? point_row<Staged>(a, staged, base, row) : nullptr, piece, v[b]);
      }
#pragma unroll
      for (int b = 0; b < kPasses; ++b) {
        if (row0 + b * stride >= S::BM) break;  // warp-uniform
        const int row = row0 + b * stride + local_row;
        const bool mine = row < S::BM && piece < pieces;
        float norm2 = 0.f, residual2 = 0.f;
        if (mine)
          reinterpret_cast<uint4*>(s.a)[a_piece<S>(row, piece, pieces)] =
              convert_piece(a, base + row < a.m, piece, v[b], scale, norm2, residual2);
        // seg is a power of two up to 32: the steps below it, unrolled (a loop on seg
        // branched once a step).
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) {
          if (offset < seg) {
            norm2 += __shfl_xor_sync(kFullWarp, norm2, offset);
            residual2 += __shfl_xor_sync(kFullWarp, residual2, offset);
          }
        }
        if (piece == 0 && row < S::BM) {
          s.xn2[row] = norm2;
          s.ex[row] = residual2;
        }
      }
    }
  }
}

// A piece at a time: the fill of the tiles that do not fill ahead (config.hpp's fill_ahead). Not
// fill_rows_ahead with batches of one: that compiled to more registers and spilled (ptxas -v,
// CUDA 13.0, on the CPU machine: 4 bytes at 128x128/4x1 sm_90, 8 at 64x128/2x2 sm_80).
template <class S, bool Staged>
__device__ __forceinline__ void fill_rows_one_at_a_time(const KernelArgs& a, const Smem& s, int64_t base, float scale,
                                                        const float* staged) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int pieces = a.npad / 8;
  if (pieces >= 32) {
    for (int row = warp; row < S::BM; row += S::kWarps) {
      const float* x = point_row<Staged>(a, staged, base, row);
      float norm2 = 0.f, residual2 = 0.f;
      for (int piece = lane; piece < pieces; piece += 32) {
        float v[8];
        load_piece<Staged>(a, x, piece, v);
        reinterpret_cast<uint4*>(s.a)[a_piece<S>(row, piece, pieces)] =
            convert_piece(a, x != nullptr, piece, v, scale, norm2, residual2);
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
    const PassLanes lanes = pass_lanes(pieces, lane);
    const int seg = lanes.seg, rows_per_pass = lanes.rows_per_pass;
    const int local_row = lanes.local_row, piece = lanes.piece;
    for (int row0 = warp * rows_per_pass; row0 < S::BM; row0 += S::kWarps * rows_per_pass) {
      const int row = row0 + local_row;
      const bool mine = row < S::BM && piece < pieces;
      float norm2 = 0.f, residual2 = 0.f;
      if (mine) {
        const float* x = point_row<Staged>(a, staged, base, row);
        float v[8];
        load_piece<Staged>(a, x, piece, v);
        reinterpret_cast<uint4*>(s.a)[a_piece<S>(row, piece, pieces)] =
            convert_piece(a, x != nullptr, piece, v, scale, norm2, residual2);
      }
      for (int offset = seg >> 1; offset > 0; offset >>= 1) {
        norm2 += __shfl_xor_sync(kFullWarp, norm2, offset);
        residual2 += __shfl_xor_sync(kFullWarp, residual2, offset);
      }
      if (piece == 0 && row < S::BM) {
        s.xn2[row] = norm2;
        s.ex[row] = residual2;
      }
    }
  }
}

template <class S, bool Staged>
__device__ __forceinline__ void fill_rows(const KernelArgs& a, const Smem& s, int64_t base, float scale,
                                          const float* staged) {
  if constexpr (S::kFillAhead) fill_rows_ahead<S, Staged>(a, s, base, scale, staged);
  else fill_rows_one_at_a_time<S, Staged>(a, s, base, scale, staged);
}

// The next point tile's rows into L2 while this one is worked on, so its fill's loads wait on
// L2 rather than on device memory (the fill issues its loads a batch at a time; fill_rows):
// a line a thread at a time, each thread's lines 128·kThreads bytes apart.
template <class S>
__device__ __forceinline__ void prefetch_point_tile(const KernelArgs& a, int64_t tile) {
  const int64_t base = tile * S::BM;
  const int64_t rows = a.m - base < S::BM ? a.m - base : S::BM;
  const char* start = reinterpret_cast<const char*>(a.points + base * a.n);
  const int64_t bytes = rows * a.n * int64_t(sizeof(float));
  for (int64_t at = int64_t(threadIdx.x) * 128; at < bytes + 127; at += int64_t(S::kThreads) * 128)
    prefetch_l2(start + (at < bytes ? at : bytes - 1));
}

// staged: the tile's rows in shared memory (points=staged), or null to read the data.
template <class S>
__device__ __forceinline__ void fill_points(const KernelArgs& a, const Smem& s, int64_t base, float scale,
                                            const float* staged) {
  if (staged) fill_rows<S, true>(a, s, base, scale, staged);
  else fill_rows<S, false>(a, s, base, scale, nullptr);
}

// points=staged: point tile `tile`'s FP32 rows (BM·n floats, contiguous, starting on 16 bytes:
// BM·n·4 is a multiple of 256 and the points start on 16) into a buffer, 16 bytes a cp.async;
// the piece that straddles the end of the data reads only what is there. Every thread takes
// part; the caller commits the group, waits for it and syncs before the rows are read.
template <class S>
__device__ __forceinline__ void stage_points(const KernelArgs& a, float* buffer, int64_t tile) {
  const int64_t base = tile * S::BM;
  const int64_t rows = a.m - base < S::BM ? a.m - base : S::BM;
  const int64_t floats = rows * a.n;
  const int pieces = int((floats + 3) >> 2);
  const float* source = a.points + base * a.n;
  for (int i = threadIdx.x; i < pieces; i += S::kThreads) {
    const int64_t left = floats - int64_t(i) * 4;
    if (left >= 4) cp_async_16(smem_address(buffer + 4 * i), source + 4 * i);
    else cp_async_16_partial(smem_address(buffer + 4 * i), source + 4 * i, int(left) * 4);
  }
}

// Chunk kchunk (dims 32·kchunk ..) of centroid tile `tile` into a slot of BN rows × 4 pieces:
// the table is stored as a slot is laid out (config.hpp's table_offset), so the chunk is one
// run of BN·4 16-byte pieces, thread i taking pieces i, i + kThreads, ... Every thread of the
// block takes part; completion is the caller's cp.async group. (Working out each piece's row
// and swizzle in every copy, from a row-major table, was 20 of the 141 instructions a warp
// spent a chunk at 128/1024/2M: ncu source counters, H200, b20fd27.)
template <class S>
__device__ __forceinline__ void copy_chunk(const KernelArgs& a, __half* slot, int tile, int kchunk) {
  constexpr int kPieces = S::BN * 4, kPasses = (kPieces + S::kThreads - 1) / S::kThreads;
  const int64_t chunk = int64_t(tile) * a.chunks + kchunk;
  const __half* source = a.table + chunk * S::BN * kChunkDims + threadIdx.x * 8;
  __half* target = slot + threadIdx.x * 8;
#pragma unroll
  for (int pass = 0; pass < kPasses; ++pass) {
    if (kPieces % S::kThreads == 0 || int(threadIdx.x) + pass * S::kThreads < kPieces)
      cp_async_16(smem_address(target + pass * S::kThreads * 8), source + pass * S::kThreads * 8);
  }
}

// The stage of stage_chunks chunks from chunk chunk0 of centroid tile `tile` (a stage never
// straddles a tile, since stage_chunks divides chunks) into consecutive chunk slots.
template <class S>
__device__ __forceinline__ void copy_stage(const KernelArgs& a, __half* slot, int tile, int chunk0) {
  for (int j = 0; j < a.stage_chunks; ++j) copy_chunk<S>(a, slot + j * S::BN * kChunkDims, tile, chunk0 + j);
}

// One chunk (two k16 steps) of the warp's keys: acc[m-tile][n-tile][4] += A·B.
// B's ldmatrix addresses are the slot's plus a lane offset and the pair's 1024 bytes (an
// immediate): the lane's row within a pair of n-tiles fixes its swizzle, (row/2)%4 of rows
// that are 16·pair + 8·(matrix/2) + row8 being (row8/2)%4, and k16 step 1 is piece XOR 2.
// Computing row and swizzle per load cost two integer instructions each, 16 of the 97 a warp
// spent a chunk at 768/1000/1M (ncu source counters, H200, b20fd27).
template <class S>
__device__ __forceinline__ void mma_chunk(const Smem& s, const __half* slot, int kchunk, int pieces,
                                          float (&acc)[2][S::kNTiles][4]) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wm = warp / S::WN, wn = warp - wm * S::WN;
  const int matrix = lane >> 3, row8 = lane & 7;
  const uint32_t b_lane = uint32_t((wn * S::kWarpColumns + (matrix >> 1) * 8 + row8) * 64 +
                                   (((matrix & 1) ^ ((row8 >> 1) & 3)) * 16));
  const uint32_t b_slot = smem_address(slot);
#pragma unroll
  for (int ks = 0; ks < 2; ++ks) {
    uint32_t afrag[2][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
      const int row = wm * 32 + mt * 16 + (matrix & 1) * 8 + row8;
      const int piece = kchunk * 4 + ks * 2 + (matrix >> 1);
      ldmatrix_x4(afrag[mt], smem_address(s.a + (row * pieces + swizzle(piece, row, pieces)) * 8));
    }
    const uint32_t b_step = b_slot + (b_lane ^ uint32_t(ks << 5));
#pragma unroll
    for (int pair = 0; pair < S::kNTiles / 2; ++pair) {
      uint32_t b[4];
      ldmatrix_x4(b, b_step + pair * 1024);
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        mma_f16(acc[mt][2 * pair], afrag[mt], b[0], b[1]);
        mma_f16(acc[mt][2 * pair + 1], afrag[mt], b[2], b[3]);
      }
    }
  }
}

// A whole centroid tile with wgmma: for each chunk, k16 step and m64 half, one m64nBNk16 over
// the warpgroup, A and B read by the tensor cores from shared memory (`tile_b`: the tile's
// chunks, consecutive); the first step starts the sums at zero. Descriptors are the two bases'
// plus each step's offset in 16-byte units (no carry: every address is below 2^18). The
// per-chunk form spent ~40 uniform instructions a chunk rebuilding them (ncu source counters,
// b20fd27). Asynchronous: the caller fences before, commits and waits before reading the
// accumulators or letting the slot be refilled.
template <class S>
__device__ __forceinline__ void wgmma_tile(const Smem& s, const __half* tile_b, int chunks,
                                           float (&acc)[2][S::kNTiles][4]) {
  const uint32_t a0 = descriptor_low(smem_address(s.a)), b0 = descriptor_low(smem_address(tile_b));
  constexpr uint32_t kAChunk = S::BM * kChunkDims * 2 / 16, kBChunk = S::BN * kChunkDims * 2 / 16;  // 16-byte units
  constexpr uint32_t kHalf = 64 * kChunkDims * 2 / 16, kStep = 32 / 16;
#pragma unroll
  for (int ks = 0; ks < 2; ++ks)
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
      wgmma_f16<S::BN>(&acc[mt][0][0], descriptor(a0 + mt * kHalf + ks * kStep), descriptor(b0 + ks * kStep), ks);
  for (int kchunk = 1; kchunk < chunks; ++kchunk) {
    const uint32_t a = a0 + kchunk * kAChunk, b = b0 + kchunk * kBChunk;
#pragma unroll
    for (int ks = 0; ks < 2; ++ks)
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
        wgmma_f16<S::BN>(&acc[mt][0][0], descriptor(a + mt * kHalf + ks * kStep), descriptor(b + ks * kStep), 1);
  }
}

}  // namespace mk::gemm_window
