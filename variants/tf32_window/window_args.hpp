#pragma once
// What every tf32-window kernel receives, and the host's handles on the kernels.
#include <cuda_runtime.h>

#include <cstdint>

#include "variants/common/fp16_key_error.hpp"
#include "variants/common/near_tie_bound.hpp"

namespace mk::tf32_window {

struct WindowArgs {
  const float* points;     // m × n, AoS
  const float* centroids;  // k × n, exact (the state's packed centroids)
  const void* image;       // kpad × 16·f16_steps halves −2·fp16((c − μ)·scale), fragment order
  const float* norms;      // kpad: ‖(c − μ)·scale‖², 1e30 for padding
  const float* center;     // μ, n floats
  int64_t m;
  int n, k, kpad;
  double* sums;
  unsigned long long* counts;
  double* inertia;
  int32_t* labels;
  unsigned long long* stats;  // null, or {rows, rows with several candidates, rows needing a column scan}
  unsigned long long* next_step;  // zero at launch; warps take 32-point steps from it
  int f16_steps;              // m16n8k16 steps of 16 dims
  // {scale, largest scaled ‖c‖², the table's FP16 residual ratio ρ}, written by
  // build_f16_window_image.
  const float* f16_scalars;
  // The window's bound (fp16_key_error.hpp), from each point's FP16 residual and the
  // table's ρ (rho and tau are filled in by the kernel).
  fp16_keys::KeyErrorModel key_model;
  float count_weight;         // W, a power of two ≥ 4·L (L = kpad/4 keys of one lane and row)
  // update=shared: the block adds x − μ into FP32 sums in shared memory (after the per-warp
  // scratch) and flushes them into the FP64 sums every flush_steps steps of each warp;
  // otherwise every point goes to the FP64 sums with global atomics.
  bool shared_update;
  int flush_steps;
};

using KernelFn = void (*)(WindowArgs);

// window_kernel.cu: the assignment-and-update kernel for N dimensions and blocks of `block`
// threads, with or without the second sweep's skipping of empty n-tiles; throws
// UnsupportedError where none exists.
KernelFn window_kernel_for(int n, bool skip_empty_tiles, int block);

// centroid_table.cu: the FP16 image of the translated, scaled centroids in fragment order,
// their norms and {scale, largest scaled ‖c‖², ρ}, on the stream (one block).
void launch_build_f16_window_image(const WindowArgs& args, float largest_point_norm2, void* image, float* norms,
                                   float* scalars, cudaStream_t stream);

}  // namespace mk::tf32_window
