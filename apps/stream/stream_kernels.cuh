#pragma once
// Device side of the streaming k-means (stream.hpp, docs/streaming.md).
//
// One block runs a whole D² sampling (sharp_math.hpp): a chunk's k-means#, or the reduce
// phase's weighted k-means++ on all intermediate centres. Thread t owns the points
// [t·P, (t+1)·P) of its set, so a block-wide exclusive scan of the threads' integer weight sums
// is the prefix sum of seed 001 §3.3 in the points' own order; a draw is found by the one
// thread whose range holds it, walking its points (the A-ary search of seed 001 with A = the
// block's threads, then a walk of P points). That is the CPU path's order and arithmetic, so
// both choose the same points. A launch runs one block per chunk of a batch; chunks are
// independent, so there is no grid-wide step.
#include <cuda_runtime.h>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "apps/stream/sharp_math.hpp"

namespace mk::stream::gpu {

constexpr int kThreads = 512;
constexpr int kMaxPerRound = 64;  // ⌈3 ln k⌉ <= 64 for every k the host accepts
using u64 = unsigned long long;

struct BlockShared {
  union {
    typename cub::BlockScan<u64, kThreads>::TempStorage scan;
    typename cub::BlockReduce<float, kThreads>::TempStorage reduce;
    typename cub::BlockReduce<u64, kThreads>::TempStorage reduce_u64;
  };
  int64_t chosen[kMaxPerRound];
  float largest;
  int best;
};

struct Sampling {
  const float* points;   // rows x n
  int64_t rows;
  int n;
  const float* weights;  // rows, or null (every weight 1)
  int rounds;
  int per_round;
  int candidates;        // > 1: greedy k-means++ (per_round 1) after the first round
  Draws draws;
  float* d2;             // rows (scratch)
  int32_t* label;        // rows: the index in `chosen` of the nearest chosen point
  int64_t* chosen;       // rounds x per_round
  int* failed;           // 1: a draw was not found; 2: w·D² overflowed float32
};

__device__ __forceinline__ float weight_at(const Sampling& s, int64_t i) { return s.weights ? s.weights[i] : 1.0f; }

__device__ __forceinline__ float sampled(const Sampling& s, int round, int64_t i) {
  return round == 0 ? weight_at(s, i) : weighted_value(weight_at(s, i), s.d2[i]);
}

struct MaxOf {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

__device__ inline float block_max(float value, BlockShared& sh) {
  const float top = cub::BlockReduce<float, kThreads>(sh.reduce).Reduce(value, MaxOf());
  if (threadIdx.x == 0) sh.largest = top;
  __syncthreads();
  const float result = sh.largest;
  __syncthreads();
  return result;
}

__device__ void sample_rounds(const Sampling& s, BlockShared& sh) {
  const int64_t per = (s.rows + kThreads - 1) / kThreads;
  const int64_t begin = min(s.rows, int64_t(threadIdx.x) * per);
  const int64_t end = min(s.rows, begin + per);
  float largest = 0.0f;
  for (int64_t i = begin; i < end; ++i) {
    s.d2[i] = __int_as_float(0x7f800000);  // +Inf
    s.label[i] = -1;
    largest = fmaxf(largest, weight_at(s, i));
  }
  Quantizer q = quantizer_for(block_max(largest, sh), s.rows);
  for (int round = 0; round < s.rounds; ++round) {
    u64 mine = 0;
    for (int64_t i = begin; i < end; ++i) mine += q(sampled(s, round, i));
    u64 before = 0, total = 0;
    cub::BlockScan<u64, kThreads>(sh.scan).ExclusiveSum(mine, before, total);
    const bool greedy = round > 0 && s.candidates > 1;
    const int draws = greedy ? s.candidates : s.per_round;
    for (int b = 0; b < draws; ++b) {
      const uint64_t index = round_draw_index(round, draws, b);
      if (total == 0) {  // every weight 0: uniform, as the CPU path
        if (threadIdx.x == 0) sh.chosen[b] = int64_t(s.draws.below(index, uint64_t(s.rows)));
        continue;
      }
      const u64 target = s.draws.below(index, total);
      if (target < before || target - before >= mine) continue;
      u64 running = before;
      int64_t found = -1;
      for (int64_t i = begin; i < end; ++i) {
        running += q(sampled(s, round, i));
        if (running > target) {
          found = i;
          break;
        }
      }
      if (found < 0) atomicExch(s.failed, 1);
      sh.chosen[b] = found < 0 ? 0 : found;
    }
    __syncthreads();
    if (greedy) {  // the candidate of lowest Σ q(w·min(D², d²)) (the first on a tie), as the CPU path
      u64 lowest = 0;
      for (int b = 0; b < draws; ++b) {
        const float* c = s.points + size_t(sh.chosen[b]) * size_t(s.n);
        u64 part = 0;
        for (int64_t i = begin; i < end; ++i) {
          const float d2 = fminf(s.d2[i], seeding::squared_distance(s.points + size_t(i) * size_t(s.n), c, s.n));
          part += q(weighted_value(weight_at(s, i), d2));
        }
        const u64 potential = cub::BlockReduce<u64, kThreads>(sh.reduce_u64).Sum(part);
        if (threadIdx.x == 0 && (b == 0 || potential < lowest)) {
          lowest = potential;
          sh.best = b;
        }
        __syncthreads();  // the reduction's storage is reused by the next candidate
      }
      if (threadIdx.x == 0) sh.chosen[0] = sh.chosen[sh.best];
      __syncthreads();
    }
    if (int(threadIdx.x) < s.per_round) s.chosen[round * s.per_round + threadIdx.x] = sh.chosen[threadIdx.x];
    const int first = round * s.per_round;
    float top = 0.0f;
    for (int64_t i = begin; i < end; ++i) {
      const float* p = s.points + size_t(i) * size_t(s.n);
      float best = s.d2[i];
      int32_t label = s.label[i];
      for (int b = 0; b < s.per_round; ++b) {
        const float dist = seeding::squared_distance(p, s.points + size_t(sh.chosen[b]) * size_t(s.n), s.n);
        if (dist < best) {
          best = dist;
          label = first + b;
        }
      }
      s.d2[i] = best;
      s.label[i] = label;
      top = fmaxf(top, weighted_value(weight_at(s, i), best));
    }
    if (round == 0) {
      top = block_max(top, sh);
      if (!isfinite(top) && threadIdx.x == 0) atomicExch(s.failed, 2);
      q = quantizer_for(isfinite(top) ? top : 0.0f, s.rows);
    }
    __syncthreads();  // sh.chosen is rewritten by the next round
  }
}

struct ChunkBatch {
  const float* points;    // the batch's rows, row-major
  int64_t rows;           // in this batch
  int64_t chunk_points;   // C
  int n;
  int64_t first_chunk;    // global index of the batch's first chunk
  int k;
  int per_round;
  uint64_t seed_key;      // seeding::make_draws(seed).key: chunk c draws as stage_draws(seed, c)
  float* d2;              // batch chunks x C
  int32_t* label;         // batch chunks x C
  int64_t* chosen;        // batch chunks x S
  unsigned* counts;       // all chunks x S (zeroed)
  float* out_points;      // all chunks x S x n
  float* out_weights;     // all chunks x S
  int* failed;
};

// Block j reduces chunk first_chunk + j of the batch to its S weighted centres.
__global__ void __launch_bounds__(kThreads) reduce_chunks(ChunkBatch batch) {
  __shared__ BlockShared sh;
  const int64_t j = blockIdx.x;
  const int64_t chunk = batch.first_chunk + j;
  const int n = batch.n;
  const int64_t slots = int64_t(batch.k) * batch.per_round;
  const int64_t offset = j * batch.chunk_points;
  const int64_t rows = min(batch.chunk_points, batch.rows - offset);
  if (rows <= 0) return;
  const float* points = batch.points + size_t(offset) * size_t(n);
  float* out_points = batch.out_points + size_t(chunk) * size_t(slots) * size_t(n);
  float* out_weights = batch.out_weights + size_t(chunk) * size_t(slots);
  if (rows <= slots) {  // a short last chunk: its points are their own centres
    for (int64_t e = threadIdx.x; e < rows * n; e += kThreads) out_points[e] = points[e];
    for (int64_t e = threadIdx.x; e < rows; e += kThreads) out_weights[e] = 1.0f;
    return;
  }
  Sampling s;
  s.points = points;
  s.rows = rows;
  s.n = n;
  s.weights = nullptr;
  s.rounds = batch.k;
  s.per_round = batch.per_round;
  s.candidates = 1;
  s.draws = Draws{seeding::mix64(batch.seed_key + uint64_t(chunk + 1) * 0xd1b54a32d192ed03ULL)};
  s.d2 = batch.d2 + size_t(j) * size_t(batch.chunk_points);
  s.label = batch.label + size_t(j) * size_t(batch.chunk_points);
  s.chosen = batch.chosen + size_t(j) * size_t(slots);
  s.failed = batch.failed;
  sample_rounds(s, sh);
  unsigned* counts = batch.counts + size_t(chunk) * size_t(slots);
  const int64_t per = (rows + kThreads - 1) / kThreads;
  const int64_t begin = min(rows, int64_t(threadIdx.x) * per);
  const int64_t end = min(rows, begin + per);
  // Integers: any order gives the same counts. A label stays -1 only where w·D² overflowed
  // (s.failed is 2 and the host refuses the data).
  for (int64_t i = begin; i < end; ++i)
    if (s.label[i] >= 0) atomicAdd(counts + s.label[i], 1u);
  __syncthreads();
  for (int64_t e = threadIdx.x; e < slots * n; e += kThreads) {
    const int64_t slot = e / n;
    out_points[e] = points[size_t(s.chosen[slot]) * size_t(n) + size_t(e - slot * n)];
  }
  for (int64_t e = threadIdx.x; e < slots; e += kThreads) out_weights[e] = float(counts[e]);
}

// The reduce phase's weighted k-means++: one block over all intermediate centres.
__global__ void __launch_bounds__(kThreads) seed_final(Sampling s) {
  __shared__ BlockShared sh;
  sample_rounds(s, sh);
}

// Nearest of k centres (the lowest index on a tie) for every point, with its squared distance.
__global__ void assign_nearest(const float* points, int64_t rows, int n, const float* centres, int k, int32_t* label,
                               float* d2) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows; i += int64_t(gridDim.x) * blockDim.x) {
    const float* p = points + size_t(i) * size_t(n);
    float best = __int_as_float(0x7f800000);
    int32_t nearest = 0;
    for (int c = 0; c < k; ++c) {
      const float dist = seeding::squared_distance(p, centres + size_t(c) * size_t(n), n);
      if (dist < best) {
        best = dist;
        nearest = c;
      }
    }
    label[i] = nearest;
    d2[i] = best;
  }
}

