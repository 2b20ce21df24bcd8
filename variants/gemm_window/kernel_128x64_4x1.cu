// The gemm-window kernel for tile 128x64/4x1 (one translation unit per tile config, so
// they compile in parallel).
#include "variants/gemm_window/kernel.cuh"

namespace mk::gemm_window {
MK_GEMM_WINDOW_KERNEL(128, 64, 4, 1, 3)
}  // namespace mk::gemm_window
