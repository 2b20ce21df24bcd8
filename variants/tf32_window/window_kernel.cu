// tf32-window's kernel: one persistent pass per Lloyd iteration that assigns every point
// to its FP32-faithful nearest centroid and adds it to the FP64 sums. Per 32-point step a
// warp
//   1. loads the points as register-resident FP16 A fragments (point_fragments.cuh),
//   2. sweeps the shared-memory centroid table twice with FP16 MMAs: each row's smallest
//      key, then the keys inside its forward-error window counted and identified
//      (key_sweeps.cuh),
//   3. settles the rows whose window holds only the winner and arbitrates the others in
//      exact FP32 (arbitration.cuh),
//   4. adds the points to the sums and the inertia (update.cuh).
// Steps come from a global counter (steps.cuh); the table is loaded once per block
// (shared_table.cuh). Design and measurements: docs/tf32-window.md.
//
// Needs sm_80+ (FP16 mma.sync with FP32 accumulation); the kernel body is compiled out below that.
#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/errors.hpp"
#include "variants/tf32_window/arbitration.cuh"
#include "variants/tf32_window/key_sweeps.cuh"
#include "variants/tf32_window/layout.hpp"
#include "variants/tf32_window/point_fragments.cuh"
#include "variants/tf32_window/shared_table.cuh"
#include "variants/tf32_window/steps.cuh"
#include "variants/tf32_window/update.cuh"
#include "variants/tf32_window/window_args.hpp"

namespace mk::tf32_window {
namespace {

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
template <int NPAD>
__device__ __forceinline__ void settle_and_update(const WindowArgs& a, const WarpScratch& s, int listed, int64_t base,
                                                  int rows, int ntiles, unsigned* counts_s,
                                                  float (&update_values)[32], float* sums_s, const float* center_f,
                                                  double& inertia) {
  settle_labels<NPAD>(a, s, listed, base, rows, ntiles, counts_s);
  if (a.shared_update)
    update_and_inertia<true>(a, s, base, rows, update_values, sums_s, center_f, inertia);
  else
    update_and_inertia<false>(a, s, base, rows, update_values, sums_s, center_f, inertia);
}
#endif

// Pass B sums r·(W + i) and r·i² per key on the FMA pipe (three FFMA per key with the ramp).
// A kernel per SkipEmptyTiles value, not a runtime branch: with both sweeps in one kernel,
// the counting form ran 3 % slower at K=256 (0.531 against 0.515 ms, commit 704fc34).
// MaxThreads: the block the kernel is built for (layout.hpp's kNarrowSteps says which).
template <int H, bool SkipEmptyTiles, int MaxThreads>  // H: m16n8k16 steps of 16 dims
__global__ void __launch_bounds__(MaxThreads, 1) f16_window_kernel(WindowArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // The table's pieces are carved here, not by a helper, and the step's point loads stay
  // inline below: either as a function changed ptxas's output for this kernel.
  extern __shared__ float4 smem4[];
  const int ntiles = a.kpad / 8;
  uint32_t* image_s = reinterpret_cast<uint32_t*>(smem4);
  float4* norm_quads_s = reinterpret_cast<float4*>(image_s + int64_t(a.kpad) * H * 8);
  float4* weights_s = norm_quads_s + a.kpad / 2;
  float4* center_s = weights_s + ntiles;  // μ, zero past N
  unsigned* counts_s = reinterpret_cast<unsigned*>(center_s + kMaxDims / 4);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const WarpScratch scratch = warp_scratch(reinterpret_cast<int*>(counts_s + a.kpad), warp);
  float* sums_s = reinterpret_cast<float*>(counts_s + a.kpad) + (blockDim.x / 32) * kWarpScratchWords;
  const float* center_f = reinterpret_cast<const float*>(center_s);

  const float weight = a.count_weight;
  load_shared_table<H>(a, image_s, norm_quads_s, weights_s, center_s, counts_s, weight);
  if (a.shared_update)
    for (int i = threadIdx.x; i < a.k * a.n; i += blockDim.x) sums_s[i] = 0.f;
  __syncthreads();

  const float scale = a.f16_scalars[0], largest_cnorm2 = a.f16_scalars[1];
  fp16_keys::KeyErrorModel key_model = a.key_model;
  key_model.rho = fp16_keys::measured_rho(a.f16_scalars[2]);
  key_model.tau = fp16_keys::residual_floor(16 * H);
  key_model.largest_cnorm = fp16_keys::largest_centroid_norm(largest_cnorm2);
  const float inverse_weight = 1.f / weight;  // a power of two: exact
  const bool vector_rows = (a.n % 4) == 0;
  const int64_t steps = (a.m + 31) / 32;
  const uint32_t* lane_image = image_s + lane * H * 2;
  double inertia = 0.0;

  // update=shared: rounds of flush_steps steps a warp, each ended by a flush of the block's
  // FP32 sums between two barriers (a warp without steps left still joins them); the last
  // round is the one after which no warp has a step.
  const int round_steps = a.shared_update ? a.flush_steps : INT_MAX;
  int64_t step = granted_step(request_step(a, lane));
  for (;;) {
    for (int in_round = 0; in_round < round_steps && step < steps; ++in_round) {
      const unsigned long long ticket = request_step(a, lane);
      const int64_t base = step * 32;
      // The step's points, translated by μ and scaled like the centroids, then packed as the
      // A fragments (point_fragments.cuh says which lane holds what).
      uint32_t frag[2][H][4];
      float xn2[4];
      bool valid[4];
      // A whole step of full-width rows loads each lane's four dims with one unpredicated
      // LDG.128 at a 32-bit offset and μ from shared memory (the general form below cost
      // ~60 instructions per row and step). All of a batch's loads are issued before the first
      // use: a branch per row and k-step had made them eight serial round trips. Up to 64
      // dims a step is one batch; wider rows take two, so 64 more FP32 registers suffice.
      constexpr int kBatch = H > kNarrowSteps ? H / 2 : H;
      const bool full_step = base + 32 <= a.m && a.n == 16 * H;
      float sq[4] = {0.f, 0.f, 0.f, 0.f}, res[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int s0 = 0; s0 < H; s0 += kBatch) {
        float4 centred[4][kBatch];  // (x − μ)·scale, 0 past the data
        if (full_step) {
          const float* step_points = a.points + base * a.n;
#pragma unroll
          for (int r = 0; r < 4; ++r)
#pragma unroll
            for (int b = 0; b < kBatch; ++b)
              centred[r][b] = __ldg(reinterpret_cast<const float4*>(
                  step_points + (row_in_step(r, g) * a.n + 16 * (s0 + b) + 4 * t)));
#pragma unroll
          for (int r = 0; r < 4; ++r)
#pragma unroll
            for (int b = 0; b < kBatch; ++b) {
              const float4 mu = center_s[4 * (s0 + b) + t];
              float4& v = centred[r][b];
              v = make_float4((v.x - mu.x) * scale, (v.y - mu.y) * scale, (v.z - mu.z) * scale,
                              (v.w - mu.w) * scale);
            }
        } else {
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            const int64_t p = base + row_in_step(r, g);
            const float* row = a.points + p * a.n;
#pragma unroll
            for (int b = 0; b < kBatch; ++b) {
              const int d0 = 16 * (s0 + b) + 4 * t;
              float v[4];
              if (p < a.m && vector_rows && d0 + 4 <= a.n) {
                const float4 q = __ldg(reinterpret_cast<const float4*>(row + d0));
                v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
              } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) v[e] = p < a.m && d0 + e < a.n ? __ldg(row + d0 + e) : 0.f;
              }
#pragma unroll
              for (int e = 0; e < 4; ++e)
                v[e] = (p < a.m && d0 + e < a.n)
                           ? (v[e] - reinterpret_cast<const float*>(center_s)[d0 + e]) * scale
                           : 0.f;
              centred[r][b] = make_float4(v[0], v[1], v[2], v[3]);
            }
          }
        }
        pack_point_batch<H, kBatch>(s0, centred, frag, sq, res);
      }
      finish_point_rows(a, base, g, sq, xn2, res, valid);

