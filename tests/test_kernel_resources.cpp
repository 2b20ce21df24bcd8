// The cubin reader behind the compile tests (variants/common/cubin_info.hpp): registers and
// local memory come from the ELF records the driver loads, checked here against probe kernels
// of known local memory and, on a GPU, against the driver's own figures for the default kernels
// of tensor-multik and registers-multik.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "core/device_info.hpp"
#include "tests/kernel_resources.hpp"
#include "variants/registers_multik/registers_multik.hpp"
#include "variants/tensor_multik/tensor_multik.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

using testing_support::kernel_resources;
using testing_support::multik_shape;

gpu::RuntimeCompileRequest probe(const std::string& body) {
  gpu::RuntimeCompileRequest request;
  request.source = "extern \"C\" __global__ void probe(float* out, int i) {\n" + body + "\n}\n";
  request.program_name = "probe.cu";
  request.cc_major = 9;
  request.cc_minor = 0;
  request.description = "a cubin probe";
  return request;
}

TEST(CubinResources, AKernelWithoutLocalArraysHasNoLocalMemory) {
  const auto used = kernel_resources(probe("out[threadIdx.x] = out[threadIdx.x] * 2.f + float(i);"), "probe");
  EXPECT_GT(used.registers, 0);
  EXPECT_EQ(used.frame_bytes, 0);
}

// A 256-float array written and read at run-time indices cannot live in registers (ptxas keeps
// smaller ones there, indexing registers): 1024 bytes of local memory per thread, which the
// frame size must show (at least that, rounded up by the ABI).
TEST(CubinResources, ALocallyIndexedArrayShowsAsLocalMemory) {
  const auto used = kernel_resources(probe("float a[256];\n"
                                           "for (int j = 0; j < 256; ++j) a[j] = out[j * blockDim.x + threadIdx.x];\n"
                                           "a[i & 255] += 1.f;\n"
                                           "out[threadIdx.x] = a[(i >> 8) & 255];"),
                                     "probe");
  EXPECT_GE(used.frame_bytes, 1024);
  EXPECT_LT(used.frame_bytes, 2048);
}

TEST(CubinResources, AnImageThatIsNotACubinFailsNamingTheToolkit) {
  try {
    gpu::read_cubin_kernels("not an ELF image at all, just text of some length", gpu::nvrtc_version());
    FAIL() << "read_cubin_kernels accepted text";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("NVRTC"), std::string::npos) << e.what();
  }
  const gpu::KernelImage image = gpu::compile_image(probe("out[0] = 1.f;"));
  EXPECT_THROW(gpu::read_cubin_kernel(image.cubin, "no_such_kernel", gpu::nvrtc_version()), std::runtime_error);
}

// On a GPU: the cubin's figures are the driver's (CU_FUNC_ATTRIBUTE_NUM_REGS and
// CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, through the runtime's cudaFuncGetAttributes) for the
// default kernels of the perf cases on this device.
TEST(CubinResourcesOnDevice, MatchTheDriversFiguresForTheDefaultKernels) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  const DeviceInfo device = query_device(0);
  struct Case {
    const char* variant;
    const char* kernel;
    Problem problem;
  };
  int compared = 0;
  for (const Case& c : {Case{"tensor-multik", "tensor_multik_iteration", multik_shape(8, 3, 7, 32 << 20)},
                        Case{"tensor-multik", "tensor_multik_iteration", multik_shape(4, 3, 5, 32 << 20)},
                        Case{"tensor-multik", "tensor_multik_iteration", multik_shape(16, 3, 7, 32 << 20)},
                        Case{"tensor-multik", "tensor_multik_iteration", multik_shape(8, 16, 16, 8 << 20)},
                        Case{"registers-multik", "multik_iteration", multik_shape(8, 3, 7, 32 << 20)},
                        Case{"registers-multik", "multik_iteration", multik_shape(16, 3, 7, 32 << 20)}}) {
    SCOPED_TRACE(std::string(c.variant) + " " + c.problem.str());
    const Variant& variant = Registry::instance().get(c.variant);
    // Every one of these shapes is one the variant must run on any GPU it supports.
    ASSERT_FALSE(variant.can_implement(c.problem, device).has_value()) << *variant.can_implement(c.problem, device);
    const Params params = variant.default_params(c.problem, device);
    const gpu::RuntimeCompileRequest request =
        std::string(c.variant) == "tensor-multik"
            ? tensor_multik::kernel_request(c.problem, params, device.cc_major, device.cc_minor)
            : registers_multik::kernel_request(c.problem, params, device);
    const gpu::KernelImage image = gpu::compile_image(request);
    const gpu::CubinKernel elf = gpu::read_cubin_kernel(image.cubin, c.kernel, gpu::nvrtc_version());
    cudaLibrary_t library = nullptr;
    ASSERT_EQ(cudaLibraryLoadData(&library, image.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0), cudaSuccess);
    cudaKernel_t kernel = nullptr;
    ASSERT_EQ(cudaLibraryGetKernel(&kernel, library, c.kernel), cudaSuccess);
    cudaFuncAttributes attributes{};
    ASSERT_EQ(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)), cudaSuccess);
    EXPECT_EQ(attributes.numRegs, elf.registers);
    EXPECT_EQ(int64_t(attributes.localSizeBytes), elf.frame_bytes);
    EXPECT_EQ(cudaLibraryUnload(library), cudaSuccess);
    ++compared;
  }
  EXPECT_EQ(compared, 6);
}

}  // namespace
}  // namespace mk
