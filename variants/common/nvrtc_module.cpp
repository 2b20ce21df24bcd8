#include "variants/common/nvrtc_module.hpp"

#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "harness/errors.hpp"

namespace mk::gpu {
namespace {

struct CompiledProgram {
  std::string cubin;
  std::string log;
};

CompiledProgram compile(const RuntimeCompileRequest& request, bool ptxas_verbose) {
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, request.source.c_str(), request.program_name.c_str(), 0, nullptr, nullptr) !=
      NVRTC_SUCCESS)
    throw DeviceError("nvrtcCreateProgram failed for " + request.program_name);
  const std::string arch =
      "--gpu-architecture=sm_" + std::to_string(request.cc_major) + std::to_string(request.cc_minor);
  std::vector<const char*> options{arch.c_str(), "--std=c++17", "-lineinfo"};
  if (ptxas_verbose) options.push_back("--ptxas-options=-v");
  const nvrtcResult compiled = nvrtcCompileProgram(program, int(options.size()), options.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  if (log_size) nvrtcGetProgramLog(program, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (compiled != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&program);
    throw DeviceError("NVRTC failed to compile " + request.program_name + " for " + request.description + " (sm_" +
                      std::to_string(request.cc_major) + std::to_string(request.cc_minor) + "):\n" + log);
  }
  size_t cubin_size = 0;
  nvrtcGetCUBINSize(program, &cubin_size);
  CompiledProgram out;
  out.cubin.assign(cubin_size, '\0');
  nvrtcGetCUBIN(program, out.cubin.data());
  nvrtcDestroyProgram(&program);
  out.log = std::move(log);
  return out;
}

}  // namespace

std::string compile_only(const RuntimeCompileRequest& request) { return compile(request, true).log; }

cudaLibrary_t compile_and_load(const RuntimeCompileRequest& request) {
  const char* verbose = std::getenv("MKBENCH_PTXAS_VERBOSE");
  const bool ptxas_verbose = verbose && *verbose && std::string(verbose) != "0";
  CompiledProgram program = compile(request, ptxas_verbose);
  if (ptxas_verbose)
    std::fprintf(stderr, "%s %s:\n%s\n", request.program_name.c_str(), request.description.c_str(),
                 program.log.c_str());
  if (const char* dump = std::getenv("MKBENCH_DUMP_CUBIN")) {
    std::ofstream file(std::string(dump) + "-" + request.dump_tag + ".cubin", std::ios::binary);
    file.write(program.cubin.data(), std::streamsize(program.cubin.size()));
  }
  cudaLibrary_t library = nullptr;
  const cudaError_t status =
      cudaLibraryLoadData(&library, program.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw DeviceError("load " + request.program_name + " cubin for " + request.description + ": " +
                      cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
  }
  return library;
}

}  // namespace mk::gpu
