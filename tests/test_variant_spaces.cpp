// CPU-only checks of what shared-atomics, warp-centric, csr-sparse and auto declare: which
// shapes they accept on which device (with hand-made DeviceInfo descriptions, so this runs
// without a GPU), the reasons they give when they refuse, and the tunable spaces and
// restrictions they expose. The expected numbers are recomputed here from the published
// formulas (shared bytes = ΣK·(N+1)·4 + 8·#K, constant bank = 16384 floats), not read back
// from the variants.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "variants/variant.hpp"
#include "tests/synthetic_devices.hpp"

namespace mk {

// Defined in variants/auto_select.cpp.
std::pair<std::string, std::string> choose_auto_delegate(const Problem& problem, const DeviceInfo& device,
                                                         double sparse_threshold);

namespace {

using testing_support::cpu_only;
using testing_support::h100_like;
using testing_support::make_problem;


const Variant& variant(const std::string& name) { return Registry::instance().get(name); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Block-private shared-atomics footprint without staged centroids, from the documented formula.
int64_t shared_atomics_bytes(const Problem& p) {
  return int64_t(p.k.sum()) * (p.n + 1) * 4 + int64_t(p.k.count()) * 8;
}

Params with(Params params, const std::string& key, const nlohmann::json& value) {
  params[key] = value;
  return params;
}

const std::vector<std::string> kMyVariants = {"shared-atomics", "warp-centric", "csr-sparse", "auto"};

TEST(GpuVariantSpaces, AreRegisteredAsGpuVariants) {
  for (const auto& name : kMyVariants) {
    const Variant* v = Registry::instance().find(name);
    ASSERT_NE(v, nullptr) << name << " is not registered";
    EXPECT_TRUE(v->runs_on_gpu()) << name;
  }
}

TEST(GpuVariantSpaces, RefuseACpuOnlyMachineNamingTheGpu) {
  const Problem p = make_problem(1 << 20, 32, 3, 7);
  for (const auto& name : kMyVariants) {
    const auto reason = variant(name).can_implement(p, cpu_only());
    ASSERT_TRUE(reason.has_value()) << name;
    EXPECT_TRUE(contains(*reason, "GPU")) << name << ": " << *reason;
  }
}

TEST(GpuVariantSpaces, DefaultsAreLegalForAcceptedShapes) {
  const std::vector<Problem> problems = {
      make_problem(1000, 16, 3, 3),          make_problem(int64_t(1) << 25, 8, 3, 7),
      make_problem(int64_t(1) << 25, 32, 3, 7, 0.9), make_problem(int64_t(1) << 21, 128, 16, 16),
      make_problem(int64_t(1) << 21, 128, 300, 300), make_problem(int64_t(1) << 21, 64, 2, 40)};
  int checked = 0;
  for (const auto& name : kMyVariants)
    for (const Problem& p : problems) {
      if (variant(name).can_implement(p, h100_like())) continue;
      const Params params = variant(name).default_params(p, h100_like());
      EXPECT_EQ(variant(name).param_space(p, h100_like()).check(params), std::nullopt)
          << name << " " << p.str() << ": " << params.dump();
      ++checked;
    }
  EXPECT_GE(checked, 20);
}

// --- registers-multik -----------------------------------------------------------------
// Limits recomputed from the documented rules: ΣK ≤ 256 slots, K ≤ 256, N ≤ 128, mma
// accumulators ceil(N/8)·ceil(ΣK/8)·4 ≤ 128 registers (CC ≥ 8.0), register accumulators
// ΣK·N ≤ 256 values, constant table ΣK·(N+1)+1 ≤ 16384 floats.

TEST(RegistersMultiKSpace, AcceptsTheTable1ShapeOnH100AndDeclaresItsAxes) {
  const Problem p = make_problem(int64_t(1) << 25, 8, 3, 7);
  EXPECT_EQ(variant("registers-multik").can_implement(p, h100_like()), std::nullopt);
  const ParamSpace space = variant("registers-multik").param_space(p, h100_like());
  for (const char* axis : {"grid", "ppt", "block", "layout", "accumulate", "centroids", "lane_points", "rows"})
    EXPECT_NE(space.find(axis), nullptr) << axis;
  const Axis* lanes = space.find("lane_points");
  ASSERT_NE(lanes, nullptr);
  EXPECT_EQ(lanes->values, (std::vector<nlohmann::json>{1, 2}));
}

TEST(RegistersMultiKSpace, RefusesKAbove256NamingTheGemmVariants) {
  const auto reason = variant("registers-multik").can_implement(make_problem(1 << 21, 32, 1024, 1024), h100_like());
  ASSERT_TRUE(reason.has_value());
  EXPECT_TRUE(contains(*reason, "gemm")) << *reason;
}

TEST(RegistersMultiKSpace, RefusesMoreThan256CentroidSlots) {
  // 3..23 sums to 273 slots although every K is small.
  const auto reason = variant("registers-multik").can_implement(make_problem(1 << 20, 2, 3, 23), h100_like());
  ASSERT_TRUE(reason.has_value());
  EXPECT_TRUE(contains(*reason, "273")) << *reason;
}

TEST(RegistersMultiKSpace, RefusesMmaOnTuringWhenRegisterAccumulatorsDoNotFitEither) {
  DeviceInfo turing = h100_like();
  turing.cc_major = 7;
  turing.cc_minor = 5;
  const Problem p = make_problem(1 << 20, 16, 3, 7);  // ΣK·N = 400 > 256
  const auto reason = variant("registers-multik").can_implement(p, turing);
  ASSERT_TRUE(reason.has_value());
  EXPECT_TRUE(contains(*reason, "CC >= 8.0")) << *reason;
  // The seed's own shape fits register accumulation (25·8 = 200 values) and runs there.
  EXPECT_EQ(variant("registers-multik").can_implement(make_problem(1 << 20, 8, 3, 7), turing), std::nullopt);
}

TEST(RegistersMultiKSpace, DefaultIsThePersistentGridWithTwoPointsPerLaneOnlyForSmallTables) {
  const Problem p = make_problem(int64_t(1) << 25, 8, 3, 7);
  const Params defaults = variant("registers-multik").default_params(p, h100_like());
  EXPECT_EQ(defaults.at("grid"), 0);
  EXPECT_EQ(defaults.at("ppt"), 0);
  EXPECT_EQ(defaults.at("block"), 256);
  EXPECT_EQ(defaults.at("accumulate"), "mma");
  EXPECT_EQ(defaults.at("lane_points"), 1);  // ΣK·N = 200
  EXPECT_EQ(variant("registers-multik").param_space(p, h100_like()).check(defaults), std::nullopt);
  const Problem small = make_problem(int64_t(1) << 25, 4, 3, 5);  // ΣK·N = 48
  EXPECT_EQ(variant("registers-multik").default_params(small, h100_like()).at("lane_points"), 2);
}

TEST(RegistersMultiKSpace, GridAndPointsPerThreadAreNotBothSet) {
  const Problem p = make_problem(int64_t(1) << 25, 8, 3, 7);
  const Params defaults = variant("registers-multik").default_params(p, h100_like());
  const ParamSpace space = variant("registers-multik").param_space(p, h100_like());
  EXPECT_TRUE(space.check(with(with(defaults, "grid", 264), "ppt", 16)).has_value());
  EXPECT_EQ(space.check(with(defaults, "grid", 264)), std::nullopt);
}

TEST(RegistersMultiKSpace, CentroidPlacementIsATunableAxisNotASeparateKernel) {
  const Problem p = make_problem(int64_t(1) << 25, 8, 3, 7);
  const ParamSpace space = variant("registers-multik").param_space(p, h100_like());
  const Axis* centroids = space.find("centroids");
  ASSERT_NE(centroids, nullptr);
  EXPECT_EQ(centroids->values, (std::vector<nlohmann::json>{"constant", "shared"}));
  const Params shared = with(variant("registers-multik").default_params(p, h100_like()), "centroids", "shared");
  EXPECT_EQ(space.check(shared), std::nullopt);
}

// --- shared-atomics -------------------------------------------------------------------

TEST(SharedAtomicsSpace, AcceptsTheSeedShapeOnH100) {
  EXPECT_EQ(variant("shared-atomics").can_implement(make_problem(int64_t(1) << 25, 8, 3, 7), h100_like()),
            std::nullopt);
}

TEST(SharedAtomicsSpace, RefusesSumsBeyondSharedMemoryCitingTheBytes) {
  const DeviceInfo device = h100_like();
  // K=450, N=128: 450·129·4 + 8 = 232208 B ≤ 232448 B; K=451 needs 232724 B.
  const Problem fits = make_problem(1 << 20, 128, 450, 450);
  const Problem too_big = make_problem(1 << 20, 128, 451, 451);
  ASSERT_LE(shared_atomics_bytes(fits), device.smem_per_block_optin);
  ASSERT_GT(shared_atomics_bytes(too_big), device.smem_per_block_optin);
  EXPECT_EQ(variant("shared-atomics").can_implement(fits, device), std::nullopt);
  const auto reason = variant("shared-atomics").can_implement(too_big, device);
  ASSERT_TRUE(reason.has_value());
  EXPECT_TRUE(contains(*reason, std::to_string(shared_atomics_bytes(too_big)))) << *reason;
  EXPECT_TRUE(contains(*reason, std::to_string(device.smem_per_block_optin))) << *reason;
}

TEST(SharedAtomicsSpace, GridAxisIsMultiplesOfTheSmCount) {
  const ParamSpace space = variant("shared-atomics").param_space(make_problem(1 << 20, 8, 3, 7), h100_like());
  const Axis* grid = space.find("grid");
  ASSERT_NE(grid, nullptr);
  EXPECT_EQ(grid->values, (std::vector<nlohmann::json>{132, 264, 528, 1056, 2112, 4224}));
  const Axis* block = space.find("block");
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->values, (std::vector<nlohmann::json>{128, 256, 512, 1024}));
  ASSERT_NE(space.find("layout"), nullptr);
  EXPECT_EQ(space.find("layout")->values, (std::vector<nlohmann::json>{"aos", "soa"}));
}

TEST(SharedAtomicsSpace, ConstantCentroidsNeedAtMost16384Values) {
  const Variant& v = variant("shared-atomics");
  const DeviceInfo device = h100_like();
  const Problem at_limit = make_problem(1 << 20, 1024, 16, 16);  // ΣK·N = 16384
  const Problem over = make_problem(1 << 20, 1025, 16, 16);      // 16400
  ASSERT_EQ(v.can_implement(at_limit, device), std::nullopt);
  ASSERT_EQ(v.can_implement(over, device), std::nullopt);
  const Params at_limit_constant = with(v.default_params(at_limit, device), "centroids", "constant");
  EXPECT_EQ(v.param_space(at_limit, device).check(at_limit_constant), std::nullopt);
  const Params over_constant = with(v.default_params(over, device), "centroids", "constant");
  const auto reason = v.param_space(over, device).check(over_constant);
  ASSERT_TRUE(reason.has_value());
  EXPECT_TRUE(contains(*reason, "constant")) << *reason;
  EXPECT_NE(v.default_params(over, device).at("centroids"), "constant");
}

TEST(SharedAtomicsSpace, SharedCentroidsAreRestrictedWhenSumsAndCentroidsDoNotBothFit) {
  const Variant& v = variant("shared-atomics");
  const DeviceInfo device = h100_like();
  // K=300, N=128: sums 154808 B fit; staging another 300·128·4 = 153600 B does not.
  const Problem p = make_problem(1 << 20, 128, 300, 300);
  ASSERT_LE(shared_atomics_bytes(p), device.smem_per_block_optin);
  ASSERT_GT(shared_atomics_bytes(p) + 300 * 128 * 4, device.smem_per_block_optin);
  ASSERT_EQ(v.can_implement(p, device), std::nullopt);
  const ParamSpace space = v.param_space(p, device);
  const Params defaults = v.default_params(p, device);
  EXPECT_EQ(defaults.at("centroids"), "global");
  EXPECT_TRUE(space.check(with(defaults, "centroids", "shared")).has_value());
  EXPECT_EQ(space.check(with(defaults, "centroids", "global")), std::nullopt);
}

TEST(SharedAtomicsSpace, SmallSeedShapeDefaultsToConstantSoaAndWarpAggregation) {
  const Variant& v = variant("shared-atomics");
  const Problem p = make_problem(int64_t(1) << 25, 8, 3, 7);
  const Params defaults = v.default_params(p, h100_like());
  EXPECT_EQ(defaults.at("centroids"), "constant");
  EXPECT_EQ(defaults.at("layout"), "soa");
  EXPECT_EQ(defaults.at("aggregate"), "warp");
  EXPECT_EQ(defaults.at("grid").get<int>() % 132, 0);
}

// --- warp-centric ---------------------------------------------------------------------

TEST(WarpCentricSpace, RefusesFewerThan16Dimensions) {
  const Variant& v = variant("warp-centric");
  const auto reason = v.can_implement(make_problem(1 << 20, 15, 3, 7), h100_like());
  ASSERT_TRUE(reason.has_value());
  EXPECT_EQ(*reason, "warp-centric needs N >= 16 (lanes split the feature dimension)");
  EXPECT_EQ(v.can_implement(make_problem(1 << 20, 16, 3, 7), h100_like()), std::nullopt);
}

TEST(WarpCentricSpace, RefusesMoreDimensionsThanItsRegisterCacheHolds) {
  const Variant& v = variant("warp-centric");
  EXPECT_EQ(v.can_implement(make_problem(1 << 20, 128, 3, 7), h100_like()), std::nullopt);
  const auto reason = v.can_implement(make_problem(1 << 20, 129, 3, 7), h100_like());
  ASSERT_TRUE(reason.has_value());
  EXPECT_TRUE(contains(*reason, "128")) << *reason;
}

TEST(WarpCentricSpace, DeclaresItsAxes) {
  const ParamSpace space = variant("warp-centric").param_space(make_problem(1 << 20, 64, 3, 7), h100_like());
  ASSERT_NE(space.find("points_per_warp"), nullptr);
  EXPECT_EQ(space.find("points_per_warp")->values, (std::vector<nlohmann::json>{1, 2, 4, 8}));
  ASSERT_NE(space.find("block"), nullptr);
  EXPECT_EQ(space.find("block")->values, (std::vector<nlohmann::json>{128, 256, 512}));
  ASSERT_NE(space.find("layout"), nullptr);
  EXPECT_EQ(space.find("layout")->values, (std::vector<nlohmann::json>{"aos"}));
  // Nothing is restricted for a small problem: every combination fits.
  EXPECT_EQ(space.enumerate().size(), space.size_unrestricted());
}

TEST(WarpCentricSpace, SharedAccumulationIsRestrictedWhenTheSumsDoNotFit) {
  const Variant& v = variant("warp-centric");
  const DeviceInfo device = h100_like();
  const Problem p = make_problem(1 << 20, 128, 451, 451);  // sums 232724 B > 232448 B
  ASSERT_EQ(v.can_implement(p, device), std::nullopt);
  const ParamSpace space = v.param_space(p, device);
  const Params defaults = v.default_params(p, device);
  EXPECT_EQ(defaults.at("accumulate"), "global");
  EXPECT_EQ(space.check(defaults), std::nullopt);
  EXPECT_TRUE(space.check(with(defaults, "accumulate", "shared")).has_value());
}

// --- csr-sparse -----------------------------------------------------------------------

TEST(CsrSparseSpace, RunsOnDenseDataToo) {
  EXPECT_EQ(variant("csr-sparse").can_implement(make_problem(1 << 20, 32, 3, 7, 0.0), h100_like()), std::nullopt);
}

TEST(CsrSparseSpace, RefusesOnlyForMemoryAndTheEstimateFollowsSparsity) {
  const Variant& v = variant("csr-sparse");
  DeviceInfo small = h100_like();
  small.global_mem_bytes = int64_t(12) << 30;
  // 2^25 × 32 floats = 4 GiB: dense CSR adds 8 GiB of (column, value) pairs, 90% zeros
  // only 0.8 GiB.
  const Problem dense = make_problem(int64_t(1) << 25, 32, 8, 8, 0.0);
  const Problem sparse = make_problem(int64_t(1) << 25, 32, 8, 8, 0.9);
  const auto reason = v.can_implement(dense, small);
  ASSERT_TRUE(reason.has_value());
  EXPECT_TRUE(contains(*reason, "MiB")) << *reason;
  EXPECT_EQ(v.can_implement(sparse, small), std::nullopt);
}

TEST(CsrSparseSpace, LanesPerRowFollowTheNonZerosPerRow) {
  const Variant& v = variant("csr-sparse");
  const ParamSpace space = v.param_space(make_problem(1 << 20, 32, 3, 7, 0.95), h100_like());
  ASSERT_NE(space.find("rows_per_warp"), nullptr);
  EXPECT_EQ(space.find("rows_per_warp")->values, (std::vector<nlohmann::json>{1, 4, 32}));
  // 32 × 5% ≈ 1.6 non-zeros per row: one thread per row; 128 dense values: a warp per row.
  EXPECT_EQ(v.default_params(make_problem(1 << 20, 32, 3, 7, 0.95), h100_like()).at("rows_per_warp"), 32);
  EXPECT_EQ(v.default_params(make_problem(1 << 20, 128, 3, 7, 0.0), h100_like()).at("rows_per_warp"), 1);
}

// --- auto -----------------------------------------------------------------------------

TEST(AutoSpace, OnlyParameterIsTheSparseThreshold) {
  const Variant& v = variant("auto");
  const Problem p = make_problem(1 << 20, 32, 3, 7);
  const ParamSpace space = v.param_space(p, h100_like());
  ASSERT_EQ(space.axes.size(), 1u);
  EXPECT_EQ(space.axes[0].name, "sparse_threshold");
  EXPECT_EQ(space.axes[0].values, (std::vector<nlohmann::json>{0.5, 0.6, 0.7, 0.8, 0.9}));
  EXPECT_EQ(v.default_params(p, h100_like()), (Params{{"sparse_threshold", 0.7}}));
}

TEST(AutoSpace, SparseDataAtOrAboveTheThresholdGoesToCsr) {
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 20, 32, 3, 7, 0.9), h100_like(), 0.7).first, "csr-sparse");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 20, 32, 3, 7, 0.7), h100_like(), 0.7).first, "csr-sparse");
  EXPECT_NE(choose_auto_delegate(make_problem(1 << 20, 32, 3, 7, 0.69), h100_like(), 0.7).first, "csr-sparse");
}

