// gemm-window's centroid table: one warp per centroid, lanes over dimensions.
//  1. largest ‖c − μ‖² over the real centroids (with the data's, it sets the power-of-two
//     scale that keeps every FP16 value finite);
//  2. per table column: fp16(−2·c̃) in the kernel's slot layout (config.hpp's table_offset), ‖c̃‖² (FP64 sum of the FP32
//     values, rounded once), and the FP16 residual ratio ‖c_h/(−2) − c̃‖ / max(‖c̃‖, τ), whose
//     maximum ρ bounds every centroid's rounding in the window (window_bound.hpp).
#include "variants/gemm_window/table.hpp"

#include <cuda_runtime.h>

#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/gemm_window/window_bound.hpp"

namespace mk::gemm_window {
namespace {

constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ double warp_sum(double value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32) largest_centroid_norm(TableArgs a) {
  const int slot = blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (slot >= a.slots) return;  // whole warp
  double sum = 0.0;
  for (int d = lane; d < a.n; d += 32) {
    const float centred = a.centroids[int64_t(slot) * a.n + d] - a.center[d];
    sum += double(centred) * centred;
  }
  sum = warp_sum(sum);
  if (lane == 0) atomicMax(&a.scalars[0], __float_as_uint(__double2float_ru(sum)));
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32) convert_centroids(TableArgs a) {
  const int column = blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (column >= a.total_columns) return;  // whole warp
  const int tile = column / a.bn;
  int slot = -1;
  for (int g = 0; g < a.group_count; ++g) {
    const GroupInfo group = a.groups[g];
    if (tile >= group.first_tile && tile < group.first_tile + group.tiles) {
      const int j = column - group.first_tile * a.bn;
      if (j < group.k) slot = group.slot_offset + j;
      break;
    }
  }
  const int chunks = a.npad / kChunkDims;
  if (slot < 0) {
    for (int d = lane; d < a.npad; d += 32) a.table[table_offset(column, d, a.bn, chunks)] = __float2half_rn(0.f);
    if (lane == 0) a.norms[column] = 1e30f;  // sorts above every real key, never in a window
    return;
  }
  const float scale = scale_for(fmaxf(a.largest_point_norm2, __uint_as_float(a.scalars[0])));
  double norm2 = 0.0, residual2 = 0.0;
  for (int d = lane; d < a.npad; d += 32) {
    float value = 0.f;
    if (d < a.n) value = (a.centroids[int64_t(slot) * a.n + d] - a.center[d]) * scale;
    const __half h = __float2half_rn(-2.f * value);
    a.table[table_offset(column, d, a.bn, chunks)] = h;
    const float residual = __half2float(h) * -0.5f - value;  // exact: both sides within 2x
    norm2 += double(value) * value;
    residual2 += double(residual) * residual;
  }
  norm2 = warp_sum(norm2);
  residual2 = warp_sum(residual2);
  if (lane == 0) {
    a.norms[column] = __double2float_rn(norm2);
    const double floor = residual_floor(a.npad);
    const double ratio = sqrt(residual2) / fmax(sqrt(norm2), floor);
    atomicMax(&a.scalars[1], __float_as_uint(__double2float_ru(ratio * (1.0 + 0x1p-40))));
  }
}

}  // namespace

void build_table(const TableArgs& args, void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int threads = kWarpsPerBlock * 32;
  largest_centroid_norm<<<(args.slots + kWarpsPerBlock - 1) / kWarpsPerBlock, threads, 0, s>>>(args);
  gpu::check_launch("gemm-window largest_centroid_norm");
  convert_centroids<<<(args.total_columns + kWarpsPerBlock - 1) / kWarpsPerBlock, threads, 0, s>>>(args);
  gpu::check_launch("gemm-window convert_centroids");
}

}  // namespace mk::gemm_window
