#pragma once
// Device side of greedy k-means++ (seed 001's GPU k-means++, with exact integer weights).
//
// Step j (j >= 1) draws L candidates from the weights of D², and one pass over the data:
//   * applies the centre chosen at step j-1 to D² (the "pending" centre: its distances were
//     already computed in the previous pass, but which candidate would win was not known until
//     that pass had finished; recomputing one distance is cheaper than storing L of them);
//   * sums, per tile of kTile points and per candidate b, q(min(D², d²(x, cand_b))), with
//     every point read once for all candidates.
// The select phase then sums the candidates' potentials, keeps the lowest, and draws the next
// step's candidates: a draw r in [0, potential) is located by a scan over the winner's tile
// sums (the first tile whose inclusive prefix exceeds r) and a scan inside that tile, whose
// weights it recomputes from D² and the winner (seed 001's prefix sums and A-ary search, with
// A = the number of tiles, then kTile). All sums are uint64 (kmeanspp_math.hpp), so the tile
// sums and the recomputed in-tile weights agree exactly and every draw is found.
// Step 0 is the same pass with the first centre as both the pending centre and the only
// candidate: it produces the tile sums of the first D².
#include <cuda_runtime.h>

#include <cub/block/block_scan.cuh>

#include "apps/seeding/kmeanspp.hpp"
#include "apps/seeding/distance_device.cuh"
#include "apps/seeding/kmeanspp_math.hpp"

namespace mk::seeding::gpu {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / 32;
// Two points per thread share every centre load from shared memory (one LDS.128 feeds 8 FMAs
// and 8 subtractions per centre), and give each thread two independent loads in flight.
constexpr int kPointsPerThread = 2;
constexpr int kUnitsPerTile = 4;               // a unit: kBlock points, one a thread
constexpr int kTile = kBlock * kUnitsPerTile;  // 1024 points
constexpr int kTileRun = kTile / kBlock;       // the select phase's run of points per thread

using u64 = unsigned long long;

struct State {
  const float* points;  // m x n, row-major
  int64_t m;
  int n;
  float* d2;            // m: squared distance to the nearest chosen centre
  int kmax;
  int candidates;       // L
  int tiles;
  int pass_blocks;      // blocks of every pass: block_sums has pass_blocks x L entries
  Quantizer quantize;
  Draws draws;
  int64_t* drawn;       // kmax x L: drawn[j*L + b] is step j's candidate b; drawn[0] = first centre
  int64_t* chosen;      // kmax
  u64* tile_sums;       // 2 x L x tiles: a pass's weight sums per candidate and tile, by step parity
  u64* block_sums;      // pass_blocks x L: the same, summed over each block's tiles
  int* failed;          // set when a draw was not found (an internal error; the host checks)
  bool stage_tile;      // the select phase stages a drawn tile's rows in shared memory (VEC4)
  // Per point (m), or null for all 1: the weights of k-means||'s candidates. The sampled and
  // summed quantity is then w·min(D², d²) (kmeanspp_math.hpp's `weighted`); the staged pass
  // has no weights (kmeanspp_gpu.cu takes the per-thread pass for a weighted run).
  const float* weights = nullptr;
};

struct Shared {
  union {
    typename cub::BlockScan<u64, kBlock>::TempStorage scan;
    u64 warp_sums[kWarps][kMaxCandidates];
  };
  u64 totals[kMaxCandidates];
  int found_tile;
  u64 before_tile;
  int64_t found_point;
};

// totals[b] = Σ over the block of values[b], for b < count (count is the same in every thread).
template <int MAXC>
__device__ void block_sum_many(const u64 (&values)[MAXC], int count, Shared& sh) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
#pragma unroll
  for (int b = 0; b < MAXC; ++b) {
    if (b < count) {
      u64 x = values[b];
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_down_sync(0xffffffffu, x, offset);
      if (lane == 0) sh.warp_sums[warp][b] = x;
    }
  }
  __syncthreads();
  if (int(threadIdx.x) < count) {
    u64 total = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += sh.warp_sums[w][threadIdx.x];
    sh.totals[threadIdx.x] = total;
  }
  __syncthreads();
}

