// The gemm-window kernel for tile 128x128/4x2 (one translation unit per tile config, so
// they compile in parallel).
#include "variants/gemm_window/kernel.cuh"

namespace mk::gemm_window {
MK_GEMM_WINDOW_KERNEL(128, 128, 4, 2, 1)
}  // namespace mk::gemm_window