      float lowest[4];
      lowest_keys<H>(frag, lane_image, norm_quads_s, ntiles, t, lowest);
      float ramp_slope[4], ramp_top[4];
      window_ramps(lowest, xn2, res, largest_cnorm2, key_model, a.n, ramp_slope, ramp_top);

      // Pass B: the same keys, counted and identified against T.
      float sums[4], squares[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) sums[r] = squares[r] = 0.f;
      count_inside_keys<H, SkipEmptyTiles>(frag, lane_image, norm_quads_s, weights_s, ntiles, t, ramp_slope, ramp_top,
                                           sums, squares);

      const int64_t next = granted_step(ticket);
      prefetch_step(a, next, lane);

      // The update's values (lane d holds dimension d of the step's 32 points) are loaded
      // now, so their latency hides behind the arbitration.
      const int rows = a.m - base < 32 ? int(a.m - base) : 32;
      float update_values[32];
      load_step_dimension(a, base, rows, lane, update_values);

      const int listed = list_candidates(a, scratch, sums, squares, valid, weight, inverse_weight, lane, g, t);
      settle_and_update<16 * H>(a, scratch, listed, base, rows, ntiles, counts_s, update_values, sums_s, center_f,
                                inertia);
      step = next;
    }
    if (!a.shared_update) break;
    const bool more = __syncthreads_or(step < steps);
    flush_shared_sums(a, sums_s, counts_s, center_f, !more);
    __syncthreads();
    if (!more) break;
  }

  flush_block_totals(a, inertia, counts_s);
#else
  __trap();  // unreachable: can_implement refuses devices below sm_80
#endif
}

template <bool SkipEmptyTiles>
KernelFn f16_kernel_for(int n, int block) {
  switch (f16_steps(n)) {
    case 1: return f16_window_kernel<1, SkipEmptyTiles, 512>;
    case 2: return f16_window_kernel<2, SkipEmptyTiles, 512>;
    case 3: return f16_window_kernel<3, SkipEmptyTiles, 512>;
    case 4: return f16_window_kernel<4, SkipEmptyTiles, 512>;
    case 6: return block > 256 ? f16_window_kernel<6, SkipEmptyTiles, 384> : f16_window_kernel<6, SkipEmptyTiles, 256>;
    case 8: return block > 256 ? f16_window_kernel<8, SkipEmptyTiles, 384> : f16_window_kernel<8, SkipEmptyTiles, 256>;
  }
  return nullptr;
}

}  // namespace

KernelFn window_kernel_for(int n, bool skip_empty_tiles, int block) {
  if (block > max_block_for(n))
    throw UnsupportedError("tf32-window: no kernel for blocks of " + std::to_string(block) + " threads at N=" +
                           std::to_string(n));
  KernelFn kernel = skip_empty_tiles ? f16_kernel_for<true>(n, block) : f16_kernel_for<false>(n, block);
  if (kernel) return kernel;
  throw UnsupportedError("tf32-window: no FP16 kernel for N=" + std::to_string(n));
}

}  // namespace mk::tf32_window
