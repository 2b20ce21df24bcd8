// tensor-multik's parameter space and defaults (no GPU needed): which points it offers, which
// it refuses and why, and the default rules that follow the measurements.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "datasets/dataset.hpp"
#include "tests/kernel_resources.hpp"
#include "variants/tensor_multik/tensor_multik.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

using testing_support::multik_shape;
using testing_support::nvrtc_target;

TEST(TensorMultiKSpace, IntegerGroupMinIsRefusedWithoutPreparedOperands) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  for (const DeviceInfo& device : {nvrtc_target(9, 0), nvrtc_target(8, 0)}) {
    const Problem problem = multik_shape(8, 3, 7);
    Params params = variant.default_params(problem, device);
    params["group_min"] = "int";
    params["fetch"] = "registers";
    params["operands"] = "per-step";
    const auto reason = variant.param_space(problem, device).check(params);
    ASSERT_TRUE(reason.has_value());
    EXPECT_NE(reason->find("group_min=int needs operands=prepared"), std::string::npos) << *reason;
    params["operands"] = "prepared";
    EXPECT_FALSE(variant.param_space(problem, device).check(params).has_value());
  }
}

// Its gain depends on the data (H200: N=4 −1.8 % and N=8 K=16 −1 % on uniform data, N=8 K=3..7
// +3.1 %; simulated, N=4 Gaussian data takes the fix-up 13 times as often), so no shape gets it
// by default.
TEST(TensorMultiKSpace, IntegerGroupMinIsNoDefault) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  for (const Problem& problem : {multik_shape(8, 3, 7), multik_shape(4, 3, 5), multik_shape(8, 16, 16), multik_shape(16, 3, 7)}) {
    SCOPED_TRACE(problem.str());
    EXPECT_EQ(variant.default_params(problem, nvrtc_target(9, 0)).at("group_min"), "float");
  }
}

// ‖x‖² rides in the last distance tile's free half: shapes without one, other widths, and the
// other distance and argmin forms are refused by name.
TEST(TensorMultiKSpace, RegisterFetchIsRefusedWhereItHasNoLayout) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  const DeviceInfo device = nvrtc_target(9, 0);
  auto refusal = [&](const Problem& problem, Params overrides) {
    overrides["fetch"] = "registers";
    overrides["operands"] = "per-step";  // from the FP32 rows: ‖x‖² needs the free half tile
    const Params params = resolve_params(variant, problem, device, Params::object());
    Params merged = params;
    merged.update(overrides);
    return variant.param_space(problem, device).check(merged);
  };
  EXPECT_FALSE(refusal(multik_shape(8, 3, 7), Params::object()).has_value());
  EXPECT_FALSE(refusal(multik_shape(4, 3, 5), Params::object()).has_value());
  for (const Problem& problem : {multik_shape(8, 16, 16), multik_shape(8, 2, 5), multik_shape(16, 3, 7), multik_shape(6, 3, 7)}) {
    SCOPED_TRACE(problem.str());
    const auto reason = refusal(problem, Params::object());
    ASSERT_TRUE(reason.has_value());
    EXPECT_NE(reason->find("fetch=registers"), std::string::npos) << *reason;
  }
  Params tf32 = Params::object();
  tf32["distance"] = "tf32x3";
  EXPECT_TRUE(refusal(multik_shape(8, 3, 7), tf32).has_value());
  Params packed = Params::object();
  packed["argmin"] = "packed";
  EXPECT_TRUE(refusal(multik_shape(8, 3, 7), packed).has_value());
}

// The default follows the H200 measurements (variants/tensor_multik/README.md): on Hopper, prepared operands
// read by fetch=registers wherever they apply (N of 4 or 8 with the mask argmin) and their copy
// fits the device memory; the ring elsewhere and off Hopper (not measured).
TEST(TensorMultiKSpace, PreparedOperandsAreTheDefaultOnHopperWhereTheyApply) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  auto defaults = [&](const Problem& problem, const DeviceInfo& device) {
    const Params params = variant.default_params(problem, device);
    return params.at("fetch").get<std::string>() + "/" + params.at("operands").get<std::string>();
  };
  const DeviceInfo hopper = nvrtc_target(9, 0), ampere = nvrtc_target(8, 0);
  for (const Problem& problem : {multik_shape(8, 3, 7), multik_shape(8, 1, 4), multik_shape(4, 3, 5), multik_shape(8, 16, 16)}) {
    SCOPED_TRACE(problem.str());
    EXPECT_EQ(defaults(problem, hopper), "registers/prepared");
    EXPECT_EQ(defaults(problem, ampere), "ring/per-step");
  }
  EXPECT_EQ(defaults(multik_shape(16, 3, 7), hopper), "ring/per-step");
  EXPECT_EQ(defaults(multik_shape(6, 3, 7), hopper), "ring/per-step");
  // 700·2^20 points of 8 dims (22 GiB): the rows (counted twice), the verify labels and the
  // accumulators need ~57 GiB of the 80, a prepared copy (~25 GiB more) would pass 90 %, so the
  // per-step form stays (fetch=registers still applies at N=8).
  const Problem huge = multik_shape(8, 3, 7, int64_t(700) << 20);
  ASSERT_FALSE(variant.can_implement(huge, hopper).has_value());
  EXPECT_EQ(defaults(huge, hopper), "registers/per-step");
}