// The first of the documented dense chain for the shape's class that is registered and
// accepts the shape (auto_select.cpp's header: N >= 64, K < 256, otherwise).
std::string expected_dense_delegate(const Problem& p, const DeviceInfo& device) {
  std::vector<std::string> chain;
  if (p.n >= 64 && p.k.kmax >= 48) {
    chain = {"gemm-window", "warp-centric", "gemm-cublas", "gemm-tf32x3", "shared-atomics", "naive-atomics"};
    if (p.k.kmin == p.k.kmax && p.n <= 128 && p.k.kmax >= 100) chain.insert(chain.begin(), "tf32-window");
  } else if (p.n >= 64) chain = {"warp-centric", "gemm-cublas", "gemm-tf32x3", "shared-atomics", "naive-atomics"};
  else if (p.k.kmax < 256 && p.n <= 4 && p.k.kmin == p.k.kmax && (p.k.kmax <= 4 || p.k.kmax > 16))
    chain = {"registers-multik", "tensor-multik", "shared-atomics", "gemm-tf32x3", "naive-atomics"};
  else if (p.k.kmax < 256) chain = {"tensor-multik", "registers-multik", "shared-atomics", "gemm-tf32x3", "naive-atomics"};
  else chain = {"gemm-tf32x3", "gemm-cublas", "registers-multik", "shared-atomics", "naive-atomics"};
  if (p.n >= 4 && p.n <= 16 && p.k.kmax < 256)
    chain.insert(std::find(chain.begin(), chain.end(), "tensor-multik") + 1, "tensor-multik-passes");
  if (p.n < 64 && p.k.kmin == p.k.kmax && p.k.kmax >= 128) chain.insert(chain.begin(), "tf32-window");
  if (p.n >= 20 && p.k.kmin == p.k.kmax && p.k.kmax >= 48 && p.k.kmax < 128) chain.insert(chain.begin(), "gemm-window");
  for (const auto& name : chain) {
    const Variant* v = Registry::instance().find(name);
    if (v && !v->can_implement(p, device)) return name;
  }
  return "";
}

