// Kernel lookup and launch by tile config (the index into kTileConfigs).
#include <cuda_runtime.h>

#include <string>

#include "core/errors.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/gemm_window/kernel_args.hpp"

namespace mk::gemm_window {

KernelHandle kernel_128x128_4x2(bool batched);
KernelHandle kernel_128x128_4x1(bool batched);
KernelHandle kernel_128x64_4x1(bool batched);
KernelHandle kernel_64x128_2x2(bool batched);
KernelHandle kernel_128x16_4x1(bool batched);
KernelHandle kernel_64x256_2x4(bool batched);

#if MKBENCH_HAVE_SM90A
KernelHandle kernel_128x64_wgmma(bool batched);
bool wgmma_built() { return true; }
#else
// A build without sm_90 among its architectures has no wgmma kernels (kernel_for refuses them).
KernelHandle kernel_128x64_wgmma(bool) { return {nullptr, 128, 3}; }
bool wgmma_built() { return false; }
#endif

KernelHandle kernel_for(int tile_index, bool batched) {
  using Factory = KernelHandle (*)(bool);
  // In kTileConfigs' order.
  static constexpr Factory kFactories[] = {kernel_128x128_4x2, kernel_128x128_4x1, kernel_128x64_4x1,
                                           kernel_64x128_2x2,  kernel_128x16_4x1,  kernel_64x256_2x4,
                                           kernel_128x64_wgmma};
  static_assert(sizeof(kFactories) / sizeof(kFactories[0]) == kTileConfigCount, "one kernel per tile config");
  if (tile_index < 0 || tile_index >= kTileConfigCount)
    throw UnsupportedError("gemm-window: no kernel for tile index " + std::to_string(tile_index));
  const KernelHandle handle = kFactories[tile_index](batched);
  const TileConfig& tile = kTileConfigs[tile_index];
  if (!handle.function)
    throw UnsupportedError(std::string("gemm-window: tile ") + tile.name +
                           " needs a build with sm_90 among CMAKE_CUDA_ARCHITECTURES (its wgmma kernel is sm_90a code)");
  if (handle.threads != tile.threads() || handle.min_blocks != tile.min_blocks)
    throw UnsupportedError(std::string("gemm-window: kernel and config disagree for ") + tile.name);
  return handle;
}

void launch(int tile_index, int grid, int64_t smem_bytes, void* stream, const KernelArgs& args) {
  const KernelHandle kernel = kernel_for(tile_index, args.batch_tiles > 0);
  KernelArgs copy = args;
  void* parameters[] = {&copy};
  gpu::check(cudaLaunchKernel(kernel.function, dim3(unsigned(grid)), dim3(unsigned(kernel.threads)), parameters,
                              size_t(smem_bytes), static_cast<cudaStream_t>(stream)),
             "gemm_window_kernel launch");
}

}  // namespace mk::gemm_window
