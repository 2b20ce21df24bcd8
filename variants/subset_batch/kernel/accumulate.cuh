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

// Adds x (and a count of 1) into the accumulators of the cluster whose index the key carries.
// `stride` is a cluster's bytes (ACC_QUADS·BLOCK float4s) in a register the compiler cannot
// fold, so the address is one IMAD (FMA pipe) where a shift, a mask and a LEA went to the
// busier ALU pipe.
__device__ __forceinline__ void add_point(float4* __restrict__ acc, float key, const ProblemCentroids& c,
                                          unsigned stride, const float (&x)[S_COLS]) {
  float4* slot = reinterpret_cast<float4*>(reinterpret_cast<char*>(acc) +
                                           (__float_as_uint(key) & ~c.keep_mask) * stride);
#pragma unroll
  for (int q = 0; q < ACC_QUADS; ++q) {
    float4 value = slot[q * BLOCK];
    float* lanes = reinterpret_cast<float*>(&value);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int index = q * 4 + e;
      if (index < S_COLS) lanes[e] += x[index < S_COLS ? index : 0];
      else if (index == S_COLS) lanes[e] += 1.f;
    }
    slot[q * BLOCK] = value;
  }
}

// The points of one tile; MASKED only for the table's last tile (rows < TILE_GROUPS·4).
template <bool MASKED>
__device__ __forceinline__ void accumulate_tile(const float4* __restrict__ tile, const int (&column)[S_COLS],
                                                const ProblemCentroids& c, float4* __restrict__ acc, unsigned stride,
                                                int rows) {
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
#pragma unroll
    for (int p = 0; p < GROUP_ROWS; ++p) {
      if (MASKED && g * GROUP_ROWS + p >= rows) break;  // the same row for every thread: no divergence
      float x[S_COLS];
#pragma unroll
      for (int d = 0; d < S_COLS; ++d) x[d] = component(v[d], p);
      add_point(acc, nearest_key(c, x), c, stride, x);
    }
  }
}

// A minimum of one block an SM leaves ptxas free to take the 124 registers the unrolled group
// loop wants (two blocks of 256 still fit); without it ptxas held the kernel to 77 registers
// and an 8-byte local frame (SubsetBatchCudaHost.KernelsCompileForSm90WithoutLocalMemory).
extern "C" __global__ void __launch_bounds__(BLOCK, 1) subset_accumulate(
    const float4* __restrict__ quads,        // [group][N_ATTRS], padded to whole tiles
    long long m, long long groups_per_chunk,  // a multiple of TILE_GROUPS
    const int* __restrict__ columns,          // [problem][S_COLS]
    const float* __restrict__ centroids,      // [problem][K_CLUSTERS][S_COLS], centred units
    const int* __restrict__ active_list, int active_count,
    float4* __restrict__ partials) {          // [chunk][active slot][K_CLUSTERS][ACC_QUADS]
  extern __shared__ float4 shared[];
  float4* tile = shared;                               // TILE_GROUPS × N_ATTRS
  float4* acc = shared + TILE_GROUPS * N_ATTRS + threadIdx.x;  // K_CLUSTERS × ACC_QUADS, stride BLOCK

  const int slot = blockIdx.y * BLOCK + threadIdx.x;
  const bool live = slot < active_count;
  // A thread past the end of the list repeats the first problem's work (it has to take part
  // in the tile loads) and writes nothing.
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

  const long long groups_total = (m + GROUP_ROWS - 1) / GROUP_ROWS;
  const long long first = (long long)blockIdx.x * groups_per_chunk;
  const long long last = min(first + groups_per_chunk, groups_total);
  for (long long g0 = first; g0 < last; g0 += TILE_GROUPS) {
    __syncthreads();  // every thread is done with the previous tile
    load_block<BLOCK>(tile, quads + g0 * N_ATTRS, TILE_GROUPS * N_ATTRS);
    __syncthreads();
    const long long rows = m - g0 * GROUP_ROWS;
    if (rows >= TILE_GROUPS * GROUP_ROWS) accumulate_tile<false>(tile, column, c, acc, stride, TILE_GROUPS * GROUP_ROWS);
    else accumulate_tile<true>(tile, column, c, acc, stride, int(rows));
  }
  if (!live) return;
  float4* out = partials + ((long long)blockIdx.x * active_count + slot) * (K_CLUSTERS * ACC_QUADS);
#pragma unroll
  for (int i = 0; i < K_CLUSTERS * ACC_QUADS; ++i) out[i] = acc[i * BLOCK];
}
