// The gemm-window kernel for tile 64x256/2x4 (one translation unit per tile config, so
// they compile in parallel).
#include "variants/gemm_window/kernel.cuh"

namespace mk::gemm_window {
MK_GEMM_WINDOW_KERNEL(64, 256, 2, 4, 1)
}  // namespace mk::gemm_window
