#pragma once
// The k-means++ pass with the points staged through shared memory (rows of N % 4 == 0 floats,
// 16-byte aligned). It computes what kmeanspp_kernels.cuh's pass computes, with the same
// operations in the same order (so the chosen centres are the same bits); what differs:
//
//   * How the points arrive. The pass there has each thread load its own point's row as
//     float4s, 32 rows (cache lines, at N = 32) a warp instruction, one chunk at a time. Here a
//     block copies a unit of 256 consecutive rows, one contiguous span, into shared memory with
//     16-byte cp.async copies (consecutive threads, consecutive 16 bytes), one unit ahead, and
//     each thread reads its points' rows from there. A row occupies an odd number of 16-byte
//     chunks in shared memory (one chunk of padding when N/4 is even), so the rows a quarter-warp
//     reads fall in eight different bank groups.
//   * The candidates are a compile-time count (staged_candidates), so the distance loop has no
//     per-candidate branch and its shared-memory loads issue ahead of the arithmetic.
//   * Common widths (N = 8, 16, 32) are compile-time constants: the row loop unrolls whole, the
//     shared-memory offsets are immediates, and the copy's divisions are shifts.
//
// On an H200 at K=1024 on 2M x 32 (L = 8) the first two took the pass from 140 µs to 97 µs a
// step (ncu, --clock-control none) and the whole seeding from 170 ms to 109 ms; with the third,
// the unrolled unit copies and the transposed flush below, 84 µs and 98 ms.
// reports/results/nvidia-h200/ab/seeding-staged-pass.txt has every step, and the variants that
// lost (three stages, one point a thread, skipping the pending centre's distance by a bit a
// candidate, programmatic dependent launches).
//
// Tiles, tile sums, block sums and the select phase are kmeanspp_kernels.cuh's.
#include <cuda_runtime.h>

#include "apps/seeding/kmeanspp_kernels.cuh"

