#pragma once
// The update: each point's coordinates to FP64 global sums, the step's exact inertia from
// the same loads, and a block's counts and inertia to global memory at its end. finalize()
// divides.
#include <cuda_runtime.h>

#include <cstdint>

#include "variants/tf32_window/steps.cuh"
#include "variants/tf32_window/window_args.hpp"

namespace mk::tf32_window {

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
// A block's last act: the warps' inertia and the shared counts to global memory.
__device__ __forceinline__ void flush_block_totals(const WindowArgs& a, double inertia, const unsigned* counts_s) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) inertia += __shfl_xor_sync(0xffffffffu, inertia, offset);
  if ((threadIdx.x & 31) == 0 && inertia != 0.0) atomicAdd(a.inertia, inertia);
  __syncthreads();
  for (int i = threadIdx.x; i < a.k; i += blockDim.x)
    if (counts_s[i]) atomicAdd(&a.counts[i], static_cast<unsigned long long>(counts_s[i]));
}

// Dimension d of the step's 32 points (0 past the data), one coalesced load per point. A
// whole step addresses them with 32-bit offsets from one pointer and no per-point predicate
// (the general form cost ~12 instructions per load).
__device__ __forceinline__ void load_step_dimension(const WindowArgs& a, int64_t base, int rows, int d,
                                                    float (&values)[32]) {
  if (rows == 32 && d < a.n) {
    const float* column = a.points + base * a.n + d;
#pragma unroll
    for (int row = 0; row < 32; ++row) values[row] = __ldg(column + row * a.n);
  } else {
#pragma unroll
    for (int row = 0; row < 32; ++row)
      values[row] = row < rows && d < a.n ? __ldg(a.points + (base + row) * a.n + d) : 0.f;
  }
}

// The update (lane d adds dimension d of every point) and the step's exact inertia, from
// values loaded before the arbitration. update=global: one coalesced FP64 RED per point into
// the global sums; update=shared (Shared): x − μ into the block's FP32 sums in shared memory,
// 32 addresses of one centroid row per instruction (a CAS loop on sm_90), which pays where
// the REDs serialise on few addresses (K·N ≤ 4096: layout.hpp's kSharedSumsUpTo).
// The inertia is a total, so lane d sums (x_d − c_d)² over the step's points: an FP32 sum of
// 32 squares, as a point's distance over 32 dims would be, without a transpose to bring each
// point's terms together.
template <bool Shared>
__device__ __forceinline__ void update_and_inertia(const WindowArgs& a, const WarpScratch& s, int64_t base, int rows,
                                                   float (&update_values)[32], float* sums_s, const float* center_f,
                                                   double& inertia) {
  const int lane = threadIdx.x & 31;
  for (int d0 = 0; d0 < a.n; d0 += 32) {
    const int d = d0 + lane;
    if (d0 > 0) load_step_dimension(a, base, rows, d, update_values);
    const float mu = Shared && d < a.n ? center_f[d] : 0.f;
    float squares = 0.f;
    // Sixteen points at a time: their centroid loads share one round trip.
    if (rows == 32 && d < a.n) {
      // A whole step: 32-bit element offsets (K·N < 2^31) and no per-point branches.
#pragma unroll
      for (int group = 0; group < 32; group += 16) {
        int offset[16];
        float centroid_values[16];
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          offset[i] = s.label[group + i] * a.n + d;
          centroid_values[i] = __ldg(a.centroids + offset[i]);
        }
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          const float e = update_values[group + i] - centroid_values[i];
          squares = fmaf(e, e, squares);
          if (Shared)
            atomicAdd(sums_s + offset[i], update_values[group + i] - mu);
          else
            atomicAdd(a.sums + offset[i], double(update_values[group + i]));
        }
      }
    } else {
#pragma unroll
      for (int group = 0; group < 32; group += 16) {
        float centroid_values[16];
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          const int row = group + i;
          centroid_values[i] =
              row < rows && d < a.n ? __ldg(a.centroids + int64_t(s.label[row]) * a.n + d) : 0.f;
        }
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          const int row = group + i;
          const float e = update_values[row] - centroid_values[i];
          squares = fmaf(e, e, squares);
          if (row < rows && d < a.n) {
            if (Shared)
              atomicAdd(&sums_s[s.label[row] * a.n + d], update_values[row] - mu);
            else
              atomicAdd(&a.sums[int64_t(s.label[row]) * a.n + d], double(update_values[row]));
          }
        }
      }
    }
    inertia += double(squares);
  }
  __syncwarp();
}

// update=shared: the block's FP32 sums into the FP64 sums and zeroed, by every thread between
// barriers. The sums hold x − μ; the block's last flush adds count·μ for all its points.
__device__ __forceinline__ void flush_shared_sums(const WindowArgs& a, float* sums_s, const unsigned* counts_s,
                                                  const float* center_f, bool last) {
  const int total = a.k * a.n;
  for (int i = threadIdx.x; i < total; i += blockDim.x) {
    double value = sums_s[i];
    sums_s[i] = 0.f;
    if (last) {
      const int j = i / a.n;
      value += double(counts_s[j]) * double(center_f[i - j * a.n]);
    }
    if (value != 0.0) atomicAdd(&a.sums[i], value);
  }
}

#endif

}  // namespace mk::tf32_window
