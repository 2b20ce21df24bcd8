// The runtime compiler's experiment hook: MKBENCH_NVRTC_DEFINES reaches every source it compiles
// (NVRTC only, no GPU needed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/errors.hpp"
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

}  // namespace
}  // namespace mk