// The L2 prefetch beyond the next step measured faster only at N=4 (H200): it is on
// by default there (one step) and off at N=8, and the axis is a tunable on every shape.
TEST(TensorMultiKSpace, L2PrefetchIsTheDefaultOnlyWherePreparedOperandsHaveFourDimensions) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  const DeviceInfo hopper = nvrtc_target(9, 0);
  EXPECT_EQ(variant.default_params(multik_shape(4, 3, 5), hopper).at("prefetch"), 1);
  EXPECT_EQ(variant.default_params(multik_shape(4, 4, 4), hopper).at("prefetch"), 1);
  EXPECT_EQ(variant.default_params(multik_shape(8, 3, 7), hopper).at("prefetch"), 0);
  EXPECT_EQ(variant.default_params(multik_shape(8, 16, 16), hopper).at("prefetch"), 0);
  EXPECT_EQ(variant.default_params(multik_shape(4, 3, 5), nvrtc_target(8, 0)).at("prefetch"), 0);  // per-step there
  const ParamSpace space = variant.param_space(multik_shape(8, 3, 7), hopper);
  ASSERT_NE(space.find("prefetch"), nullptr);
  Params params = variant.default_params(multik_shape(8, 3, 7), hopper);
  params["prefetch"] = 3;  // not one of the axis values
  EXPECT_TRUE(space.check(params).has_value());
}

// The prepared words have one layout, which fetch=registers loads into the fragment registers:
// other widths and argmins are refused, and so is fetch=ring (the prepared ring measured slower
// at every depth and was removed), each by name.
TEST(TensorMultiKSpace, PreparedOperandsAreRefusedOutsideTheirLayout) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  const DeviceInfo device = nvrtc_target(9, 0);
  auto refusal = [&](const Problem& problem, Params overrides) {
    Params params = resolve_params(variant, problem, device, Params::object());
    params["fetch"] = "registers";
    params["operands"] = "prepared";
    params.update(overrides);
    return variant.param_space(problem, device).check(params);
  };
  EXPECT_FALSE(refusal(multik_shape(4, 3, 5), Params::object()).has_value());
  EXPECT_FALSE(refusal(multik_shape(8, 16, 16), Params::object()).has_value());
  for (const Problem& problem : {multik_shape(16, 3, 7), multik_shape(6, 3, 7)}) {
    SCOPED_TRACE(problem.str());
    const auto reason = refusal(problem, Params::object());
    ASSERT_TRUE(reason.has_value());
    // (fetch=registers has the same layout, and its own restriction may speak first.)
    EXPECT_TRUE(reason->find("operands=prepared") != std::string::npos ||
                reason->find("fetch=registers") != std::string::npos)
        << *reason;
  }
  Params packed = Params::object();
  packed["argmin"] = "packed";
  EXPECT_TRUE(refusal(multik_shape(8, 3, 7), packed).has_value());
  Params ring = Params::object();
  ring["fetch"] = "ring";
  for (const Problem& problem : {multik_shape(4, 3, 5), multik_shape(8, 3, 7)}) {
    const auto reason = refusal(problem, ring);
    ASSERT_TRUE(reason.has_value()) << problem.str();
    EXPECT_NE(reason->find("operands=prepared needs fetch=registers"), std::string::npos) << *reason;
  }
}

TEST(TensorMultiKSpace, Fp16DistanceIsRefusedWithTheTf32Update) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  const DeviceInfo device = nvrtc_target(9, 0);
  const Problem problem = multik_shape(8, 3, 7);
  Params params = variant.default_params(problem, device);
  params["distance"] = "f16x2";
  EXPECT_FALSE(variant.param_space(problem, device).check(params).has_value());
  params["update"] = "tf32";
  const auto reason = variant.param_space(problem, device).check(params);
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("needs update=f16"), std::string::npos) << *reason;
}

TEST(TensorMultiKSpace, Fp16DistanceIsRefusedAboveSixteenDimensions) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  const DeviceInfo device = nvrtc_target(9, 0);
  const Problem wide = multik_shape(20, 4, 6);
  Params params = variant.default_params(wide, device);
  params["distance"] = "f16x2";
  const auto reason = variant.param_space(wide, device).check(params);
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("N <= 16"), std::string::npos) << *reason;
}

