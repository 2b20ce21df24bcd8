// gemm-window's kernels (variants/gemm_window/kernel_*.cu, compiled by nvcc into the binary)
// compiled to cubins by the build for sm_90 and sm_80 (the wgmma tiles for sm_90a) with the build's flags, and read through
// the cubin reader (variants/common/cubin_info.hpp): every tile config has its kernel, no kernel
// uses local memory (spills cost it the rate its tile sizes were chosen for, docs/gemm-window.md),
// and its registers fit the occupancy its __launch_bounds__ promise (min_blocks per SM).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "variants/common/cubin_info.hpp"
#include "variants/gemm_window/config.hpp"

namespace mk {
namespace {

std::string cubin_path(const gemm_window::TileConfig& tile, const std::string& arch) {
  std::string stem = std::string("kernel_") + tile.name;
  for (char& c : stem)
    if (c == '/') c = '_';
  return std::string(MKBENCH_GEMM_WINDOW_CUBIN_DIR) + "/" + stem + ".sm_" + arch + ".cubin";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(GemmWindowCubins, EveryTileKernelIsSpillFreeWithinItsLaunchBounds) {
  int checked = 0, expected = 0;
  for (const std::string arch : {"90", "80", "90a"})
    for (const gemm_window::TileConfig& tile : gemm_window::kTileConfigs) {
      // wgmma tiles are sm_90a code alone; the others are built for every architecture.
      if (tile.wgmma != (arch == "90a")) continue;
      ++expected;
      const std::string path = cubin_path(tile, arch);
      SCOPED_TRACE(path);
      const std::string cubin = read_file(path);
      ASSERT_FALSE(cubin.empty()) << "the build did not write " << path;
      const std::vector<gpu::CubinKernel> kernels = gpu::read_cubin_kernels(cubin, "nvcc (the build's CUDA compiler)");
      std::vector<gpu::CubinKernel> window;
      for (const gpu::CubinKernel& kernel : kernels)
        if (kernel.name.find("gemm_window_kernel") != std::string::npos) window.push_back(kernel);
      // Two a tile: one problem, and a batch in one launch (gemm_window_kernel<..., Batched>),
      // all spill-free. (Until the table was stored as the slots are laid out, the batch's
      // instantiations of 128x128/4x1 at sm_90 and 64x128/2x2 at sm_80 kept an 8-byte frame:
      // each thread's copy plan held three more registers.)
      ASSERT_EQ(window.size(), 2u) << "two gemm_window_kernel instantiations per tile translation unit";
      int batches = 0;
      for (const gpu::CubinKernel& kernel : window) {
        const bool batched = kernel.name.find("Lb1EEEv") != std::string::npos;
        batches += batched;
        EXPECT_EQ(kernel.frame_bytes, 0)
            << tile.name << " sm_" << arch << (batched ? " batch" : "") << ": " << kernel.registers << " registers";
        EXPECT_GT(kernel.registers, 32) << tile.name;
        EXPECT_LE(int64_t(kernel.registers) * tile.threads() * tile.min_blocks, 65536)
            << tile.name << " sm_" << arch << ": " << kernel.registers << " registers x " << tile.threads()
            << " threads x " << tile.min_blocks << " blocks";
        std::printf("gemm-window %-13s sm_%-3s %-11s: %3d registers, %lld bytes local\n", tile.name, arch.c_str(),
                    batched ? "batch" : "one problem", kernel.registers, (long long)kernel.frame_bytes);
      }
      EXPECT_EQ(batches, 1) << "one instantiation for one problem and one for a batch";
      ++checked;
    }
  EXPECT_EQ(checked, expected);
  EXPECT_GT(expected, gemm_window::kTileConfigCount);
}

}  // namespace
}  // namespace mk