namespace mk::seeding::gpu {

// Candidate rows the staged pass computes for L candidates: L itself up to 12 (2 + ⌊ln k⌋ is at
// most 12 below k = 22027), then 16 or 32, the rows past L copies of candidate 0 that nothing sums.
__host__ __device__ constexpr int staged_candidates(int candidates) {
  return candidates <= 12 ? candidates : candidates <= 16 ? 16 : 32;
}

// Dynamic shared memory of the staged pass: the step's rows (pending centre and C candidate
// rows), then two units of 256 staged rows.
inline size_t staged_pass_bytes(int n, int candidates) {
  return (size_t(1 + staged_candidates(candidates)) * size_t(n) +
          2 * size_t(kBlock) * size_t(staged_row_floats(n))) *
         sizeof(float);
}

// Starts the copy of unit `unit`'s rows into `buffer` (nothing past the last point).
template <int THREADS, int NC>
__device__ __forceinline__ void stage_unit(const State& s, int64_t unit, float* buffer) {
  const int64_t first = unit * kBlock;
  const int rows = int(s.m - first < kBlock ? s.m - first : int64_t(kBlock));
  const float* source = s.points + size_t(first) * size_t(NC ? NC : s.n);
  if constexpr (NC != 0 && THREADS % (NC / 4) == 0) {
    if (rows == kBlock) {
      // A whole unit at a compile-time width: each thread's copies are a fixed number, at fixed
      // offsets from its first, so the loop unrolls into copies with immediate offsets. With the
      // transposed flush, 59.1M -> 50.1M instructions a step at K=1024 on 2M x 32 (ncu).
      constexpr int kChunksPerRow = NC / 4;
      constexpr int kStride = staged_row_floats(NC);
      constexpr int kRowStep = THREADS / kChunksPerRow;
      const int row = int(threadIdx.x) / kChunksPerRow;
      const int c = int(threadIdx.x) % kChunksPerRow;
      float* dst = buffer + row * kStride + 4 * c;
      const float* src = source + size_t(threadIdx.x) * 4;
#pragma unroll
      for (int j = 0; j < kBlock * kChunksPerRow / THREADS; ++j) stage16(dst + j * kRowStep * kStride, src + j * THREADS * 4);
      return;
    }
  }
  stage_rows<THREADS>(source, NC ? NC : s.n, rows, buffer);
}

template <int WARPS>
struct StagedShared {
  u64 warp_sums[WARPS][kMaxCandidates];
};

// This block's sums for one tile into the step's tile sums and its running totals (flush_tile
// for WARPS warps).
// The lowest power of two >= c (c <= 32).
constexpr int pow2_at_least(int c) { return c <= 1 ? 1 : c <= 2 ? 2 : c <= 4 ? 4 : c <= 8 ? 8 : c <= 16 ? 16 : 32; }

// One level of staged_warp_sums: lanes with `OFFSET` set keep x[HALF..2·HALF), the others
// x[0..HALF), each adding its partner's copy of the half it keeps.
template <int HALF, int OFFSET, int W>
__device__ __forceinline__ void transpose_level(u64 (&x)[W], int lane) {
  const bool upper = (lane & OFFSET) != 0;
#pragma unroll
  for (int i = 0; i < HALF; ++i) {
    const u64 keep = upper ? x[i + HALF] : x[i];
    const u64 send = upper ? x[i] : x[i + HALF];
    x[i] = keep + __shfl_xor_sync(0xffffffffu, send, OFFSET);
  }
}

// The warp's sums of acc[b] into sh.warp_sums[warp][b] for b < count (C <= 16), zeroing acc.
// The C values are reduced together: at each of the first log2(W) levels (W = C rounded up to a
// power of two) a lane keeps half of its values and adds its partner's copy of that half, so a
// level moves half as many values as the one before, and lane l ends with candidate
// l / (32 / W)'s warp sum after the remaining plain levels: W - 1 + 5 - log2(W) shuffles of a
// u64 instead of 5·C. Integer sums: the order does not change a bit.
template <int C, int WARPS>
__device__ __forceinline__ void staged_warp_sums(u64 (&acc)[C], int count, int lane, int warp,
                                                 StagedShared<WARPS>& sh) {
  constexpr int W = pow2_at_least(C);
  u64 x[W];
#pragma unroll
  for (int b = C; b < W; ++b) x[b] = 0;
#pragma unroll
  for (int b = 0; b < C; ++b) {
    x[b] = acc[b];
    acc[b] = 0;
  }
  if constexpr (W >= 2) transpose_level<W / 2, 16>(x, lane);
  if constexpr (W >= 4) transpose_level<W / 4, 8>(x, lane);
  if constexpr (W >= 8) transpose_level<W / 8, 4>(x, lane);
  if constexpr (W >= 16) transpose_level<W / 16, 2>(x, lane);
  constexpr int kLevels = W == 1 ? 0 : W == 2 ? 1 : W == 4 ? 2 : W == 8 ? 3 : 4;
#pragma unroll
  for (int level = kLevels; level < 5; ++level) x[0] += __shfl_xor_sync(0xffffffffu, x[0], 16 >> level);
  const int lanes_per_value = 32 / W;
  const int b = lane / lanes_per_value;
  if (lane % lanes_per_value == 0 && b < count) sh.warp_sums[warp][b] = x[0];
}

// This block's sums for one tile into the step's tile sums and its running totals (flush_tile
// for WARPS warps).
template <int C, int WARPS>
__device__ __forceinline__ void staged_flush_tile(const State& s, u64* tile_sums, int64_t tile, int count,
                                                  u64 (&acc)[C], u64& running, StagedShared<WARPS>& sh) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if constexpr (C > 16) {
    // 32 values a lane: the transposed levels would not stay in registers.
#pragma unroll
    for (int b = 0; b < C; ++b) {
      u64 v = acc[b];
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
      if (lane == 0 && b < count) sh.warp_sums[warp][b] = v;
      acc[b] = 0;
    }
  } else {
    staged_warp_sums<C, WARPS>(acc, count, lane, warp, sh);
  }
  __syncthreads();
  if (int(threadIdx.x) < count) {
    u64 total = 0;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) total += sh.warp_sums[w][threadIdx.x];
    atomicAdd(tile_sums + size_t(threadIdx.x) * size_t(s.tiles) + size_t(tile), total);
    running += total;
  }
  // warp_sums is written again only after the barriers of at least one more unit.
}

// Distances of this thread's two points to the pending centre and to the C candidates, chunk
// by chunk of four dimensions, as pass_round's VEC4 branch.
template <int C, int NC>
__device__ __forceinline__ void staged_distances(const float* mine, int stride, const float* rows, int n,
                                                 float (&to_pending)[kPointsPerThread],
                                                 float (&to_candidate)[kPointsPerThread][C]) {
  constexpr int kThreads = kBlock / kPointsPerThread;
#pragma unroll
  for (int d = 0; d < (NC ? NC : n); d += 4) {
    float4 xv[kPointsPerThread];
#pragma unroll
    for (int p = 0; p < kPointsPerThread; ++p) xv[p] = *reinterpret_cast<const float4*>(mine + p * kThreads * stride + d);
    const float4 c = *reinterpret_cast<const float4*>(rows + d);
#pragma unroll
    for (int p = 0; p < kPointsPerThread; ++p) to_pending[p] = add_squares(to_pending[p], xv[p], c);
#pragma unroll
    for (int b = 0; b < C; ++b) {
      const float4 cb = *reinterpret_cast<const float4*>(rows + (1 + b) * (NC ? NC : n) + d);
#pragma unroll
      for (int p = 0; p < kPointsPerThread; ++p) to_candidate[p][b] = add_squares(to_candidate[p][b], xv[p], cb);
    }
  }
}