TEST(TensorMultiKSpace, MaskArgminIsTheDefaultUpToThirtyTwoSlots) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  const DeviceInfo device = nvrtc_target(9, 0);
  EXPECT_EQ(variant.default_params(multik_shape(8, 3, 7), device).at("argmin"), "mask");      // ΣK = 25
  EXPECT_EQ(variant.default_params(multik_shape(4, 32, 32), device).at("argmin"), "mask");    // ΣK = 32
  EXPECT_EQ(variant.default_params(multik_shape(5, 3, 10), device).at("argmin"), "packed");  // ΣK = 52
}

TEST(TensorMultiKSpace, MaskArgminIsRefusedAboveThirtyTwoSlots) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  const DeviceInfo device = nvrtc_target(9, 0);
  const Problem wide = multik_shape(5, 3, 10);  // ΣK = 52
  Params mask = variant.default_params(wide, device);
  mask["argmin"] = "mask";
  const auto reason = variant.param_space(wide, device).check(mask);
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("ΣK <= 32"), std::string::npos) << *reason;
  const Problem narrow = multik_shape(4, 32, 32);  // ΣK = 32: one full word
  Params full = variant.default_params(narrow, device);
  full["argmin"] = "mask";
  EXPECT_FALSE(variant.param_space(narrow, device).check(full).has_value());
}

TEST(TensorMultiKSpace, RefusesShapesBeyondItsRegisterTiles) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  const DeviceInfo hopper = nvrtc_target(9, 0);
  const auto many_slots = variant.can_implement(multik_shape(8, 3, 12), hopper);  // ΣK = 75
  ASSERT_TRUE(many_slots.has_value());
  EXPECT_NE(many_slots->find("exceeds 64 slots"), std::string::npos) << *many_slots;
  const auto wide = variant.can_implement(multik_shape(32, 3, 7), hopper);  // 4 tiles × 4 k-steps
  ASSERT_TRUE(wide.has_value());
  EXPECT_NE(wide->find("register-resident centroid tiles"), std::string::npos) << *wide;
  const auto turing = variant.can_implement(multik_shape(8, 3, 7), nvrtc_target(7, 5));
  ASSERT_TRUE(turing.has_value());
  EXPECT_NE(turing->find("CC >= 8.0"), std::string::npos) << *turing;
}

TEST(TensorMultiKSpace, StmatrixIsOfferedOnlyOnHopper) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  const Problem problem = multik_shape(8, 3, 7);
  const DeviceInfo ampere = nvrtc_target(8, 6);
  Params stmatrix = variant.default_params(problem, ampere);
  stmatrix["transpose"] = "stmatrix";
  const auto reason = variant.param_space(problem, ampere).check(stmatrix);
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("sm_90"), std::string::npos) << *reason;
  EXPECT_EQ(variant.default_params(problem, nvrtc_target(9, 0)).at("transpose"), "stmatrix");
}

Dataset constant_data(float value) {
  Dataset data;
  data.m = 4;
  data.n = 2;
  data.values = {0.f, value, -0.5f * value, 0.25f * value, 0.f, 0.f, value, -value};
  return data;
}

// FP16 holds the update's hi+lo split to ~22 bits between 2^-14 and 65504: data whose largest
// |x| is in [2^-6, 2^14) needs no multiply, anything else is brought to [2^13, 2^14).
TEST(TensorMultiKUpdateScale, IsOneInsideFp16sRangeAndAPowerOfTwoOutside) {
  EXPECT_EQ(tensor_multik::update_point_scale(constant_data(0.75f)), 1.f);
  EXPECT_EQ(tensor_multik::update_point_scale(constant_data(-0x1p-6f)), 1.f);
  EXPECT_EQ(tensor_multik::update_point_scale(constant_data(16000.f)), 1.f);
  EXPECT_EQ(tensor_multik::update_point_scale(constant_data(0.f)), 1.f);
  for (const float largest : {1e-4f, -3e-9f, 0x1p14f, 1e5f, -7e30f}) {
    const float scale = tensor_multik::update_point_scale(constant_data(largest));
    int exponent = 0;
    EXPECT_EQ(std::frexp(scale, &exponent), 0.5f) << largest << " -> " << scale;  // a power of two
    const float scaled = std::fabs(largest) * scale;
    EXPECT_GE(scaled, 0x1p13f) << largest;
    EXPECT_LT(scaled, 0x1p14f) << largest;
  }
  // Subnormal data would need more than 2^127: the scale stops at the largest finite power.
  EXPECT_EQ(tensor_multik::update_point_scale(constant_data(1e-40f)), 0x1p126f);
}

TEST(TensorMultiKSpace, SoaLayoutIsRefusedWithTheAllowedValue) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  const Problem problem = multik_shape(8, 3, 7);
  const DeviceInfo device = nvrtc_target(9, 0);
  Params soa = variant.default_params(problem, device);
  soa["layout"] = "soa";
  const auto reason = variant.param_space(problem, device).check(soa);
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("aos"), std::string::npos) << *reason;
}

}  // namespace
}  // namespace mk