constexpr int kSumThreads = 256;
constexpr int kSumColumns = 8;

// Block (c, g): columns [8g, 8g + 8) of cluster c's sums over the weighted points: Σ w·x per
// dimension (columns 0..n-1), Σ w (column n), Σ w·d² (column n+1). Every thread strides over
// all points in a fixed order and the block adds its threads in a fixed tree: the same bits on
// every run, with no atomics.
__global__ void __launch_bounds__(kSumThreads) cluster_sums(const float* points, const float* weights, int64_t rows,
                                                              int n, const int32_t* label, const float* d2,
                                                              double* sums) {
  __shared__ double partial[kSumColumns][kSumThreads];
  const int c = blockIdx.x;
  const int column0 = blockIdx.y * kSumColumns;
  const int columns = n + 2;
  double acc[kSumColumns];
#pragma unroll
  for (int j = 0; j < kSumColumns; ++j) acc[j] = 0.0;
  for (int64_t i = threadIdx.x; i < rows; i += kSumThreads) {
    if (label[i] != c) continue;
    const double w = weights[i];
    if (w == 0) continue;
#pragma unroll
    for (int j = 0; j < kSumColumns; ++j) {
      const int column = column0 + j;
      if (column < n) acc[j] += w * double(points[size_t(i) * size_t(n) + column]);
      else if (column == n) acc[j] += w;
      else if (column == n + 1) acc[j] += w * double(d2[i]);
    }
  }
#pragma unroll
  for (int j = 0; j < kSumColumns; ++j) partial[j][threadIdx.x] = acc[j];
  __syncthreads();
  for (int stride = kSumThreads / 2; stride > 0; stride >>= 1) {
    if (int(threadIdx.x) < stride)
#pragma unroll
      for (int j = 0; j < kSumColumns; ++j) partial[j][threadIdx.x] += partial[j][threadIdx.x + stride];
    __syncthreads();
  }
  if (int(threadIdx.x) < kSumColumns && column0 + int(threadIdx.x) < columns)
    sums[size_t(c) * size_t(columns) + column0 + threadIdx.x] = partial[threadIdx.x][0];
}

// The final pass over a batch: labels, and per block Σ d² in FP64 (a fixed tree) into
// block_sums[blockIdx.x]; the host adds the blocks in order.
__global__ void __launch_bounds__(kSumThreads) final_pass(const float* points, int64_t rows, int n,
                                                            const float* centres, int k, int32_t* label,
                                                            double* block_sums) {
  double sum = 0;
  for (int64_t i = blockIdx.x * int64_t(kSumThreads) + threadIdx.x; i < rows; i += int64_t(gridDim.x) * kSumThreads) {
    const float* p = points + size_t(i) * size_t(n);
    float best = __int_as_float(0x7f800000);
    int32_t nearest = 0;
    for (int c = 0; c < k; ++c) {
      const float dist = seeding::squared_distance(p, centres + size_t(c) * size_t(n), n);
      if (dist < best) {
        best = dist;
        nearest = c;
      }
    }
    if (label) label[i] = nearest;
    sum += double(best);
  }
  __shared__ typename cub::BlockReduce<double, kSumThreads>::TempStorage storage;
  const double total = cub::BlockReduce<double, kSumThreads>(storage).Sum(sum);
  if (threadIdx.x == 0) block_sums[blockIdx.x] = total;
}

}  // namespace mk::stream::gpu
