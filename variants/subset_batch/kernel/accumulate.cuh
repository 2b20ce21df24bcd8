// One Lloyd step's assignment and sums for every active problem, in one launch.
//
// Grid: x = chunks of rows, y = blocks of BLOCK problems (the active list, compacted after
// each step by subset_compact). A block loads a tile of TILE_GROUPS·4 rows × every attribute
// into shared memory once, and each of its threads, one problem each, passes over the whole
// tile with its own columns and centroids: the table is read from memory once per block of
// problems, not once per problem. A thread adds each point into its own accumulators in shared
// memory ([cluster][quad][thread] float4: no two threads share a bank group in a quarter-warp,
// no atomics), then writes them, per chunk, to `partials`; subset_update reduces the chunks
// in FP64 in a fixed order, so a step is deterministic.
#pragma once
#include "assign.cuh"

// Adds x, and the point's weight into the count lane (1, or 1 + 4096·class with FOLD_CLASSES),
// into the accumulators of the cluster whose index the key carries. `stride` is a cluster's
// bytes (ACC_QUADS·BLOCK float4s) in a register the compiler cannot fold, so the address is one
// IMAD (FMA pipe) where a shift, a mask and a LEA went to the busier ALU pipe.
__device__ __forceinline__ void add_point(float4* __restrict__ acc, float key, const ProblemCentroids& c,
                                          unsigned stride, const float (&x)[S_COLS], float weight) {
  float4* slot = reinterpret_cast<float4*>(reinterpret_cast<char*>(acc) + key_index(key, c) * stride);
#pragma unroll
  for (int q = 0; q < ACC_QUADS; ++q) {
    float4 value = slot[q * BLOCK];
    float* lanes = reinterpret_cast<float*>(&value);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int index = q * 4 + e;
      if (index < S_COLS) lanes[e] += x[index < S_COLS ? index : 0];
      else if (index == S_COLS) lanes[e] += weight;
    }
    slot[q * BLOCK] = value;
  }
}

// The count lane of cluster j in a thread's accumulators.
__device__ __forceinline__ float* count_lane(float4* __restrict__ acc, int j) {
  return reinterpret_cast<float*>(acc + (j * ACC_QUADS + COUNT_QUAD) * BLOCK) + COUNT_COMPONENT;
}

// FOLD_CLASSES: the count lanes (points + 4096·class-1 points, at most 4095 points since the
// last flush) moved into the thread's integer counters (points, class-1 points).
__device__ __forceinline__ void flush_counts(float4* __restrict__ acc, int2* __restrict__ counters) {
#pragma unroll
  for (int j = 0; j < K_CLUSTERS; ++j) {
    float* lane = count_lane(acc, j);
    const unsigned packed = unsigned(*lane);  // an exact whole number below 2^24
    int2 total = counters[j * BLOCK];
    total.x += int(packed & ((1u << FOLD_SHIFT) - 1u));
    total.y += int(packed >> FOLD_SHIFT);
    counters[j * BLOCK] = total;
    *lane = 0.f;
  }
}

// The points of one tile; MASKED only for the table's last tile (rows < TILE_GROUPS·4).
template <bool MASKED>
__device__ __forceinline__ void accumulate_tile(const float4* __restrict__ tile, const float4* __restrict__ tile_weights,
                                                const int (&column)[S_COLS], const ProblemCentroids& c,
                                                float4* __restrict__ acc, unsigned stride, int rows) {
  const int groups = MASKED ? (rows + GROUP_ROWS - 1) / GROUP_ROWS : TILE_GROUPS;
  // One pointer per column, stepped a group at a time: an add per column and group, where
  // tile + g·N_ATTRS + column[d] took an IMAD and a LEA per column and group.
  const float4* at[S_COLS];
#pragma unroll
  for (int d = 0; d < S_COLS; ++d) at[d] = tile + column[d];
  UNROLL_GROUPS
  for (int g = 0; g < groups; ++g) {
    float4 v[S_COLS];
#pragma unroll
    for (int d = 0; d < S_COLS; ++d) v[d] = at[d][g * N_ATTRS];
    float4 weights = make_float4(1.f, 1.f, 1.f, 1.f);
    if (FOLD_CLASSES) weights = tile_weights[g];
#pragma unroll
    for (int p = 0; p < GROUP_ROWS; ++p) {
      if (MASKED && g * GROUP_ROWS + p >= rows) break;  // the same row for every thread: no divergence
      float x[S_COLS];
#pragma unroll
      for (int d = 0; d < S_COLS; ++d) x[d] = component(v[d], p);
      add_point(acc, nearest_key(c, x), c, stride, x, component(weights, p));
    }
  }
}

