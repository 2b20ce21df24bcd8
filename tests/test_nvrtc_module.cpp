// The runtime compiler (NVRTC only, no GPU needed): named headers, the embedded kernel files,
// and the experiment hook MKBENCH_NVRTC_DEFINES, which reaches every source it compiles.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "core/errors.hpp"
#include "variants/common/kernel_sources.hpp"
#include "variants/common/nvrtc_module.hpp"

namespace mk {
namespace {

gpu::RuntimeCompileRequest probe_source() {
  gpu::RuntimeCompileRequest request;
  request.source =
      "#if !defined(MKBENCH_PROBE_VALUE) || MKBENCH_PROBE_VALUE != 7\n"
      "#error \"MKBENCH_PROBE_VALUE is not 7\"\n"
      "#endif\n"
      "extern \"C\" __global__ void probe(int* out) { *out = MKBENCH_PROBE_VALUE; }\n";
  request.program_name = "probe.cu";
  request.cc_major = 9;
  request.cc_minor = 0;
  request.description = "the defines probe";
  return request;
}

class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) had_ = true, old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnvironment() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

TEST(NvrtcDefines, EnvironmentDefinesReachTheSource) {
  {
    ScopedEnvironment defines("MKBENCH_NVRTC_DEFINES", "MKBENCH_PROBE_VALUE=7 MKBENCH_PROBE_FLAG");
    EXPECT_NO_THROW(gpu::compile_only(probe_source()));
  }
  {
    ScopedEnvironment defines("MKBENCH_NVRTC_DEFINES", nullptr);
    EXPECT_THROW(gpu::compile_only(probe_source()), DeviceError);
  }
}

// A source includes its headers by name, as the runtime-compiled kernels include their stages.
TEST(NvrtcHeaders, ASourceIncludesItsHeadersByName) {
  gpu::RuntimeCompileRequest request = probe_source();
  request.source = "#include \"value.cuh\"\n" + request.source;
  request.headers = {{"value.cuh", "#pragma once\n#include \"seven.cuh\"\n#define MKBENCH_PROBE_VALUE SEVEN\n"},
                     {"seven.cuh", "#pragma once\n#define SEVEN 7\n"}};
  EXPECT_NO_THROW(gpu::compile_only(request));
  request.headers.pop_back();
  EXPECT_THROW(gpu::compile_only(request), DeviceError);
}

// Every runtime-compiled kernel folder is embedded, under the names its files include.
TEST(NvrtcHeaders, TheKernelFoldersAreEmbeddedWithTheirEntryFile) {
  for (const char* folder : {"tensor_multik/kernel", "registers_multik/kernel"}) {
    SCOPED_TRACE(folder);
    const auto headers = gpu::kernel_headers(folder);
    bool has_entry = false;
    for (const auto& [name, text] : headers) {
      EXPECT_EQ(name.find('/'), std::string::npos) << name;
      EXPECT_FALSE(text.empty()) << name;
      has_entry = has_entry || name == "kernel.cuh";
    }
    EXPECT_TRUE(has_entry);
  }
  EXPECT_THROW(gpu::kernel_headers("no_such_variant/kernel"), std::logic_error);
}

}  // namespace
}  // namespace mk
