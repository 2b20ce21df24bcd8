// The gemm-window kernel for tile 128x64/wgmma: built for sm_90a alone (CMakeLists.txt's
// mkbench_variants_sm90a), since wgmma has no portable form.
#include "variants/gemm_window/kernel.cuh"

namespace mk::gemm_window {
MK_GEMM_WINDOW_WGMMA_KERNEL(128, 64, 3)
}  // namespace mk::gemm_window