// The points of `unit` u are u*kBlock + threadIdx.x: one per thread.
// A round processes two units that lie in the same tile (or one, at a tile's or the range's end).
template <int MAXC, bool VEC4>
__device__ __forceinline__ void pass_round(const State& s, int64_t unit, bool pair, int count, const float* rows,
                                           u64 (&acc)[MAXC]) {
  const int n = s.n;
  bool valid[kPointsPerThread];
  const float* x[kPointsPerThread];
  float before[kPointsPerThread];
  float to_pending[kPointsPerThread];
  float to_candidate[kPointsPerThread][MAXC];
#pragma unroll
  for (int p = 0; p < kPointsPerThread; ++p) {
    const int64_t i = (unit + p) * kBlock + threadIdx.x;
    valid[p] = (p == 0 || pair) && i < s.m;
    x[p] = s.points + size_t(valid[p] ? i : 0) * size_t(n);
    before[p] = valid[p] ? s.d2[i] : 0.0f;
    to_pending[p] = 0.0f;
#pragma unroll
    for (int b = 0; b < MAXC; ++b) to_candidate[p][b] = 0.0f;
  }
  if (VEC4) {
    // One chunk of four dimensions at a time: unrolling by two spilled at the 80-register cap.
#pragma unroll 1
    for (int d = 0; d < n; d += 4) {
      float4 xv[kPointsPerThread];
#pragma unroll
      for (int p = 0; p < kPointsPerThread; ++p)
        // Evict-first: the points stream through L2 once a step; D² (4 bytes a point) should
        // stay there between steps.
        xv[p] = valid[p] ? __ldcs(reinterpret_cast<const float4*>(x[p] + d)) : make_float4(0.f, 0.f, 0.f, 0.f);
      const float4 c = *reinterpret_cast<const float4*>(rows + d);
#pragma unroll
      for (int p = 0; p < kPointsPerThread; ++p) to_pending[p] = add_squares(to_pending[p], xv[p], c);
#pragma unroll
      for (int b = 0; b < MAXC; ++b) {
        if (b < count) {
          const float4 cb = *reinterpret_cast<const float4*>(rows + (1 + b) * n + d);
#pragma unroll
          for (int p = 0; p < kPointsPerThread; ++p) to_candidate[p][b] = add_squares(to_candidate[p][b], xv[p], cb);
        }
      }
    }
  } else {
#pragma unroll 1
    for (int d = 0; d < n; ++d) {
      float xv[kPointsPerThread];
#pragma unroll
      for (int p = 0; p < kPointsPerThread; ++p) xv[p] = valid[p] ? __ldcs(x[p] + d) : 0.0f;
      const float c = rows[d];
#pragma unroll
      for (int p = 0; p < kPointsPerThread; ++p) to_pending[p] = add_square(to_pending[p], xv[p], c);
#pragma unroll
      for (int b = 0; b < MAXC; ++b) {
        if (b < count) {
          const float cb = rows[(1 + b) * n + d];
#pragma unroll
          for (int p = 0; p < kPointsPerThread; ++p) to_candidate[p][b] = add_square(to_candidate[p][b], xv[p], cb);
        }
      }
    }
  }
#pragma unroll
  for (int p = 0; p < kPointsPerThread; ++p) {
    if (!valid[p]) continue;
    const float now = fminf(before[p], to_pending[p]);
    if (now < before[p]) s.d2[(unit + p) * kBlock + threadIdx.x] = now;  // late steps move few points
#pragma unroll
    for (int b = 0; b < MAXC; ++b)
      if (b < count)
        acc[b] += u64(s.quantize(weighted(s.weights, (unit + p) * kBlock + threadIdx.x, fminf(now, to_candidate[p][b]))));
  }
}

