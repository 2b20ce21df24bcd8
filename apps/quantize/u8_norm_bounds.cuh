#pragma once
// gpu-u8-norm's bounded steps (Hamerly's bounds, exact): each pixel keeps its label, an upper
// bound on its distance to that centroid and a lower bound on its distance to every other one.
// A step first widens the bounds by how far the centroids moved since the pixel's last search
// (u8_drift, u8_bounds_filter); a pixel whose upper bound stays below its lower bound keeps its
// label, which is then its exact nearest centroid, and costs no search and no atomics. The
// others are queued and searched over all K as in the full pass (u8_bounded_search), and only
// a pixel whose label changes moves its bytes between the clusters' integer totals, which the
// run keeps from step to step (exact in any order). u8_publish then hands the totals and the
// inertia to the step's accumulators. docs/quantize.md ("Bounded steps") has the argument.
#include <cuda_runtime.h>

#include <cstdint>

#include "apps/quantize/u8_norm_search.cuh"
#include "variants/common/gpu_lloyd_state.cuh"

namespace mk::u8norm {

// How far each centroid moved since the previous step, rounded up, and the two largest moves.
struct Drift {
  float moved[kMaxPaletteK];
  float largest;
  float second_largest;
  int largest_index;
};

// The clusters' integer totals over every pixel's current label, kept by the run.
struct Totals {
  unsigned long long* sums;     // k × 3, the bytes
  unsigned long long* counts;   // k
  unsigned long long* squares;  // k, Σ ‖x‖²: the inertia without a pass (u8_publish)
};

// u < l with a relative margin of 2⁻¹⁸ on each side: it covers the FP64 roundings behind both
// bounds (about 2⁻⁵² relative) and the float conversions, all rounded outwards already.
__device__ __forceinline__ bool separated(float upper, float lower) {
  return __fmul_ru(upper, 1.0f + 0x1p-18f) < __fmul_rd(lower, 1.0f - 0x1p-18f);
}

__device__ __forceinline__ float rounded_up_root(double squared) {
  return __fsqrt_ru(__double2float_ru(squared));
}

// One block: the moves from `previous` to `centroids`, then previous = centroids, and the queue
// emptied for this step.
__global__ void __launch_bounds__(kBlock) u8_drift(const float* __restrict__ centroids, float* __restrict__ previous,
                                                   int k, Drift* __restrict__ drift, unsigned* __restrict__ queued) {
  __shared__ float moved[kMaxPaletteK];
  for (int j = threadIdx.x; j < k; j += kBlock) {
    double squared = 0;
    for (int d = 0; d < 3; ++d) {
      const double delta = double(centroids[3 * j + d]) - double(previous[3 * j + d]);
      squared += delta * delta;
      previous[3 * j + d] = centroids[3 * j + d];
    }
    moved[j] = __double2float_ru(sqrt(squared));
    drift->moved[j] = moved[j];
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float largest = 0.0f, second = 0.0f;
    int index = 0;
    for (int j = 0; j < k; ++j) {
      if (moved[j] > largest) second = largest, largest = moved[j], index = j;
      else second = fmaxf(second, moved[j]);
    }
    drift->largest = largest;
    drift->second_largest = second;
    drift->largest_index = index;
    *queued = 0;
  }
}

// Every pixel: its bounds widened by the drift; if they no longer separate its centroid from
// the others, the upper bound is recomputed exactly, and if that does not separate them
// either, the pixel joins the queue. Warp-uniform trips, so the whole warp takes part in the
// queue's ballot.
__global__ void __launch_bounds__(kBlock) u8_bounds_filter(const uchar4* __restrict__ pixels, int64_t m,
                                                           const float* __restrict__ centroids, int k,
                                                           const Drift* __restrict__ drift,
                                                           const uint8_t* __restrict__ labels,
                                                           float2* __restrict__ bounds, int* __restrict__ queue,
                                                           unsigned* __restrict__ queued) {
  __shared__ float moved[kMaxPaletteK];
  for (int j = threadIdx.x; j < k; j += kBlock) moved[j] = drift->moved[j];
  __syncthreads();
  const float largest = drift->largest, second_largest = drift->second_largest;
  const int largest_index = drift->largest_index;
  const int lane = threadIdx.x & 31;
  const int64_t stride = int64_t(gridDim.x) * kBlock;
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i - lane < m; i += stride) {
    bool search = false;
    if (i < m) {
      const int a = labels[i];
      const float2 b = bounds[i];
      float upper = __fadd_ru(b.x, moved[a]);
      // Another centroid came at most its move closer: the largest move of the others.
      const float lower = fmaxf(__fsub_rd(b.y, a == largest_index ? second_largest : largest), 0.0f);
      if (!separated(upper, lower)) {
        const uchar4 px = pixels[i];
        const double d0 = double(px.x) - double(centroids[3 * a]), d1 = double(px.y) - double(centroids[3 * a + 1]),
                     d2 = double(px.z) - double(centroids[3 * a + 2]);
        upper = rounded_up_root(d0 * d0 + d1 * d1 + d2 * d2);
        search = !separated(upper, lower);
      }
      bounds[i] = make_float2(upper, lower);
    }
    const unsigned ballot = __ballot_sync(0xffffffffu, search);
    if (ballot) {
      unsigned first = 0;
      if (lane == 0) first = atomicAdd(queued, unsigned(__popc(ballot)));
      first = __shfl_sync(0xffffffffu, first, 0);
      if (search) queue[first + unsigned(__popc(ballot & ((1u << lane) - 1u)))] = int(i);
    }
  }
}