TEST(AutoSpace, DenseDelegateFollowsTheMeasuredShapeClasses) {
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 8, 3, 7), h100_like(), 0.7).first, "tensor-multik");
  // ΣK beyond one tensor-multik pass: tensor-multik-passes takes it at N = 4..16 (N=8 K=3..12
  // M=32M 1.40 ms against registers-multik's 3.92 on an H200, 908b37d), registers-multik below
  // N=4 (N=2 K=10..16: 2.61 against 2.81, b8889ba) and above N=16 (not measured).
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 8, 3, 12), h100_like(), 0.7).first, "tensor-multik-passes");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 16, 3, 9), h100_like(), 0.7).first, "tensor-multik-passes");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 2, 10, 16), h100_like(), 0.7).first, "registers-multik");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 20, 4, 12), h100_like(), 0.7).first, "registers-multik");
  // One K <= 4 or > 16 at N <= 4 measured faster on registers-multik; N=8, K=5 or K=16 did not.
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 4, 4, 4), h100_like(), 0.7).first, "registers-multik");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 4, 25, 25), h100_like(), 0.7).first, "registers-multik");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 4, 5, 5), h100_like(), 0.7).first, "tensor-multik");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 8, 4, 4), h100_like(), 0.7).first, "tensor-multik");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 8, 16, 16), h100_like(), 0.7).first, "tensor-multik");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 12, 4, 4), h100_like(), 0.7).first, "tensor-multik");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 32, 1024, 1024), h100_like(), 0.7).first, "tf32-window");
  // A K range, or a centroid table beyond shared memory, falls through to gemm-tf32x3.
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 32, 300, 400), h100_like(), 0.7).first, "gemm-tf32x3");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 32, 4096, 4096), h100_like(), 0.7).first, "gemm-tf32x3");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 128, 4096, 4096), h100_like(), 0.7).first, "gemm-window");
}

