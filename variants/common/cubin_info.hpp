#pragma once
// What a compiled kernel costs, read from its cubin (an ELF image) instead of from a
// compiler's text: the text of ptxas -v changes between toolkits (a log without its spill
// line read as -1), while the ELF layout the driver itself loads does not. No GPU needed.
#include <cstdint>
#include <string>
#include <vector>

namespace mk::gpu {

struct CubinKernel {
  std::string name;
  int registers = 0;            // per thread: EIATTR_REGCOUNT (CUDA 13), else the .text header's sh_info >> 24
  int64_t frame_bytes = 0;      // local memory per thread (stack frame: spills and local arrays)
  int64_t shared_bytes = 0;     // static shared memory (.nv.shared.<name>), 0 when none
  std::string text;             // the machine code, byte for byte
};

// Every kernel (.text.<name> section) of the cubin. Throws std::runtime_error naming `toolkit`
// when the image is not a cubin of the known layout or a kernel's frame size is not recorded,
// rather than returning a figure it could not read.
std::vector<CubinKernel> read_cubin_kernels(const std::string& cubin, const std::string& toolkit);

// The kernel called `name`; throws std::runtime_error (naming `toolkit`) when there is none.
CubinKernel read_cubin_kernel(const std::string& cubin, const std::string& name, const std::string& toolkit);

}  // namespace mk::gpu
