#include "variants/common/nvrtc_module.hpp"

#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.hpp"

namespace mk::gpu {
namespace {


// MKBENCH_NVRTC_DEFINES="NAME=VALUE NAME2=VALUE2": defines put before every runtime-compiled
// source, so a kernel experiment behind a macro can be timed against the default within one
// binary and one machine state. Announced on stderr: numbers taken with it are not the defaults'.
std::string experiment_defines() {
  const char* env = std::getenv("MKBENCH_NVRTC_DEFINES");
  if (!env || !*env) return {};
  std::string out, word;
  std::istringstream words(env);
  while (words >> word) {
    const size_t eq = word.find('=');
    out += "#define " + (eq == std::string::npos ? word : word.substr(0, eq) + " " + word.substr(eq + 1)) + "\n";
  }
  static bool announced = false;
  if (!announced) std::fprintf(stderr, "mkbench: MKBENCH_NVRTC_DEFINES=\"%s\" applies to every runtime-compiled kernel\n", env);
  announced = true;
  return out;
}

KernelImage compile(const RuntimeCompileRequest& request, bool ptxas_verbose) {
  nvrtcProgram program;
  const std::string source = experiment_defines() + request.source;
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : request.headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  if (nvrtcCreateProgram(&program, source.c_str(), request.program_name.c_str(), int(header_texts.size()),
                         header_texts.data(), header_names.data()) != NVRTC_SUCCESS)
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
  size_t cubin_size = 0, ptx_size = 0;
  nvrtcGetCUBINSize(program, &cubin_size);
  KernelImage out;
  out.cubin.assign(cubin_size, '\0');
  nvrtcGetCUBIN(program, out.cubin.data());
  if (nvrtcGetPTXSize(program, &ptx_size) == NVRTC_SUCCESS && ptx_size > 0) {
    out.ptx.assign(ptx_size, '\0');
    nvrtcGetPTX(program, out.ptx.data());
    while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  }
  nvrtcDestroyProgram(&program);
  out.log = std::move(log);
  return out;
}

}  // namespace

std::string compile_only(const RuntimeCompileRequest& request) { return compile(request, true).log; }

KernelImage compile_image(const RuntimeCompileRequest& request) { return compile(request, false); }

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "NVRTC (version unknown)";
  return "NVRTC " + std::to_string(major) + "." + std::to_string(minor);
}

cudaLibrary_t compile_and_load(const RuntimeCompileRequest& request) {
  const char* verbose = std::getenv("MKBENCH_PTXAS_VERBOSE");
  const bool ptxas_verbose = verbose && *verbose && std::string(verbose) != "0";
  KernelImage program = compile(request, ptxas_verbose);
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