// gemm-window's entry (H100 mainstream.txt, H200 mid-n.json): issue 32's rows with N >= 64 go
// to it, except one K >= 100 up to N = 128 where tf32-window's table fits (H200, 909355b);
// K < 48 at N >= 64 stays with warp-centric; N > 1024, which it refuses, falls through to the
// measured chain; so does a device without mma.sync (CC < 8).
TEST(AutoSpace, MainstreamRowsWithNSixtyFourAndKFortyEightOrMoreGoToGemmWindow) {
  const DeviceInfo device = h100_like();
  for (const Problem& p : {make_problem(1 << 21, 128, 1024, 1024), make_problem(1 << 20, 256, 4096, 4096),
                           make_problem(1000000, 768, 1000, 1000), make_problem(1 << 20, 64, 64, 64),
                           make_problem(1 << 20, 128, 99, 99)})
    EXPECT_EQ(choose_auto_delegate(p, device, 0.7).first, "gemm-window") << p.str();
  for (const Problem& p : {make_problem(1 << 22, 64, 256, 256), make_problem(1 << 20, 128, 100, 100),
                           make_problem(1 << 21, 96, 256, 256), make_problem(1 << 20, 128, 512, 512)})
    EXPECT_EQ(choose_auto_delegate(p, device, 0.7).first, "tf32-window") << p.str();
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 128, 48, 48), device, 0.7).first, "gemm-window");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 128, 47, 47), device, 0.7).first, "warp-centric");
  // One K of 48..127 at N = 20..63 (measured at N=32 K=64 M=16M and K=48 at N=20, 32, 48);
  // K=47 and N=19 keep the chain.
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 24, 32, 64, 64), device, 0.7).first, "gemm-window");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 23, 20, 48, 48), device, 0.7).first, "gemm-window");
  EXPECT_NE(choose_auto_delegate(make_problem(1 << 24, 32, 47, 47), device, 0.7).first, "gemm-window");
  EXPECT_NE(choose_auto_delegate(make_problem(1 << 24, 19, 64, 64), device, 0.7).first, "gemm-window");
  const Problem narrow = make_problem(1 << 21, 63, 1024, 1024);
  EXPECT_EQ(choose_auto_delegate(narrow, device, 0.7).first, expected_dense_delegate(narrow, device));
  EXPECT_NE(choose_auto_delegate(narrow, device, 0.7).first, "gemm-window");
  const Problem wide = make_problem(1 << 16, 1025, 256, 256);
  ASSERT_TRUE(variant("gemm-window").can_implement(wide, device).has_value());
  EXPECT_EQ(choose_auto_delegate(wide, device, 0.7).first, expected_dense_delegate(wide, device));
  EXPECT_NE(choose_auto_delegate(wide, device, 0.7).first, "gemm-window");
  DeviceInfo turing = device;
  turing.cc_major = 7;
  turing.cc_minor = 5;
  const Problem row = make_problem(1 << 21, 128, 1024, 1024);
  ASSERT_TRUE(variant("gemm-window").can_implement(row, turing).has_value());
  EXPECT_EQ(choose_auto_delegate(row, turing, 0.7).first, expected_dense_delegate(row, turing));
  EXPECT_NE(choose_auto_delegate(row, turing, 0.7).first, "gemm-window");
}