// The pass of `step` (pass_phase's contract: the same tile sums and block sums, the same D²).
// Two points a thread (rows t and t + 128 of each unit). NC: N as a compile-time constant, or 0.
// Dynamic shared memory: rows ((1 + C)·N floats), then two units of staged rows.
template <int C, int NC>
__global__ void __launch_bounds__(kBlock / kPointsPerThread) seeding_pass_staged(State s, int step) {
  constexpr int P = kPointsPerThread;
  constexpr int kThreads = kBlock / P;
  constexpr int kWarpsHere = kThreads / 32;
  extern __shared__ float4 dynamic_shared[];
  __shared__ StagedShared<kWarpsHere> sh;
  float* rows = reinterpret_cast<float*>(dynamic_shared);
  const int n = NC ? NC : s.n;
  float* staged = rows + (1 + C) * n;  // 16-byte aligned: n % 4 == 0
  const int stride = staged_row_floats(n);
  const int stage_floats = kBlock * stride;

  const int64_t units = (s.m + kBlock - 1) / kBlock;
  const int64_t unit_begin = units * blockIdx.x / gridDim.x;
  const int64_t unit_end = units * (blockIdx.x + 1) / gridDim.x;

  // The first unit's copy goes out before the centres are gathered: it does not depend on them.
  if (unit_begin < unit_end) stage_unit<kThreads, NC>(s, unit_begin, staged);
  stage_commit();

  // Row 0: the pending centre; rows 1..C: the candidates, those past `count` a copy of the first
  // (at step 0 every row is the first centre).
  const int count = step == 0 ? 1 : s.candidates;  // the candidates whose sums count
  const int64_t* drawn = s.drawn + size_t(step) * size_t(s.candidates);
  const int64_t pending = step == 0 ? drawn[0] : s.chosen[step - 1];
  for (int e = threadIdx.x; e < (1 + C) * n; e += kThreads) {
    const int row = e / n;
    const int64_t source = row == 0 ? pending : drawn[row - 1 < count ? row - 1 : 0];
    rows[e] = s.points[size_t(source) * size_t(n) + size_t(e - row * n)];
  }

  u64* tile_sums = step_tile_sums(s, step);
  u64 running = 0;  // thread b < count: this block's sum for candidate b
  u64 acc[C];
#pragma unroll
  for (int b = 0; b < C; ++b) acc[b] = 0;
  int64_t tile = unit_begin / kUnitsPerTile;
  for (int64_t unit = unit_begin; unit < unit_end; ++unit) {
    const int64_t k = unit - unit_begin;
    // Refill the buffer the previous unit read (the barrier at that unit's end freed it).
    if (unit + 1 < unit_end) stage_unit<kThreads, NC>(s, unit + 1, staged + int((k + 1) & 1) * stage_floats);
    stage_commit();
    bool valid[P];
    int64_t index[P];
    float before[P];  // read here, used after the distances: its latency hides behind them
#pragma unroll
    for (int p = 0; p < P; ++p) {
      index[p] = unit * kBlock + threadIdx.x + p * kThreads;
      valid[p] = index[p] < s.m;
      before[p] = valid[p] ? s.d2[index[p]] : 0.0f;
    }
    stage_wait<1>();
    __syncthreads();  // this unit's rows (and, the first time, the step's rows) are in place

    if (unit / kUnitsPerTile != tile) {
      staged_flush_tile<C, kWarpsHere>(s, tile_sums, tile, count, acc, running, sh);
      tile = unit / kUnitsPerTile;
    }
    float to_pending[P];
    float to_candidate[P][C];
#pragma unroll
    for (int p = 0; p < P; ++p) {
      to_pending[p] = 0.0f;
#pragma unroll
      for (int b = 0; b < C; ++b) to_candidate[p][b] = 0.0f;
    }
    // A row past the last point reads whatever its buffer holds; nothing uses it.
    staged_distances<C, NC>(staged + int(k & 1) * stage_floats + threadIdx.x * stride, stride, rows, n, to_pending,
                            to_candidate);
#pragma unroll
    for (int p = 0; p < P; ++p) {
      if (!valid[p]) continue;
      const float now = fminf(before[p], to_pending[p]);
      if (now < before[p]) s.d2[index[p]] = now;
#pragma unroll
      for (int b = 0; b < C; ++b) acc[b] += u64(s.quantize(fminf(now, to_candidate[p][b])));
    }
    __syncthreads();  // every thread is done with this buffer before a later unit refills it
  }
  stage_wait<0>();
  if (unit_begin < unit_end) staged_flush_tile<C, kWarpsHere>(s, tile_sums, tile, count, acc, running, sh);
  if (int(threadIdx.x) < count) s.block_sums[size_t(blockIdx.x) * size_t(s.candidates) + threadIdx.x] = running;
}

}  // namespace mk::seeding::gpu
