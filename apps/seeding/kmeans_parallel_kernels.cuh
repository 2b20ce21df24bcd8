#pragma once
// Device side of k-means|| (kmeans_parallel_gpu.cu has the host side, docs/seeding.md the
// measurements). A round is: the potential Σ D² in fixed blocks, each row's draw, a scan of
// the draws that numbers the drawn rows in row order, their rows gathered, and one pass over
// the points that updates D² and the nearest candidate against the round's candidates. The
// values are the CPU path's (kmeans_parallel_math.hpp), so both draw the same candidates.
#include <cuda_runtime.h>

#include <cstdint>

#include "apps/seeding/kmeans_parallel_math.hpp"
#include "apps/seeding/distance_device.cuh"
#include "apps/seeding/kmeanspp_math.hpp"

namespace mk::seeding::parallel_gpu {

using gpu::add_squares;

// The potential's blocks (kParallelSumBlock rows) are copied into shared memory by the whole
// block, then summed in row order by one thread: the CPU path's order, so the same FP64 bits.
constexpr int kSumThreads = 128;

__global__ void __launch_bounds__(kSumThreads) potential_blocks(const float* d2, int64_t m, double* partial) {
  __shared__ float values[kParallelSumBlock];
  const int64_t first = int64_t(blockIdx.x) * kParallelSumBlock;
  const int count = int(m - first < kParallelSumBlock ? m - first : kParallelSumBlock);
  for (int e = threadIdx.x; e < count; e += kSumThreads) values[e] = d2[first + e];
  __syncthreads();
  if (threadIdx.x != 0) return;
  double sum = 0;
  for (int e = 0; e < count; ++e) sum += double(values[e]);
  partial[blockIdx.x] = sum;
}

__global__ void fill_infinity(float* d2, int64_t m) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < m; i += int64_t(gridDim.x) * blockDim.x)
    d2[i] = INFINITY;
}

// drawn[i] = 1 where row i is drawn in `round`, else 0 (the scan's input).
__global__ void draw_rows(const float* d2, int64_t m, CounterRng rng, int round, double scale, int64_t* drawn) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < m; i += int64_t(gridDim.x) * blockDim.x)
    drawn[i] = parallel_draw(rng, round, m, i, scale, d2[i]) ? 1 : 0;
}

// The drawn rows' numbers, in row order, at index[first + (inclusive prefix − 1)].
__global__ void number_drawn(const int64_t* drawn, const int64_t* prefix, int64_t m, int64_t first, int64_t* index) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < m; i += int64_t(gridDim.x) * blockDim.x)
    if (drawn[i]) index[first + prefix[i] - 1] = i;
}

// rows[c] = points[index[c]] for c < count (n floats each).
__global__ void gather_rows(const float* points, int n, const int64_t* index, int64_t count, float* rows) {
  const int64_t total = count * int64_t(n);
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = e / n;
    rows[e] = points[index[c] * int64_t(n) + (e - c * n)];
  }
}

// Candidates a tile of shared memory holds in the update passes.
constexpr int kTileCandidates = 64;
constexpr int kUpdateBlock = 256;

// Points a thread in the float4 pass: every candidate chunk loaded from shared memory feeds
// that many points' subtractions and multiply-adds. Registers hold P·N floats of points.
constexpr int points_per_thread(int nv) { return nv <= 4 ? 4 : nv <= 8 ? 2 : 1; }