TEST(AutoSpace, ClassBoundariesAreNSixtyFourKOneHundredTwentyEightForOneKAndKTwoHundredFiftySix) {
  const DeviceInfo device = h100_like();
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 64, 16, 16), device, 0.7).first, "warp-centric");
  EXPECT_NE(choose_auto_delegate(make_problem(1 << 21, 63, 16, 16), device, 0.7).first, "warp-centric");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 8, 127, 127), device, 0.7).first, "registers-multik");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 8, 128, 128), device, 0.7).first, "tf32-window");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 8, 127, 128), device, 0.7).first, "registers-multik");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 8, 256, 256), device, 0.7).first, "tf32-window");
  EXPECT_EQ(choose_auto_delegate(make_problem(1 << 21, 8, 250, 260), device, 0.7).first, "gemm-tf32x3");
}

TEST(AutoSpace, DeviceWithoutTf32MmaFallsBackAlongTheChain) {
  DeviceInfo turing = h100_like();
  turing.cc_major = 7;
  turing.cc_minor = 5;
  const Problem p = make_problem(1 << 21, 32, 1024, 1024);
  ASSERT_TRUE(variant("gemm-tf32x3").can_implement(p, turing).has_value());
  const auto [delegate, reason] = choose_auto_delegate(p, turing, 0.7);
  EXPECT_EQ(delegate, "gemm-cublas");
  EXPECT_TRUE(contains(reason, "gemm-tf32x3")) << reason;
}

TEST(AutoSpace, DenseDataGoesToTheFirstDenseVariantThatCanRun) {
  const Problem p = make_problem(1 << 20, 32, 3, 7, 0.1);
  const auto [delegate, reason] = choose_auto_delegate(p, h100_like(), 0.7);
  EXPECT_EQ(delegate, expected_dense_delegate(p, h100_like()));
  EXPECT_FALSE(delegate.empty()) << reason;
  EXPECT_TRUE(contains(reason, "sparsity")) << reason;
}

TEST(AutoSpace, FallsBackToDenseWhenCsrCannotRun) {
  DeviceInfo small = h100_like();
  small.global_mem_bytes = int64_t(12) << 30;
  const Problem p = make_problem(int64_t(1) << 25, 32, 8, 8, 0.5);  // dense-sized CSR does not fit
  ASSERT_TRUE(variant("csr-sparse").can_implement(p, small).has_value());
  const auto [delegate, reason] = choose_auto_delegate(p, small, 0.5);
  EXPECT_EQ(delegate, expected_dense_delegate(p, small));
  EXPECT_TRUE(contains(reason, "csr-sparse")) << reason;
}

}  // namespace
}  // namespace mk
