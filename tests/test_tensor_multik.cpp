// tensor-multik compiles its kernel at run time for each (N, K range, block, stages). NVRTC
// needs no GPU, so these run everywhere: every shape the variant accepts must compile for the
// architectures mkbench targets, without spilling registers to local memory.
#include <gtest/gtest.h>

#include <iostream>
#include <regex>
#include <string>

#include "harness/variant.hpp"
#include "variants/tensor_multik.hpp"

namespace mk {
namespace {

DeviceInfo fake_gpu(int cc_major, int cc_minor) {
  DeviceInfo device;
  device.is_gpu = true;
  device.name = "NVRTC target";
  device.cc_major = cc_major;
  device.cc_minor = cc_minor;
  device.sm_count = 132;
  device.smem_per_block_optin = cc_major >= 9 ? 227 * 1024 : 163 * 1024;
  device.global_mem_bytes = int64_t(80) << 30;
  return device;
}

Problem shape(int n, int kmin, int kmax, int64_t m = 1 << 20) {
  Problem problem;
  problem.m = m;
  problem.n = n;
  problem.k = KRange{kmin, kmax};
  return problem;
}

// ptxas -v: "Used 96 registers, used 0 barriers, 8 bytes stack frame, 0 bytes spill stores".
int spill_store_bytes(const std::string& log) {
  std::smatch match;
  if (!std::regex_search(log, match, std::regex("([0-9]+) bytes spill stores"))) return -1;
  return std::stoi(match[1]);
}

TEST(TensorMultiKCompile, IssueFourShapesCompileForHopperWithoutSpills) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  const DeviceInfo device = fake_gpu(9, 0);
  for (const Problem& problem : {shape(8, 3, 7), shape(4, 3, 5), shape(16, 3, 7), shape(8, 16, 16)}) {
    SCOPED_TRACE(problem.str());
    ASSERT_FALSE(variant.can_implement(problem, device).has_value());
    const Params params = resolve_params(variant, problem, device, Params::object());
    const std::string log = tensor_multik::compile_report(problem, params, 9, 0);
    EXPECT_EQ(spill_store_bytes(log), 0) << log;
    std::smatch usage;  // the register count decides occupancy: worth seeing in CI logs
    if (std::regex_search(log, usage, std::regex("Used [0-9]+ registers[^\n]*")))
      std::cout << "[   INFO   ] " << problem.str() << ": " << usage[0] << "\n";
  }
}

TEST(TensorMultiKCompile, OddAndSmallShapesCompileForAmpereWithSharedStores) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  const DeviceInfo device = fake_gpu(8, 0);
  for (const Problem& problem : {shape(2, 3, 3), shape(3, 3, 7), shape(5, 1, 4), shape(32, 3, 3), shape(8, 3, 10)}) {
    SCOPED_TRACE(problem.str());
    ASSERT_FALSE(variant.can_implement(problem, device).has_value());
    const Params params = resolve_params(variant, problem, device, Params::object());
    EXPECT_EQ(params.at("transpose"), "shared-stores");
    const std::string log = tensor_multik::compile_report(problem, params, 8, 0);
    EXPECT_EQ(spill_store_bytes(log), 0) << log;
  }
}

TEST(TensorMultiKSpace, RefusesShapesBeyondItsRegisterTiles) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  const DeviceInfo hopper = fake_gpu(9, 0);
  const auto many_slots = variant.can_implement(shape(8, 3, 12), hopper);  // ΣK = 75
  ASSERT_TRUE(many_slots.has_value());
  EXPECT_NE(many_slots->find("exceeds 64 slots"), std::string::npos) << *many_slots;
  const auto wide = variant.can_implement(shape(32, 3, 7), hopper);  // 4 tiles × 4 k-steps
  ASSERT_TRUE(wide.has_value());
  EXPECT_NE(wide->find("register-resident centroid tiles"), std::string::npos) << *wide;
  const auto turing = variant.can_implement(shape(8, 3, 7), fake_gpu(7, 5));
  ASSERT_TRUE(turing.has_value());
  EXPECT_NE(turing->find("CC >= 8.0"), std::string::npos) << *turing;
}

TEST(TensorMultiKSpace, StmatrixIsOfferedOnlyOnHopper) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  const Problem problem = shape(8, 3, 7);
  const DeviceInfo ampere = fake_gpu(8, 6);
  Params stmatrix = variant.default_params(problem, ampere);
  stmatrix["transpose"] = "stmatrix";
  const auto reason = variant.param_space(problem, ampere).check(stmatrix);
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("sm_90"), std::string::npos) << *reason;
  EXPECT_EQ(variant.default_params(problem, fake_gpu(9, 0)).at("transpose"), "stmatrix");
}

TEST(TensorMultiKSpace, SoaLayoutIsRefusedWithTheAllowedValue) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  const Problem problem = shape(8, 3, 7);
  const DeviceInfo device = fake_gpu(9, 0);
  Params soa = variant.default_params(problem, device);
  soa["layout"] = "soa";
  const auto reason = variant.param_space(problem, device).check(soa);
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("aos"), std::string::npos) << *reason;
}

}  // namespace
}  // namespace mk