// This block's sums for one tile into the step's tile sums (a tile can be shared by two
// blocks: uint64 atomics, exact in any order) and into its running totals.
template <int MAXC>
__device__ __forceinline__ void flush_tile(const State& s, u64* tile_sums, int64_t tile, int count, u64 (&acc)[MAXC],
                                           u64& running, Shared& sh) {
  block_sum_many<MAXC>(acc, count, sh);
  if (int(threadIdx.x) < count) {
    atomicAdd(tile_sums + size_t(threadIdx.x) * size_t(s.tiles) + size_t(tile), sh.totals[threadIdx.x]);
    running += sh.totals[threadIdx.x];
  }
#pragma unroll
  for (int b = 0; b < MAXC; ++b) acc[b] = 0;
}

// The step's tile sums: two buffers by step parity, so the select phase of step j can zero
// the buffer of step j+1 while it reads step j's.
__device__ __forceinline__ u64* step_tile_sums(const State& s, int step) {
  return s.tile_sums + size_t(step & 1) * size_t(s.candidates) * size_t(s.tiles);
}

// The pass of step `step`. Block g takes the units [g·U/G, (g+1)·U/G): equal shares to one
// unit of 256 points, so no block waits on a last wave of tiles (with whole 1024-point tiles
// a block, 2M points over 396 blocks would leave 14 % of the blocks' time idle).
// rows (dynamic shared memory): the pending centre, then the candidates, n floats each.
// VEC4: n % 4 == 0, rows read as float4.
template <int MAXC, bool VEC4>
__device__ void pass_phase(const State& s, int step, float* rows, Shared& sh) {
  const int n = s.n;
  const int count = step == 0 ? 1 : s.candidates;
  const int64_t* drawn = s.drawn + size_t(step) * size_t(s.candidates);
  const int64_t pending = step == 0 ? drawn[0] : s.chosen[step - 1];
  for (int e = threadIdx.x; e < (1 + count) * n; e += kBlock) {
    const int row = e / n;
    const int64_t source = row == 0 ? pending : drawn[row - 1];
    rows[e] = s.points[size_t(source) * size_t(n) + size_t(e - row * n)];
  }
  __syncthreads();

  u64* tile_sums = step_tile_sums(s, step);
  const int64_t units = (s.m + kBlock - 1) / kBlock;
  const int64_t unit_begin = units * blockIdx.x / gridDim.x;
  const int64_t unit_end = units * (blockIdx.x + 1) / gridDim.x;
  u64 running = 0;  // thread b < count: this block's sum for candidate b
  u64 acc[MAXC];
#pragma unroll
  for (int b = 0; b < MAXC; ++b) acc[b] = 0;
  int64_t tile = unit_begin / kUnitsPerTile;
  for (int64_t unit = unit_begin; unit < unit_end;) {
    if (unit / kUnitsPerTile != tile) {
      flush_tile<MAXC>(s, tile_sums, tile, count, acc, running, sh);
      tile = unit / kUnitsPerTile;
    }
    const bool pair = unit + 1 < unit_end && (unit + 1) / kUnitsPerTile == tile;
    pass_round<MAXC, VEC4>(s, unit, pair, count, rows, acc);
    unit += pair ? 2 : 1;
  }
  if (unit_begin < unit_end) flush_tile<MAXC>(s, tile_sums, tile, count, acc, running, sh);
  if (int(threadIdx.x) < count) s.block_sums[size_t(blockIdx.x) * size_t(s.candidates) + threadIdx.x] = running;
}

// Rows of N % 4 == 0 floats staged in shared memory: an odd number of 16-byte chunks a row, so
// that the rows a quarter-warp reads fall in eight different bank groups.
__host__ __device__ constexpr int staged_row_floats(int n) { return ((n / 4) % 2 == 1) ? n : n + 4; }

// 16 bytes global → shared without a register round trip (sm_80+); a plain copy before it.
__device__ __forceinline__ void stage16(float* shared_dst, const float* global_src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = unsigned(__cvta_generic_to_shared(shared_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(global_src) : "memory");
#else
  *reinterpret_cast<float4*>(shared_dst) = __ldcs(reinterpret_cast<const float4*>(global_src));
#endif
}

__device__ __forceinline__ void stage_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Wait until at most `PENDING` committed groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void stage_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
#endif
}

