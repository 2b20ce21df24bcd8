#pragma once
// Run-time compilation for the variants that specialise their kernels on the problem's
// shape (N, the K range, tile counts) the way seed 000's code generator did: every register
// array is then indexed by compile-time constants, and no (N, K) set has to be chosen when
// mkbench is built, which would multiply CI's compile time.
#include <cuda_runtime.h>

#include <string>
#include <utility>
#include <vector>

namespace mk::gpu {

struct RuntimeCompileRequest {
  std::string source;        // complete CUDA source: defines first, then the kernel (or its #include)
  std::string program_name;  // shown in compiler messages
  int cc_major = 0, cc_minor = 0;
  // Names the cubin written when MKBENCH_DUMP_CUBIN=/path/prefix is set (for cuobjdump -sass).
  std::string dump_tag;
  // Text that identifies the specialisation in error messages ("N=8 K=3..7").
  std::string description;
  // Headers the source may #include by name, as NVRTC's named headers: {include name, text}.
  std::vector<std::pair<std::string, std::string>> headers;
};

// Compiles for sm_<cc_major><cc_minor> and loads the cubin through the runtime's library API
// (CUDA 12+), so machines without a GPU need no libcuda.so at link time. Throws DeviceError
// with NVRTC's log when compilation fails. With MKBENCH_PTXAS_VERBOSE=1 the register, shared
// memory and spill report of ptxas is printed to stderr.
cudaLibrary_t compile_and_load(const RuntimeCompileRequest& request);

// Compiles only (no GPU needed) and returns NVRTC's log including ptxas's resource report;
// throws DeviceError on failure. Tests use it to prove every specialisation builds.
std::string compile_only(const RuntimeCompileRequest& request);

// What one compilation produced, without a GPU: the cubin (an ELF image; variants/common/
// cubin_info.hpp reads it), the PTX it was assembled from, and NVRTC's log without ptxas's
// resource report (so any line in it is a warning or a note about the source).
struct KernelImage {
  std::string cubin;
  std::string ptx;
  std::string log;
};
KernelImage compile_image(const RuntimeCompileRequest& request);

// "NVRTC 13.0": the toolkit that compiles the kernels, for messages that depend on it.
std::string nvrtc_version();

}  // namespace mk::gpu