// A minimum of one block an SM leaves ptxas free to take the registers the unrolled group
// loop wants (two blocks of 256 still fit); without it ptxas held the kernel to 77 registers
// and an 8-byte local frame (SubsetBatchCudaHost.KernelsCompileForSm90WithoutLocalMemory).
extern "C" __global__ void __launch_bounds__(BLOCK, 1) subset_accumulate(
    const float4* __restrict__ quads,        // [group][N_ATTRS], padded to whole tiles
    const float4* __restrict__ weights,      // FOLD_CLASSES: [group] 1 + 4096·class per row, 0 past the end
    long long m, long long groups_per_chunk,  // a multiple of TILE_GROUPS
    const int* __restrict__ columns,          // [problem][S_COLS]
    const float* __restrict__ centroids,      // [problem][K_CLUSTERS][S_COLS], centred units
    const int* __restrict__ active_list, int active_count,
    float4* __restrict__ partials,            // [chunk][active slot][K_CLUSTERS][ACC_QUADS], counts in the count lane
    int* __restrict__ class1_partials) {      // FOLD_CLASSES: [chunk][active slot][K_CLUSTERS] class-1 points
  extern __shared__ float4 shared[];
  float4* tile = shared;                                   // TILE_GROUPS × N_ATTRS
  float4* tile_weights = tile + TILE_GROUPS * N_ATTRS;     // TILE_GROUPS (FOLD_CLASSES)
  float4* acc = tile_weights + (FOLD_CLASSES ? TILE_GROUPS : 0) + threadIdx.x;  // K × ACC_QUADS, stride BLOCK
  int2* counters = reinterpret_cast<int2*>(acc - threadIdx.x + K_CLUSTERS * ACC_QUADS * BLOCK) + threadIdx.x;  // K, stride BLOCK

  const int slot = blockIdx.y * BLOCK + threadIdx.x;
  const bool live = slot < active_count;
  // A warp past the end of the list only helps load the tiles: its threads would repeat the
  // first problem's work and write nothing.
  const bool warp_works = blockIdx.y * BLOCK + int(threadIdx.x & ~31u) < active_count;
  const int problem = active_list[live ? slot : 0];
  int column[S_COLS];
#pragma unroll
  for (int d = 0; d < S_COLS; ++d) column[d] = columns[problem * S_COLS + d];
  const unsigned opaque = unsigned(column[0]) >> 31;  // 0: columns are non-negative
  ProblemCentroids c;
  load_centroids(c, centroids + (long long)problem * K_CLUSTERS * S_COLS, opaque);
  const unsigned stride = unsigned(ACC_QUADS * BLOCK * 16) ^ opaque;
#pragma unroll
  for (int i = 0; i < K_CLUSTERS * ACC_QUADS; ++i) acc[i * BLOCK] = make_float4(0.f, 0.f, 0.f, 0.f);
  if (FOLD_CLASSES)
#pragma unroll
    for (int j = 0; j < K_CLUSTERS; ++j) counters[j * BLOCK] = make_int2(0, 0);

  const long long groups_total = (m + GROUP_ROWS - 1) / GROUP_ROWS;
  const long long first = (long long)blockIdx.x * groups_per_chunk;
  const long long last = min(first + groups_per_chunk, groups_total);
  int tiles_since_flush = 0;
  for (long long g0 = first; g0 < last; g0 += TILE_GROUPS) {
    __syncthreads();  // every thread is done with the previous tile
    load_block<BLOCK>(tile, quads + g0 * N_ATTRS, TILE_GROUPS * N_ATTRS);
    if (FOLD_CLASSES) load_block<BLOCK>(tile_weights, weights + g0, TILE_GROUPS);
    __syncthreads();
    if (!warp_works) continue;
    const long long rows = m - g0 * GROUP_ROWS;
    if (rows >= TILE_GROUPS * GROUP_ROWS) accumulate_tile<false>(tile, tile_weights, column, c, acc, stride, TILE_GROUPS * GROUP_ROWS);
    else accumulate_tile<true>(tile, tile_weights, column, c, acc, stride, int(rows));
    if (FOLD_CLASSES && ++tiles_since_flush == FLUSH_TILES) {
      flush_counts(acc, counters);
      tiles_since_flush = 0;
    }
  }
  if (!live) return;
  if (FOLD_CLASSES) flush_counts(acc, counters);
  const long long out_slot = (long long)blockIdx.x * active_count + slot;
  float4* out = partials + out_slot * (K_CLUSTERS * ACC_QUADS);
#pragma unroll
  for (int j = 0; j < K_CLUSTERS; ++j) {
    if (FOLD_CLASSES) *count_lane(acc, j) = float(counters[j * BLOCK].x);  // exact: a chunk has < 2^24 rows
#pragma unroll
    for (int q = 0; q < ACC_QUADS; ++q) out[j * ACC_QUADS + q] = acc[(j * ACC_QUADS + q) * BLOCK];
  }
  if (FOLD_CLASSES)
#pragma unroll
    for (int j = 0; j < K_CLUSTERS; ++j) class1_partials[out_slot * K_CLUSTERS + j] = counters[j * BLOCK].y;
}