// D² and the nearest candidate of every point against candidates [first, first + count) (rows:
// count × n, contiguous): a candidate replaces the nearest only when strictly nearer, in order,
// so ties keep the first drawn. N = 4·NV, rows and points 16-byte aligned.
template <int NV>
__global__ void __launch_bounds__(kUpdateBlock) update_nearest_vec4(const float* points, int64_t m, const float* rows,
                                                                    int first, int count, float* d2, int* nearest) {
  constexpr int P = points_per_thread(NV);
  __shared__ float4 tile[kTileCandidates * NV];
  float4 x[P][NV];
  float best[P];
  int index[P];
  bool valid[P];
  const int64_t base = int64_t(blockIdx.x) * (kUpdateBlock * P) + threadIdx.x;
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const int64_t i = base + int64_t(p) * kUpdateBlock;
    valid[p] = i < m;
    const float4* row = reinterpret_cast<const float4*>(points) + (valid[p] ? i : 0) * NV;
#pragma unroll
    for (int v = 0; v < NV; ++v) x[p][v] = row[v];
    best[p] = valid[p] ? d2[i] : 0.0f;
    index[p] = valid[p] ? nearest[i] : 0;
  }
  bool moved[P];
#pragma unroll
  for (int p = 0; p < P; ++p) moved[p] = false;
  const float4* source = reinterpret_cast<const float4*>(rows);
  for (int c0 = 0; c0 < count; c0 += kTileCandidates) {
    const int in_tile = count - c0 < kTileCandidates ? count - c0 : kTileCandidates;
    __syncthreads();  // the previous tile is no longer read
    for (int e = threadIdx.x; e < in_tile * NV; e += kUpdateBlock) tile[e] = source[int64_t(c0) * NV + e];
    __syncthreads();
#pragma unroll 2
    for (int c = 0; c < in_tile; ++c) {
      float dist[P];
#pragma unroll
      for (int p = 0; p < P; ++p) dist[p] = 0.0f;
#pragma unroll
      for (int v = 0; v < NV; ++v) {
        const float4 cv = tile[c * NV + v];
#pragma unroll
        for (int p = 0; p < P; ++p) dist[p] = add_squares(dist[p], x[p][v], cv);
      }
#pragma unroll
      for (int p = 0; p < P; ++p)
        if (dist[p] < best[p]) {
          best[p] = dist[p];
          index[p] = first + c0 + c;
          moved[p] = true;
        }
    }
  }
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const int64_t i = base + int64_t(p) * kUpdateBlock;
    if (valid[p] && moved[p]) {
      d2[i] = best[p];
      nearest[i] = index[p];
    }
  }
}

// Any N and alignment: one point a thread, its row read from global memory (cached) for each
// candidate of the tile, the tile's rows in dynamic shared memory (tile_candidates × n floats).
__global__ void __launch_bounds__(kUpdateBlock) update_nearest_rows(const float* points, int64_t m, int n,
                                                                    const float* rows, int first, int count,
                                                                    int tile_candidates, float* d2, int* nearest) {
  extern __shared__ float tile_rows[];
  const int64_t i = int64_t(blockIdx.x) * kUpdateBlock + threadIdx.x;
  const bool valid = i < m;
  const float* x = points + (valid ? i : 0) * int64_t(n);
  float best = valid ? d2[i] : 0.0f;
  int index = valid ? nearest[i] : 0;
  bool moved = false;
  for (int c0 = 0; c0 < count; c0 += tile_candidates) {
    const int in_tile = count - c0 < tile_candidates ? count - c0 : tile_candidates;
    __syncthreads();
    for (int e = threadIdx.x; e < in_tile * n; e += kUpdateBlock) tile_rows[e] = rows[int64_t(c0) * n + e];
    __syncthreads();
    if (!valid) continue;
    for (int c = 0; c < in_tile; ++c) {
      const float dist = squared_distance(x, tile_rows + c * n, n);
      if (dist < best) {
        best = dist;
        index = first + c0 + c;
        moved = true;
      }
    }
  }
  if (valid && moved) {
    d2[i] = best;
    nearest[i] = index;
  }
}

// weights[c] += the points whose nearest candidate is c (exact integer counts).
__global__ void count_nearest(const int* nearest, int64_t m, unsigned long long* weights) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < m; i += int64_t(gridDim.x) * blockDim.x)
    atomicAdd(weights + nearest[i], 1ull);
}

}  // namespace mk::seeding::parallel_gpu
