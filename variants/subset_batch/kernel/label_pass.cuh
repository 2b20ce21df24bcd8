// The scored assignment of every problem for more than two classes, counting points per
// (cluster, class) for the majority vote: the assignment of each problem's last step, to the
// centroids that step started from (`scored`, kept by subset_update). Two classes count inside
// the steps (FOLD_CLASSES) and one class needs only the clusters' sizes, so this pass runs for
// three classes or more. The same tiling as subset_accumulate: a block's tile of rows (and
// their labels) serves LABEL_BLOCK problems, one per thread; a thread's counters are its own
// ([cluster·CLASSES + class][thread] ints in shared memory), written per chunk to
// `partial_counts` and reduced by subset_reduce_labels.
#pragma once
#include "assign.cuh"

template <bool MASKED>
__device__ __forceinline__ void label_tile(const float4* __restrict__ tile, const int* __restrict__ tile_labels,
                                           const int (&column)[S_COLS], const ProblemCentroids& c,
                                           int* __restrict__ counters, unsigned stride, int rows) {
  const int groups = MASKED ? (rows + GROUP_ROWS - 1) / GROUP_ROWS : TILE_GROUPS;
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
      if (MASKED && g * GROUP_ROWS + p >= rows) break;
      float x[S_COLS];
#pragma unroll
      for (int d = 0; d < S_COLS; ++d) x[d] = component(v[d], p);
      const float key = nearest_key(c, x);
      // One shared load per point: an int4 of the group's labels picked apart by p took a
      // 16-byte local-memory frame (SubsetBatchCudaHost.KernelsCompileForSm90WithoutLocalMemory).
      const int label = tile_labels[g * GROUP_ROWS + p];
      int* counter = reinterpret_cast<int*>(reinterpret_cast<char*>(counters) + key_index(key, c) * stride);
      counter[label * LABEL_BLOCK] += 1;
    }
  }
}

// Three blocks an SM: left to itself ptxas took 134 registers (one block) for this kernel, and
// at two blocks (92 registers) the label pass took 0.122 s against 0.116 s at three (80) on an
// H200 (reports/results/nvidia-h200/ab/explore-kernel.txt).
extern "C" __global__ void __launch_bounds__(LABEL_BLOCK, 3) subset_label_pass(
    const float4* __restrict__ quads, const int* __restrict__ labels,  // labels padded like the rows
    long long m, long long groups_per_chunk,
    const int* __restrict__ columns, const float* __restrict__ scored, int problems,  // scored: [problem][K][S]
    int* __restrict__ partial_counts) {  // [chunk][problem][K_CLUSTERS × CLASSES]
  extern __shared__ float4 shared[];
  float4* tile = shared;                                                        // TILE_GROUPS × N_ATTRS
  int* tile_labels = reinterpret_cast<int*>(shared + TILE_GROUPS * N_ATTRS);    // TILE_GROUPS × 4
  int* counters = tile_labels + TILE_GROUPS * GROUP_ROWS + threadIdx.x;         // K × CLASSES, stride LABEL_BLOCK

  const int problem_slot = blockIdx.y * LABEL_BLOCK + threadIdx.x;
  const bool live = problem_slot < problems;
  const bool warp_works = blockIdx.y * LABEL_BLOCK + int(threadIdx.x & ~31u) < problems;
  const int problem = live ? problem_slot : 0;
  int column[S_COLS];
#pragma unroll
  for (int d = 0; d < S_COLS; ++d) column[d] = columns[problem * S_COLS + d];
  const unsigned opaque = unsigned(column[0]) >> 31;  // 0: columns are non-negative
  ProblemCentroids c;
  load_centroids(c, scored + (long long)problem * K_CLUSTERS * S_COLS, opaque);
  const unsigned stride = unsigned(CLASSES * LABEL_BLOCK * 4) ^ opaque;  // one cluster's counters, in bytes
  for (int i = 0; i < K_CLUSTERS * CLASSES; ++i) counters[i * LABEL_BLOCK] = 0;

  const long long groups_total = (m + GROUP_ROWS - 1) / GROUP_ROWS;
  const long long first = (long long)blockIdx.x * groups_per_chunk;
  const long long last = min(first + groups_per_chunk, groups_total);
  for (long long g0 = first; g0 < last; g0 += TILE_GROUPS) {
    __syncthreads();
    load_block<LABEL_BLOCK>(tile, quads + g0 * N_ATTRS, TILE_GROUPS * N_ATTRS);
    load_block<LABEL_BLOCK>(reinterpret_cast<float4*>(tile_labels), reinterpret_cast<const float4*>(labels + g0 * GROUP_ROWS),
                            TILE_GROUPS);
    __syncthreads();
    if (!warp_works) continue;
    const long long rows = m - g0 * GROUP_ROWS;
    if (rows >= TILE_GROUPS * GROUP_ROWS) label_tile<false>(tile, tile_labels, column, c, counters, stride, TILE_GROUPS * GROUP_ROWS);
    else label_tile<true>(tile, tile_labels, column, c, counters, stride, int(rows));
  }
  if (!live) return;
  int* out = partial_counts + ((long long)blockIdx.x * problems + problem) * (K_CLUSTERS * CLASSES);
  for (int i = 0; i < K_CLUSTERS * CLASSES; ++i) out[i] = counters[i * LABEL_BLOCK];
}
