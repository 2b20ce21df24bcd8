// The gemm-window kernel for tile 64x128/2x2 (one translation unit per tile config, so
// they compile in parallel).
#include "variants/gemm_window/kernel.cuh"

namespace mk::gemm_window {
MK_GEMM_WINDOW_KERNEL(64, 128, 2, 2, 3)
}  // namespace mk::gemm_window
