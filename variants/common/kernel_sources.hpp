#pragma once
// The runtime-compiled kernels are ordinary CUDA files, variants/<variant>/kernel/*.cuh. The
// build embeds their text (cmake/embed_kernels.cmake), and a variant hands NVRTC the files of
// its folder as named headers, so its source is its #defines for one shape plus
// `#include "kernel.cuh"`, and the files include each other as they would under nvcc.
#include <string>
#include <utility>
#include <vector>

namespace mk::gpu {

// Every embedded file: {path under variants/ ("tensor_multik/kernel/argmin.cuh"), text}.
const std::vector<std::pair<std::string, std::string>>& embedded_kernel_files();

// The files of one folder ("tensor_multik/kernel"), named as they include each other
// ("argmin.cuh"). Throws std::logic_error when the folder has none (a build without them).
std::vector<std::pair<std::string, std::string>> kernel_headers(const std::string& folder);

}  // namespace mk::gpu
