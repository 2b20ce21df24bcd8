// The final assignment of every problem, counting points per (cluster, class) for the
// majority vote, and the inertia. The same tiling as subset_accumulate: a block's tile of
// rows (and their labels) serves LABEL_BLOCK problems, one per thread; a thread's counters
// are its own ([cluster·CLASSES + class][thread] ints in shared memory), written per chunk
// to `partial_counts` and reduced by subset_reduce_labels.
#pragma once
#include "assign.cuh"

template <bool MASKED>
__device__ __forceinline__ void label_tile(const float4* __restrict__ tile, const int* __restrict__ tile_labels,
                                           const int (&column)[S_COLS], const ProblemCentroids& c,
                                           int* __restrict__ counters, float& inertia, int rows) {
  const int groups = MASKED ? (rows + GROUP_ROWS - 1) / GROUP_ROWS : TILE_GROUPS;
#pragma unroll 2
  for (int g = 0; g < groups; ++g) {
    float4 v[S_COLS];
#pragma unroll
    for (int d = 0; d < S_COLS; ++d) v[d] = tile[g * N_ATTRS + column[d]];
#pragma unroll
    for (int p = 0; p < GROUP_ROWS; ++p) {
      if (MASKED && g * GROUP_ROWS + p >= rows) break;
      float x[S_COLS];
      float norm = 0.f;
#pragma unroll
      for (int d = 0; d < S_COLS; ++d) {
        x[d] = component(v[d], p);
        norm = fmaf(x[d], x[d], norm);
      }
      const float key = nearest_key(c, x);
      // ‖x − c‖² = ‖x‖² + d'; rounding can take a near-zero distance below 0.
      inertia += fmaxf(0.f, norm + __uint_as_float(__float_as_uint(key) & ~INDEX_MASK));
      // One shared load per point: an int4 of the group's labels picked apart by p took a
      // 16-byte local-memory frame (SubsetBatchCudaHost.KernelsCompileForSm90WithoutLocalMemory).
      const int label = tile_labels[g * GROUP_ROWS + p];
      counters[(key_index(key) * CLASSES + label) * LABEL_BLOCK] += 1;
    }
  }
}

extern "C" __global__ void __launch_bounds__(LABEL_BLOCK) subset_label_pass(
    const float4* __restrict__ quads, const int* __restrict__ labels,  // labels padded like the rows
    long long m, long long groups_per_chunk,
    const int* __restrict__ columns, const float* __restrict__ centroids, int problems,
    int* __restrict__ partial_counts,       // [chunk][problem][K_CLUSTERS × CLASSES]
    float* __restrict__ partial_inertia) {  // [chunk][problem]
  extern __shared__ float4 shared[];
  float4* tile = shared;                                                        // TILE_GROUPS × N_ATTRS
  int* tile_labels = reinterpret_cast<int*>(shared + TILE_GROUPS * N_ATTRS);    // TILE_GROUPS × 4
  int* counters = tile_labels + TILE_GROUPS * GROUP_ROWS + threadIdx.x;         // K × CLASSES, stride LABEL_BLOCK

  const int problem_slot = blockIdx.y * LABEL_BLOCK + threadIdx.x;
  const bool live = problem_slot < problems;
  const int problem = live ? problem_slot : 0;
  ProblemCentroids c;
  load_centroids(c, centroids + (long long)problem * K_CLUSTERS * S_COLS);
  int column[S_COLS];
#pragma unroll
  for (int d = 0; d < S_COLS; ++d) column[d] = columns[problem * S_COLS + d];
  for (int i = 0; i < K_CLUSTERS * CLASSES; ++i) counters[i * LABEL_BLOCK] = 0;
  float inertia = 0.f;

  const long long groups_total = (m + GROUP_ROWS - 1) / GROUP_ROWS;
  const long long first = (long long)blockIdx.x * groups_per_chunk;
  const long long last = min(first + groups_per_chunk, groups_total);
  for (long long g0 = first; g0 < last; g0 += TILE_GROUPS) {
    __syncthreads();
    load_block<LABEL_BLOCK>(tile, quads + g0 * N_ATTRS, TILE_GROUPS * N_ATTRS);
    load_block<LABEL_BLOCK>(reinterpret_cast<float4*>(tile_labels), reinterpret_cast<const float4*>(labels + g0 * GROUP_ROWS),
                            TILE_GROUPS);
    __syncthreads();
    const long long rows = m - g0 * GROUP_ROWS;
    if (rows >= TILE_GROUPS * GROUP_ROWS) label_tile<false>(tile, tile_labels, column, c, counters, inertia, TILE_GROUPS * GROUP_ROWS);
    else label_tile<true>(tile, tile_labels, column, c, counters, inertia, int(rows));
  }
  if (!live) return;
  int* out = partial_counts + ((long long)blockIdx.x * problems + problem) * (K_CLUSTERS * CLASSES);
  for (int i = 0; i < K_CLUSTERS * CLASSES; ++i) out[i] = counters[i * LABEL_BLOCK];
  partial_inertia[(long long)blockIdx.x * problems + problem] = inertia;
}