// Starts the copy of `rows` consecutive rows of n floats from `source` into `buffer` (rows of
// staged_row_floats(n)), consecutive threads taking consecutive 16 bytes.
template <int THREADS>
__device__ __forceinline__ void stage_rows(const float* source, int n, int rows, float* buffer) {
  const int chunks_per_row = n / 4;
  const int stride = staged_row_floats(n);
  const int chunks = rows * chunks_per_row;
  // e = row · chunks_per_row + c, walked with its row and chunk kept rather than divided.
  int row = int(threadIdx.x) / chunks_per_row;
  int c = int(threadIdx.x) - row * chunks_per_row;
  const int row_step = THREADS / chunks_per_row;
  const int c_step = THREADS - row_step * chunks_per_row;
  for (int e = threadIdx.x; e < chunks; e += THREADS) {
    stage16(buffer + row * stride + 4 * c, source + size_t(e) * 4);
    row += row_step;
    c += c_step;
    if (c >= chunks_per_row) {
      c -= chunks_per_row;
      ++row;
    }
  }
}

// Dynamic shared memory of the select phase: the winner's row (in the pass's (1 + L)·N floats),
// then, staging a tile, its rows and their weights.
inline size_t select_bytes(int n, int candidates, bool stage_tile) {
  return size_t(1 + candidates) * size_t(n) * sizeof(float) +
         (stage_tile ? size_t(kTile) * (size_t(staged_row_floats(n)) * sizeof(float) + sizeof(u64)) : 0);
}

