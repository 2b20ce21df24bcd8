// registers-multik compiles its kernels at run time (NVRTC, no GPU needed): the default kernels
// of the perf cases and of table2's K ranges keep everything in registers, and every form of
// the kernel compiles without a warning. Figures come from the cubin (tests/kernel_resources.hpp).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/kernel_resources.hpp"
#include "variants/registers_multik/registers_multik.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

using testing_support::kernel_resources;
using testing_support::multik_shape;
using testing_support::nvrtc_target;

TEST(RegistersMultiKCompile, DefaultKernelsKeepEverythingInRegisters) {
  const Variant& variant = Registry::instance().get("registers-multik");
  const DeviceInfo device = nvrtc_target(9, 0);
  for (const Problem& problem : {multik_shape(8, 3, 7), multik_shape(4, 3, 5), multik_shape(16, 3, 7), multik_shape(8, 16, 16),
                                 multik_shape(4, 3, 12), multik_shape(8, 3, 12), multik_shape(12, 3, 12)}) {
    SCOPED_TRACE(problem.str());
    ASSERT_FALSE(variant.can_implement(problem, device).has_value());
    const Params params = variant.default_params(problem, device);
    const auto used = kernel_resources(registers_multik::kernel_request(problem, params, device), "multik_iteration");
    EXPECT_GT(used.registers, 0);
    EXPECT_EQ(used.frame_bytes, 0);
  }
}

// Both accumulations, both layouts, both centroid sources and one or two points per lane.
TEST(RegistersMultiKCompile, EveryFormCompilesWithoutWarnings) {
  const Variant& variant = Registry::instance().get("registers-multik");
  const DeviceInfo device = nvrtc_target(9, 0);
  const Problem problem = multik_shape(4, 3, 5);
  for (const char* accumulate : {"mma", "registers"})
    for (const char* layout : {"aos", "soa"})
      for (const char* centroids : {"constant", "shared"})
        for (const int lane_points : {1, 2}) {
          Params params = variant.default_params(problem, device);
          params["accumulate"] = accumulate;
          params["layout"] = layout;
          params["centroids"] = centroids;
          params["lane_points"] = lane_points;
          SCOPED_TRACE(params_label(params));
          ASSERT_FALSE(variant.param_space(problem, device).check(params).has_value());
          const std::string log = gpu::compile_image(registers_multik::kernel_request(problem, params, device)).log;
          EXPECT_EQ(log.find("warning"), std::string::npos) << log;
        }
}

// Rows through shared-memory stages, one or two points a lane: at the Python benchmark's shape
// (N=32 K=8, a padded stage stride) with accumulate=mma, and at N=12 (an unpadded one) with both
// accumulations, without a warning or a stack frame.
TEST(RegistersMultiKCompile, StagedRowsCompileWithoutWarningsOrFrames) {
  const Variant& variant = Registry::instance().get("registers-multik");
  const DeviceInfo device = nvrtc_target(9, 0);
  const std::vector<std::pair<Problem, const char*>> forms{
      {multik_shape(32, 8, 8), "mma"}, {multik_shape(12, 3, 5), "mma"}, {multik_shape(12, 3, 5), "registers"}};
  for (const auto& [problem, accumulate] : forms)
    for (const int lane_points : {1, 2}) {
      Params params = variant.default_params(problem, device);
      params["rows"] = "shared";
      params["accumulate"] = accumulate;
      params["lane_points"] = lane_points;
      SCOPED_TRACE(problem.str() + " " + params_label(params));
      ASSERT_FALSE(variant.param_space(problem, device).check(params).has_value());
      const auto request = registers_multik::kernel_request(problem, params, device);
      const std::string log = gpu::compile_image(request).log;
      EXPECT_EQ(log.find("warning"), std::string::npos) << log;
      EXPECT_EQ(kernel_resources(request, "multik_iteration").frame_bytes, 0);
    }
}

}  // namespace
}  // namespace mk