// The search of every pixel (kAll: the first step, the totals zeroed) or of the queued ones:
// new label, new bounds, and the label's change in the totals.
template <bool kAll>
__global__ void __launch_bounds__(kBlock) u8_bounded_search(const uchar4* __restrict__ pixels, int64_t m,
                                                            const float* __restrict__ centroids, int k,
                                                            const int* __restrict__ queue,
                                                            const unsigned* __restrict__ queued,
                                                            uint8_t* __restrict__ labels, float2* __restrict__ bounds,
                                                            Totals totals) {
  const int64_t count = kAll ? m : int64_t(*queued);
  const int64_t per_block = int64_t(kBlock) * kPixelsPerThread;
  if (int64_t(blockIdx.x) * per_block >= count) return;  // the whole block: nothing queued for it

  __shared__ float4 table[kMaxPaletteK];
  __shared__ float scratch[kBlock / 32];
  __shared__ unsigned long long block_sums[kMaxPaletteK * 3];
  __shared__ unsigned long long block_counts[kMaxPaletteK];
  __shared__ unsigned long long block_squares[kMaxPaletteK];
  for (int j = threadIdx.x; j < kMaxPaletteK; j += kBlock) {
    block_counts[j] = block_squares[j] = 0;
    block_sums[3 * j] = block_sums[3 * j + 1] = block_sums[3 * j + 2] = 0;
  }
  const float window = build_table(table, scratch, centroids, k);  // its __syncthreads covers the zeroing

  // Adds (sign +1) or removes (−1, as a two's-complement add) one pixel from cluster j.
  auto move = [&](int j, const float (&x)[3], unsigned long long sign) {
    const unsigned r = unsigned(x[0]), g = unsigned(x[1]), b = unsigned(x[2]);
    atomicAdd(&block_sums[3 * j], sign * r);
    atomicAdd(&block_sums[3 * j + 1], sign * g);
    atomicAdd(&block_sums[3 * j + 2], sign * b);
    atomicAdd(&block_counts[j], sign);
    atomicAdd(&block_squares[j], sign * (unsigned long long)(r * r + g * g + b * b));
  };

  const int64_t step = int64_t(gridDim.x) * per_block;
  for (int64_t base = int64_t(blockIdx.x) * per_block + threadIdx.x; base < count; base += step) {
    float x[kPixelsPerThread][3];
    int64_t pixel[kPixelsPerThread];
#pragma unroll
    for (int p = 0; p < kPixelsPerThread; ++p) {
      const int64_t e = base + int64_t(p) * kBlock;
      pixel[p] = e < count ? (kAll ? e : int64_t(queue[e])) : -1;
      const uchar4 px = pixel[p] >= 0 ? pixels[pixel[p]] : make_uchar4(0, 0, 0, 0);
      x[p][0] = float(px.x);
      x[p][1] = float(px.y);
      x[p][2] = float(px.z);
    }
    Nearest near[kPixelsPerThread];
    search(table, k, window, x, near);
#pragma unroll
    for (int p = 0; p < kPixelsPerThread; ++p) {
      if (pixel[p] < 0) continue;
      const int j = near[p].index;
      const float upper = rounded_up_root(exact_distance(table, j, x[p]));
      // Every other centroid's exact score is at least the smallest float score of the others
      // less the window (each score is within 6·2⁻²⁴·S of exact; the window is 16·2⁻²⁴·S).
      const float other = j == near[p].float_index ? near[p].second : near[p].best;
      const double norm = double(x[p][0]) * x[p][0] + double(x[p][1]) * x[p][1] + double(x[p][2]) * x[p][2];
      const double lower_squared = fmax(double(other) - double(window) + norm, 0.0);
      const float lower = __fsqrt_rd(__double2float_rd(lower_squared));
      bounds[pixel[p]] = make_float2(upper, lower);
      if (kAll) {
        move(j, x[p], 1ULL);
      } else {
        const int previous = labels[pixel[p]];
        if (previous != j) {
          move(previous, x[p], ~0ULL);  // −1
          move(j, x[p], 1ULL);
        }
      }
      labels[pixel[p]] = uint8_t(j);
    }
  }
  __syncthreads();
  for (int j = threadIdx.x; j < k; j += kBlock) {
    if (block_counts[j]) atomicAdd(&totals.counts[j], block_counts[j]);
    if (block_squares[j]) atomicAdd(&totals.squares[j], block_squares[j]);
    for (int d = 0; d < 3; ++d)
      if (block_sums[3 * j + d]) atomicAdd(&totals.sums[3 * j + d], block_sums[3 * j + d]);
  }
}

// One block: the totals as the step's accumulators, and the inertia of the labels against the
// centroids they were chosen for, Σ_j (Σ‖x‖² − 2c_j·Σx + n_j‖c_j‖²) in FP64 from exact integers.
__global__ void __launch_bounds__(kBlock) u8_publish(const float* __restrict__ centroids, int k, Totals totals,
                                                     gpu::AccumulatorView acc) {
  __shared__ double partial[kBlock / 32];
  double inertia = 0;
  for (int j = threadIdx.x; j < k; j += kBlock) {
    const unsigned long long n = totals.counts[j];
    acc.counts[j] = n;
    double cross = 0, norm = 0;
    for (int d = 0; d < 3; ++d) {
      const double sum = double(totals.sums[3 * j + d]), c = double(centroids[3 * j + d]);
      acc.sums[3 * j + d] = sum;
      cross += c * sum;
      norm += c * c;
    }
    inertia += double(totals.squares[j]) - 2.0 * cross + double(n) * norm;
  }
  for (int offset = 16; offset > 0; offset >>= 1) inertia += __shfl_xor_sync(0xffffffffu, inertia, offset);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = inertia;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0;
    for (int w = 0; w < kBlock / 32; ++w) total += partial[w];
    *acc.inertia = total;
  }
}

}  // namespace mk::u8norm