// The select phase after the pass of `step`: the winner becomes chosen[step]; blocks draw the
// next step's candidates (block b, b + gridDim.x, ... draws candidate b). rows: n floats.
template <int MAXC, bool VEC4>
__device__ void select_phase(const State& s, int step, float* rows, Shared& sh) {
  const int count = step == 0 ? 1 : s.candidates;
  u64 part[MAXC];
#pragma unroll
  for (int b = 0; b < MAXC; ++b) part[b] = 0;
  for (int g = threadIdx.x; g < s.pass_blocks; g += kBlock) {
#pragma unroll
    for (int b = 0; b < MAXC; ++b)
      if (b < count) part[b] += s.block_sums[size_t(g) * size_t(s.candidates) + b];
  }
  block_sum_many<MAXC>(part, count, sh);
  int best = 0;
  u64 potential = sh.totals[0];
  for (int b = 1; b < count; ++b)
    if (sh.totals[b] < potential) {  // strict: the lowest candidate number wins a tie
      best = b;
      potential = sh.totals[b];
    }
  const int64_t centre = s.drawn[size_t(step) * size_t(s.candidates) + best];
  if (blockIdx.x == 0 && threadIdx.x == 0) s.chosen[step] = centre;
  if (step + 1 >= s.kmax) return;

  const int n = s.n;
  for (int d = threadIdx.x; d < n; d += kBlock) rows[d] = s.points[size_t(centre) * size_t(n) + d];
  // Zero the next step's tile sums (read last by the previous select phase).
  u64* next_sums = step_tile_sums(s, step + 1);
  for (size_t e = size_t(blockIdx.x) * kBlock + threadIdx.x; e < size_t(s.candidates) * size_t(s.tiles);
       e += size_t(gridDim.x) * kBlock)
    next_sums[e] = 0;
  const u64* weights = step_tile_sums(s, step) + size_t(best) * size_t(s.tiles);
  const int per_thread = (s.tiles + kBlock - 1) / kBlock;
  const int t_begin = min(s.tiles, int(threadIdx.x) * per_thread);
  const int t_end = min(s.tiles, t_begin + per_thread);
  u64 tiles_mine = 0;
#pragma unroll 8
  for (int t = t_begin; t < t_end; ++t) tiles_mine += weights[t];

  for (int b = blockIdx.x; b < s.candidates; b += gridDim.x) {
    const uint64_t index = draw_index(step + 1, s.candidates, b);
    int64_t* out = s.drawn + size_t(step + 1) * size_t(s.candidates) + b;
    if (potential == 0) {
      // Every weight is 0: uniform over the points (kmeanspp_cpu.cpp does the same).
      if (threadIdx.x == 0) *out = int64_t(s.draws.below(index, uint64_t(s.m)));
      continue;
    }
    const u64 target = s.draws.below(index, potential);
    if (threadIdx.x == 0) {
      sh.found_tile = -1;
      sh.found_point = -1;
    }
    __syncthreads();  // also orders the rows' loads and the previous draw's use of sh
    u64 tiles_before = 0;
    cub::BlockScan<u64, kBlock>(sh.scan).ExclusiveSum(tiles_mine, tiles_before);
    if (tiles_before <= target && target - tiles_before < tiles_mine) {
      u64 before = tiles_before;
      for (int t = t_begin; t < t_end; ++t) {
        if (target - before < weights[t]) {
          sh.found_tile = t;
          sh.before_tile = before;
          break;
        }
        before += weights[t];
      }
    }
    __syncthreads();
    const int tile = sh.found_tile;
    if (tile < 0) {
      if (threadIdx.x == 0) {
        atomicExch(s.failed, 1);
        *out = 0;
      }
      continue;
    }
    const u64 rest = target - sh.before_tile;
    const int64_t first = int64_t(tile) * kTile + int64_t(threadIdx.x) * kTileRun;
    u64 w[kTileRun];
    u64 mine = 0;
    if (VEC4 && s.stage_tile) {
      // The tile's rows, one contiguous span, copied into shared memory by consecutive 16 bytes
      // a thread (each warp instruction four whole lines); thread t then takes rows t, t + 256,
      // ... (an odd number of chunks a row: no bank conflicts) and leaves their weights for the
      // runs of four. Each thread loading its own four rows had every warp instruction touch 32
      // lines, and was a third of this kernel's stall samples; staged, the kernel went from
      // 13.4 to 12.6 µs a step (ncu, K=1024 on 2M x 32, H200).
      const int stride = staged_row_floats(n);
      float* tile_rows = rows + (1 + s.candidates) * n;
      u64* tile_weights = reinterpret_cast<u64*>(tile_rows + kTile * stride);
      const int64_t tile_first = int64_t(tile) * kTile;
      stage_rows<kBlock>(s.points + size_t(tile_first) * size_t(n), n,
                         int(s.m - tile_first < kTile ? s.m - tile_first : int64_t(kTile)), tile_rows);
      stage_commit();
      stage_wait<0>();
      __syncthreads();
#pragma unroll
      for (int q = 0; q < kTileRun; ++q) {
        const int r = int(threadIdx.x) + q * kBlock;
        const float* x = tile_rows + r * stride;
        float dist = 0.0f;
        for (int d = 0; d < n; d += 4)
          dist = add_squares(dist, *reinterpret_cast<const float4*>(x + d), *reinterpret_cast<const float4*>(rows + d));
        const int64_t i = tile_first + r;
        tile_weights[r] = i < s.m ? u64(s.quantize(weighted(s.weights, i, fminf(s.d2[i], dist)))) : 0ull;
      }
      __syncthreads();
#pragma unroll
      for (int q = 0; q < kTileRun; ++q) {
        w[q] = tile_weights[threadIdx.x * kTileRun + q];
        mine += w[q];
      }
    } else {
      // The run's distances side by side, so their loads are in flight together (this latency
      // is paid once a step by the whole GPU); each in squared_distance's order.
      float dist[kTileRun];
#pragma unroll
      for (int q = 0; q < kTileRun; ++q) dist[q] = 0.0f;
      if (VEC4) {
        for (int d = 0; d < n; d += 4) {
          const float4 c = *reinterpret_cast<const float4*>(rows + d);
#pragma unroll
          for (int q = 0; q < kTileRun; ++q)
            if (first + q < s.m)
              dist[q] = add_squares(dist[q], *reinterpret_cast<const float4*>(s.points + size_t(first + q) * size_t(n) + d), c);
        }
      } else {
        for (int d = 0; d < n; ++d) {
#pragma unroll
          for (int q = 0; q < kTileRun; ++q)
            if (first + q < s.m) dist[q] = add_square(dist[q], s.points[size_t(first + q) * size_t(n) + d], rows[d]);
        }
      }
#pragma unroll
      for (int q = 0; q < kTileRun; ++q) {
        const int64_t i = first + q;
        w[q] = i < s.m ? u64(s.quantize(weighted(s.weights, i, fminf(s.d2[i], dist[q])))) : 0ull;
        mine += w[q];
      }
    }
    u64 points_before = 0;
    cub::BlockScan<u64, kBlock>(sh.scan).ExclusiveSum(mine, points_before);
    if (points_before <= rest && rest - points_before < mine) {
      u64 before = points_before;
#pragma unroll
      for (int q = 0; q < kTileRun; ++q) {
        if (rest - before < w[q]) {
          sh.found_point = first + q;
          break;
        }
        before += w[q];
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      if (sh.found_point < 0) atomicExch(s.failed, 1);
      *out = sh.found_point < 0 ? 0 : sh.found_point;
    }
  }
}

// The first centre's D² for every point, and the largest w·D² (as float bits: non-negative
// floats, +Inf included, order like their bit patterns). weights: per point, or null.
__global__ void __launch_bounds__(kBlock) first_distances(const float* points, int64_t m, int n, int64_t centre,
                                                          const float* weights, float* d2, unsigned* largest_bits) {
  const float* c = points + size_t(centre) * size_t(n);
  float largest = 0.0f;
  for (int64_t i = blockIdx.x * int64_t(kBlock) + threadIdx.x; i < m; i += int64_t(gridDim.x) * kBlock) {
    const float value = squared_distance(points + size_t(i) * size_t(n), c, n);
    d2[i] = value;
    largest = fmaxf(largest, weighted(weights, i, value));
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) largest = fmaxf(largest, __shfl_down_sync(0xffffffffu, largest, offset));
  if ((threadIdx.x & 31) == 0) atomicMax(largest_bits, __float_as_uint(largest));
}

// Three blocks of 256 threads an SM at L <= 8 (80 registers): the pass streams the points and
// needs loads in flight more than registers. Wider candidate sets get what they need.
constexpr int min_blocks(int max_candidates) { return max_candidates <= 8 ? 3 : 1; }
// The pass over narrow points (N <= 8) at four blocks an SM (64 registers, no spill):
// on an H100 the K=64 run on 8M x 8 took 10.67 ms against 11.30 ms at three blocks, while the
// K=1024 run on 2M x 32 took 276 ms against 212 ms (947d4c2 against a0a8b08, the same machine).
// At three blocks that pass ran at 35 % occupancy and 35 % of the H200's DRAM bandwidth (ncu,
// 7a986bd).
constexpr int kNarrowPassBlocks = 4;
constexpr int kNarrowPassMaxN = 8;

// The two phases of a step, two kernels launched back to back on one stream. One cooperative
// kernel for all steps (two grid barriers a step) was slower at both of issue 31's shapes on an
// H200 (0a98c74: 11.24 against 10.59 ms, 172.3 against 169.5 ms) and an H100 (a0a8b08), and was
// deleted.
template <int MAXC, bool VEC4, int BLOCKS = min_blocks(MAXC)>
__global__ void __launch_bounds__(kBlock, BLOCKS) seeding_pass(State s, int step) {
  extern __shared__ float4 dynamic_rows[];
  __shared__ Shared sh;
  pass_phase<MAXC, VEC4>(s, step, reinterpret_cast<float*>(dynamic_rows), sh);
}

template <int MAXC, bool VEC4>
__global__ void __launch_bounds__(kBlock) seeding_select(State s, int step) {
  extern __shared__ float4 dynamic_rows[];
  __shared__ Shared sh;
  select_phase<MAXC, VEC4>(s, step, reinterpret_cast<float*>(dynamic_rows), sh);
}

}  // namespace mk::seeding::gpu
