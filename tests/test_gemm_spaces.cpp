// Checks of the GEMM-distance variants. CPU-only: the near-tie error window that keeps their
// labels exact (against an FP64 reference on emulated GPU arithmetic), TF32 rounding, and the
// capability checks and parameter spaces they declare for hand-made devices. On a GPU (skipped
// otherwise): every legal parameter point against the FP64 reference, including forced exact
// ties that must take the re-check path, and gemm-tf32x3's update=sorted on its edge cases.
#include <gtest/gtest.h>

#include <cctype>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "core/device_info.hpp"
#include "harness/reference.hpp"
#include "variants/variant.hpp"
#include "tests/synthetic_devices.hpp"
#include "variants/common/near_tie_bound.hpp"

namespace mk {
namespace {

using gemm::DotArithmetic;
using testing_support::cpu_only;
using testing_support::h100_like;
using testing_support::make_problem;
using testing_support::t4_like;

// ---------------------------------------------------------------------------------------
// TF32 rounding

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

TEST(Tf32Round, KeepsValuesThatAreAlreadyTf32) {
  for (float v : {0.f, 1.f, -1.f, 0.5f, 1.5f, -3.f, 1024.f, 1.f + 0x1p-10f})
    EXPECT_EQ(gemm::tf32_round(v), v) << v;
}

TEST(Tf32Round, RoundsToNearestWithTiesAwayFromZero) {
  EXPECT_EQ(gemm::tf32_round(1.f + 0x1p-11f), 1.f + 0x1p-10f);      // tie: away from zero
  EXPECT_EQ(gemm::tf32_round(-(1.f + 0x1p-11f)), -(1.f + 0x1p-10f));
  EXPECT_EQ(gemm::tf32_round(1.f + 0x1p-11f - 0x1p-23f), 1.f);      // just below the tie
  EXPECT_EQ(gemm::tf32_round(1.f + 0x1p-11f + 0x1p-23f), 1.f + 0x1p-10f);
}

TEST(Tf32Round, LeavesInfinityAndNanAlone) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(gemm::tf32_round(inf), inf);
  EXPECT_TRUE(std::isnan(gemm::tf32_round(std::numeric_limits<float>::quiet_NaN())));
}

TEST(Tf32Round, ErrorAndSplitErrorMatchTheBoundsTheWindowAssumes) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mantissa(1.f, 2.f);
  std::uniform_int_distribution<int> exponent(-40, 40);
  for (int trial = 0; trial < 100000; ++trial) {
    const float v = std::ldexp(mantissa(rng), exponent(rng)) * (trial % 2 ? 1.f : -1.f);
    const float hi = gemm::tf32_round(v);
    EXPECT_EQ(bits_of(hi) & 0x1fffu, 0u);
    ASSERT_LE(std::abs(double(v) - hi), 0x1p-11 * std::abs(double(v))) << v;
    const float rest = v - hi;
    ASSERT_EQ(double(rest), double(v) - double(hi)) << "v - hi must be exact in FP32";
    const float lo = gemm::tf32_round(rest);
    ASSERT_LE(std::abs(double(v) - hi - lo), 0x1p-22 * std::abs(double(v))) << v;
  }
}

// ---------------------------------------------------------------------------------------
// The near-tie window against emulated GPU arithmetic

float truncate_tf32(float value) {
  uint32_t bits = bits_of(value) & 0xffffe000u;
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

// x·c as each variant's hardware path computes it (sequential order; the bound holds for
// any order, so one order is enough to exercise the logic).
float emulated_dot(const std::vector<float>& x, const float* c, DotArithmetic arithmetic) {
  float acc = 0.f;
  for (size_t d = 0; d < x.size(); ++d) {
    switch (arithmetic) {
      case DotArithmetic::Fp32:
        acc = std::fma(x[d], c[d], acc);
        break;
      case DotArithmetic::CublasTf32:  // worst case: the inputs are truncated, not rounded
        acc = std::fma(truncate_tf32(x[d]), truncate_tf32(c[d]), acc);
        break;
      case DotArithmetic::Tf32:
        acc = std::fma(gemm::tf32_round(x[d]), gemm::tf32_round(c[d]), acc);
        break;
      case DotArithmetic::Tf32x3: {
        const float xh = gemm::tf32_round(x[d]), xl = gemm::tf32_round(x[d] - xh);
        const float ch = gemm::tf32_round(c[d]), cl = gemm::tf32_round(c[d] - ch);
        acc = std::fma(xl, ch, acc);
        acc = std::fma(xh, cl, acc);
        acc = std::fma(xh, ch, acc);
        break;
      }
    }
  }
  return acc;
}

struct WindowStats {
  int64_t trials = 0;
  int64_t wrong_winners = 0;    // computed winner farther than the exact winner
  int64_t uncovered = 0;        // ... and the window claimed certainty: a label bug
  int64_t flagged = 0;          // points the window sends to the exact re-check
  double worst_error_ratio = 0; // max over trials of (δ_j + δ_b) / window, j nearer than b
};

// Points with ‖x‖ ≈ scale·√(2n) ≫ D = 1 (the cancellation the expansion suffers from) and k
// centroids on a sphere of radius ~1 around x, radii perturbed by a log-uniform 1e-8..1: from
// hopeless ties to clear winners, so the window both must flag and may clear points. scale
// is chosen per arithmetic so the window is of the order of D².
WindowStats run_window_trials(DotArithmetic arithmetic, int n, double scale, int trials, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> log_jitter(-8.0, 0.0), sign(-0.9, 0.9);
  const gemm::ExpansionErrorModel model = gemm::expansion_error_model(arithmetic, n);
  const int k = 8;
  WindowStats stats;
  std::vector<float> x(n), centroids(size_t(k) * n);
  std::vector<double> direction(n), exact(k), expansion_error(k);
  std::vector<float> cnorm(k);
  for (int trial = 0; trial < trials; ++trial) {
    for (int d = 0; d < n; ++d) x[d] = float(scale * (1.0 + normal(rng)));
    const double jitter_scale = std::pow(10.0, log_jitter(rng));
    for (int c = 0; c < k; ++c) {
      double norm = 0;
      for (int d = 0; d < n; ++d) {
        direction[d] = normal(rng);
        norm += direction[d] * direction[d];
      }
      const double radius = (1.0 + jitter_scale * sign(rng)) / std::sqrt(norm);
      for (int d = 0; d < n; ++d) centroids[size_t(c) * n + d] = float(x[d] + radius * direction[d]);
    }
    float x_norm2 = 0.f;
    for (int d = 0; d < n; ++d) x_norm2 = std::fma(x[d], x[d], x_norm2);

    float best = INFINITY, second = INFINITY;
    int best_index = 0, exact_index = 0;
    for (int c = 0; c < k; ++c) {
      const float* cc = &centroids[size_t(c) * n];
      double norm2 = 0, dot = 0, dist = 0;
      for (int d = 0; d < n; ++d) {
        norm2 += double(cc[d]) * cc[d];
        dot += double(x[d]) * cc[d];
        const double diff = double(x[d]) - cc[d];
        dist += diff * diff;
      }
      cnorm[c] = float(norm2);
      exact[c] = dist;
      if (dist < exact[exact_index]) exact_index = c;
      const float e = std::fma(-2.f, emulated_dot(x, cc, arithmetic), cnorm[c]);
      expansion_error[c] = std::abs(double(e) - (norm2 - 2.0 * dot));
      if (e < best) {
        second = best;
        best = e;
        best_index = c;
      } else if (e < second) {
        second = e;
      }
    }
    const float window = gemm::near_tie_window(x_norm2, best, cnorm[best_index], model);
    for (int c = 0; c < k; ++c)
      if (exact[c] <= exact[best_index])
        stats.worst_error_ratio = std::max(stats.worst_error_ratio,
                                           (expansion_error[c] + expansion_error[best_index]) / window);
    const bool flagged = !(second - best > window);
    ++stats.trials;
    stats.flagged += flagged;
    if (exact[best_index] > exact[exact_index]) {
      ++stats.wrong_winners;
      if (!flagged) ++stats.uncovered;
    }
  }
  return stats;
}

struct WindowCase {
  DotArithmetic arithmetic;
  int n;
  double scale;
};

class NearTieWindow : public ::testing::TestWithParam<WindowCase> {};

TEST_P(NearTieWindow, EveryMisrankedPointIsSentToTheExactRecheck) {
  const WindowCase c = GetParam();
  const WindowStats stats = run_window_trials(c.arithmetic, c.n, c.scale, 4000, 1234u + c.n);
  SCOPED_TRACE(std::string(gemm::to_string(c.arithmetic)) + " n=" + std::to_string(c.n));
  // The scenario must produce mis-rankings and clear winners, or it would prove nothing.
  EXPECT_GT(stats.wrong_winners, 0);
  EXPECT_LT(stats.flagged, stats.trials);
  EXPECT_EQ(stats.uncovered, 0) << stats.wrong_winners << " mis-ranked, " << stats.flagged << " flagged of "
                                << stats.trials;
  // The guarantee itself: the errors of any nearer centroid and of the winner fit in the
  // window. And the window is not absurdly loose (observed errors reach a visible fraction).
  EXPECT_LE(stats.worst_error_ratio, 1.0);
  EXPECT_GT(stats.worst_error_ratio, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(
    Arithmetics, NearTieWindow,
    ::testing::Values(WindowCase{DotArithmetic::Fp32, 3, 300.0}, WindowCase{DotArithmetic::Fp32, 32, 30.0},
                      WindowCase{DotArithmetic::Fp32, 200, 5.0}, WindowCase{DotArithmetic::Tf32x3, 32, 10.0},
                      WindowCase{DotArithmetic::Tf32x3, 200, 1.0}, WindowCase{DotArithmetic::Tf32, 32, 1.0},
                      WindowCase{DotArithmetic::CublasTf32, 32, 1.0}));

TEST(NearTieWindowWidth, ClearWinnersAreNotFlaggedSoTheRecheckStaysRare) {
  // Centred data, fp32, N=32: ‖x‖² ≈ 32, winner at distance² ≈ 1. The window is a few
  // 1e-5 of ‖x‖², so a runner-up 1% farther is certain.
  const gemm::ExpansionErrorModel model = gemm::expansion_error_model(DotArithmetic::Fp32, 32);
  const float x_norm2 = 32.f, c_norm2 = 33.f;
  const float best_e = 1.f - x_norm2;  // D_b² = 1
  const float window = gemm::near_tie_window(x_norm2, best_e, c_norm2, model);
  EXPECT_GT(window, 0.f);
  EXPECT_LT(window, 0.01f);
  EXPECT_GT(window, 1e-5f);  // and it is not smaller than the FP32 rounding it must cover
}

TEST(NearTieWindowWidth, WidensWithTheArithmeticsError) {
  const int n = 32;
  const double fp32 = gemm::dot_relative_error(DotArithmetic::Fp32, n);
  const double tf32x3 = gemm::dot_relative_error(DotArithmetic::Tf32x3, n);
  const double tf32 = gemm::dot_relative_error(DotArithmetic::Tf32, n);
  const double cublas_tf32 = gemm::dot_relative_error(DotArithmetic::CublasTf32, n);
  EXPECT_LT(fp32, tf32x3);
  EXPECT_LT(tf32x3, tf32);
  EXPECT_LT(tf32, cublas_tf32);
  EXPECT_NEAR(fp32, n * 0x1p-24, 1e-9);
  EXPECT_LT(tf32x3, 1e-4) << "3xTF32 must stay within two orders of magnitude of FP32";
}

// ---------------------------------------------------------------------------------------
// Capability checks and parameter spaces





const Variant& cublas_variant() { return Registry::instance().get("gemm-cublas"); }
const Variant& tf32_variant() { return Registry::instance().get("gemm-tf32x3"); }

bool contains(const std::optional<std::string>& text, const std::string& needle) {
  return text && text->find(needle) != std::string::npos;
}

TEST(GemmTf32x3, RefusesTuringWithTheComputeCapabilityReason) {
  const auto reason = tf32_variant().can_implement(make_problem(1 << 21, 32, 1024, 1024), t4_like());
  ASSERT_TRUE(reason);
  EXPECT_TRUE(contains(reason, "needs compute capability >= 8.0 for TF32 mma")) << *reason;
}

TEST(GemmTf32x3, AcceptsTheTargetShapeOnHopper) {
  EXPECT_EQ(tf32_variant().can_implement(make_problem(1 << 21, 32, 1024, 1024), h100_like()), std::nullopt);
  EXPECT_EQ(tf32_variant().can_implement(make_problem(1 << 21, 32, 16, 16), h100_like()), std::nullopt);
  EXPECT_EQ(tf32_variant().can_implement(make_problem(1 << 21, 32, 4096, 4096), h100_like()), std::nullopt);
}

TEST(GemmVariants, RefuseWithoutAGpu) {
  const Problem p = make_problem(1 << 20, 32, 1024, 1024);
  EXPECT_TRUE(contains(cublas_variant().can_implement(p, cpu_only()), "GPU"));
  EXPECT_TRUE(contains(tf32_variant().can_implement(p, cpu_only()), "GPU"));
}

TEST(GemmVariants, RefuseMoreThan65536CentroidSlots) {
  const Problem p = make_problem(1 << 20, 8, 1, 400);  // ΣK = 80200
  EXPECT_TRUE(contains(cublas_variant().can_implement(p, h100_like()), "65536"));
  EXPECT_TRUE(contains(tf32_variant().can_implement(p, h100_like()), "65536"));
  const Problem at_limit = make_problem(1 << 20, 8, 65536, 65536);
  EXPECT_EQ(cublas_variant().can_implement(at_limit, h100_like()), std::nullopt);
}

TEST(GemmVariants, DefaultsAreLegalForTheShapesTheyTarget) {
  const std::vector<Problem> problems = {
      make_problem(1 << 21, 32, 1024, 1024), make_problem(1 << 21, 32, 16, 16),
      make_problem(1 << 21, 32, 4096, 4096), make_problem(1 << 20, 3, 3, 7),
      make_problem(1 << 20, 256, 16, 64),    make_problem(1000, 2, 3, 3),
      make_problem(int64_t(1) << 25, 100, 128, 128)};
  for (const Variant* v : {&cublas_variant(), &tf32_variant()})
    for (const DeviceInfo& device : {h100_like(), t4_like()})
      for (const Problem& p : problems) {
        if (v->can_implement(p, device)) continue;
        const Params params = v->default_params(p, device);
        EXPECT_EQ(v->param_space(p, device).check(params), std::nullopt)
            << v->name() << " " << p.str() << " on " << device.name << ": " << params.dump();
      }
}

TEST(GemmTf32x3, AccumulatorRegisterLimitExcludesTheLargestTileWithFourWarps) {
  const Problem p = make_problem(1 << 21, 32, 1024, 1024);
  const ParamSpace space = tf32_variant().param_space(p, h100_like());
  const Params too_many = {{"points_per_block", 128}, {"centroid_chunk", 128}, {"block", 128},
                           {"precision", "tf32x3"},   {"update", "global"},    {"layout", "aos"}};
  const auto reason = space.check(too_many);
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("64 accumulators"), std::string::npos) << *reason;
  Params with_eight_warps = too_many;
  with_eight_warps["block"] = 256;
  EXPECT_EQ(space.check(with_eight_warps), std::nullopt);
}

TEST(GemmTf32x3, SharedAccumulatorsOnlyWhereAllSlotsFit) {
  const Params smem_point = {{"points_per_block", 64}, {"centroid_chunk", 32}, {"block", 128},
                             {"precision", "tf32x3"},  {"update", "smem"},     {"layout", "aos"}};
  // ΣK·(8N+8) = 1024·264 bytes > 227 KiB.
  const auto large_k = tf32_variant().param_space(make_problem(1 << 21, 32, 1024, 1024), h100_like()).check(smem_point);
  ASSERT_TRUE(large_k);
  EXPECT_NE(large_k->find("shared memory"), std::string::npos) << *large_k;
  EXPECT_EQ(tf32_variant().param_space(make_problem(1 << 21, 32, 3, 7), h100_like()).check(smem_point),
            std::nullopt);
}

TEST(GemmTf32x3, UpdateAxisOffersGlobalSmemAndSorted) {
  const ParamSpace space = tf32_variant().param_space(make_problem(1 << 21, 32, 1024, 1024), h100_like());
  const Axis* update = space.find("update");
  ASSERT_NE(update, nullptr);
  const std::vector<nlohmann::json> expected = {"global", "smem", "sorted"};
  EXPECT_EQ(update->values, expected);
}

TEST(GemmTf32x3, DefaultUpdateIsSortedForSmallAndLargeSlotCounts) {
  for (const Problem& problem :
       {make_problem(1 << 21, 32, 16, 16), make_problem(1 << 20, 3, 3, 7), make_problem(1 << 21, 32, 128, 128),
        make_problem(1 << 21, 32, 129, 129), make_problem(1 << 21, 32, 1, 16), make_problem(1 << 21, 32, 1024, 1024),
        make_problem(1 << 21, 32, 4096, 4096), make_problem(1 << 20, 256, 16, 64)}) {
    const Params params = tf32_variant().default_params(problem, h100_like());
    EXPECT_EQ(params.at("update"), "sorted") << problem.str() << " (ΣK=" << problem.k.sum() << ")";
    EXPECT_EQ(tf32_variant().param_space(problem, h100_like()).check(params), std::nullopt) << problem.str();
  }
}

TEST(GemmTf32x3, SortedUpdateNeedsInt32PointIndices) {
  const Problem huge = make_problem(int64_t(1) << 31, 32, 1024, 1024);
  const ParamSpace space = tf32_variant().param_space(huge, h100_like());
  Params params = tf32_variant().default_params(make_problem(1 << 21, 32, 1024, 1024), h100_like());
  ASSERT_EQ(params.at("update"), "sorted");
  EXPECT_TRUE(contains(space.check(params), "2^31")) << params.dump();
  EXPECT_EQ(tf32_variant().default_params(huge, h100_like()).at("update"), "global");
}

TEST(GemmTf32x3, SortedBuffersThatDoNotFitLeaveGlobalAsTheDefault) {
  DeviceInfo small = h100_like();
  small.global_mem_bytes = int64_t(16) << 30;
  // 4 GiB of points: the base run needs ~10.5 GiB, update=sorted another ~5 GiB (> 90 % of 16).
  const Problem p = make_problem(int64_t(1) << 27, 8, 3, 7);
  EXPECT_EQ(tf32_variant().can_implement(p, small), std::nullopt);
  const Params params = tf32_variant().default_params(p, small);
  EXPECT_EQ(params.at("update"), "global") << params.dump();
  Params sorted = params;
  sorted["update"] = "sorted";
  EXPECT_TRUE(contains(tf32_variant().param_space(p, small).check(sorted), "device memory"));
}

TEST(GemmTf32x3, VeryWidePointsAreRefusedWithTheSharedMemoryReason) {
  const Problem wide = make_problem(1 << 16, 2048, 64, 64);
  const auto reason = tf32_variant().can_implement(wide, h100_like());
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("shared memory"), std::string::npos) << *reason;
  EXPECT_EQ(cublas_variant().can_implement(wide, h100_like()), std::nullopt);
}

TEST(GemmTf32x3, OversizedChunksForSmallKAreExcluded) {
  const ParamSpace space = tf32_variant().param_space(make_problem(1 << 20, 8, 3, 7), h100_like());
  for (const Params& p : space.enumerate()) EXPECT_EQ(p.at("centroid_chunk"), 32) << p.dump();
}

TEST(GemmCublas, Tf32IsOnlyOfferedFromAmpere) {
  const Problem p = make_problem(1 << 21, 32, 1024, 1024);
  Params params = cublas_variant().default_params(p, t4_like());
  EXPECT_EQ(params.at("precision"), "fp32");
  params["precision"] = "tf32";
  EXPECT_TRUE(contains(cublas_variant().param_space(p, t4_like()).check(params), "compute capability >= 8.0"));
  params = cublas_variant().default_params(p, h100_like());
  params["precision"] = "tf32";
  EXPECT_EQ(cublas_variant().param_space(p, h100_like()).check(params), std::nullopt);
}

TEST(GemmCublas, DefaultTileKeepsTheDotBlockInHalfOfL2) {
  // H100: 50 MiB L2. K=1024 → 50 MiB / (1024·8 B) = 6400 rows → 4096; K=16 → 409600 → 262144.
  const DeviceInfo device = h100_like();
  EXPECT_EQ(cublas_variant().default_params(make_problem(1 << 21, 32, 1024, 1024), device).at("tile_rows"), 4096);
  EXPECT_EQ(cublas_variant().default_params(make_problem(1 << 21, 32, 16, 16), device).at("tile_rows"), 262144);
  // A small M never gets a tile more than one step beyond it.
  EXPECT_EQ(cublas_variant().default_params(make_problem(5000, 32, 16, 16), device).at("tile_rows"), 16384);
}

TEST(GemmCublas, TileBufferIsBoundedByDeviceMemory) {
  const Problem p = make_problem(int64_t(1) << 22, 16, 65536, 65536);
  const ParamSpace space = cublas_variant().param_space(p, h100_like());
  Params params = cublas_variant().default_params(p, h100_like());
  params["tile_rows"] = 1048576;  // 1M × 65536 × 4 B = 256 GiB
  EXPECT_TRUE(contains(space.check(params), "tile_rows*sum(K)*4"));
  for (const Params& legal : space.enumerate())
    EXPECT_LE(int64_t(legal.at("tile_rows").get<int>()) * 65536 * 4, int64_t(2) << 30) << legal.dump();
}

TEST(GemmCublas, SharedAccumulatorsRestrictionNamesTheBytes) {
  const Problem p = make_problem(1 << 21, 32, 1024, 1024);
  Params params = cublas_variant().default_params(p, h100_like());
  EXPECT_EQ(params.at("update"), "global");
  params["update"] = "smem";
  EXPECT_TRUE(contains(cublas_variant().param_space(p, h100_like()).check(params), "update=smem"));
}

// A range of small K at large N adds its sums by one DGEMM a tile; one large K, or a small N,
// keeps the atomics; update=dgemm's two FP64 tiles count against the tile budget.
TEST(GemmCublas, DefaultUpdateIsDgemmForRangesOfSmallKAtLargeN) {
  const DeviceInfo device = h100_like();
  EXPECT_EQ(cublas_variant().default_params(make_problem(60000, 784, 2, 20), device).at("update"), "dgemm");
  EXPECT_EQ(cublas_variant().default_params(make_problem(1 << 21, 128, 1024, 1024), device).at("update"), "global");
  EXPECT_EQ(cublas_variant().default_params(make_problem(1 << 21, 32, 1024, 1024), device).at("update"), "global");
  const Problem wide = make_problem(int64_t(1) << 22, 4096, 2, 20);
  const ParamSpace space = cublas_variant().param_space(wide, device);
  Params params = cublas_variant().default_params(wide, device);
  params["update"] = "dgemm";
  params["tile_rows"] = 1048576;  // 1M × (4096 + 209) × 8 B = 32 GiB
  EXPECT_TRUE(contains(space.check(params), "update=dgemm")) << space.check(params).value_or("legal");
}

// ---------------------------------------------------------------------------------------
// On a GPU: every legal parameter point, not just the defaults the generic GPU test uses.

struct DeviceShape {
  int64_t m;  // not a multiple of any points_per_block, so tail tiles are exercised
  int n;      // 70: padded to 96, three staged dimension chunks
  KRange k;
  bool duplicate_centroids;  // centroid 1 := centroid 0 for every K: exact ties everywhere
};

// A shape's blobs data set, problem and random-sample centroids (with the duplicates the
// shape asks for).
struct DeviceCase {
  Dataset data;
  Problem problem;
  std::vector<float> centroids;
};

DeviceCase make_device_case(const DeviceShape& shape, uint64_t data_seed, uint64_t init_seed) {
  GeneratorSpec spec;
  spec.kind = "blobs";
  spec.centers = 24;
  spec.m = shape.m;
  spec.n = shape.n;
  spec.seed = data_seed;
  DeviceCase c{generate(spec), Problem{}, {}};
  c.problem.m = shape.m;
  c.problem.n = shape.n;
  c.problem.k = shape.k;
  c.centroids = initial_centroids(c.data, shape.k, InitMethod::RandomSample, init_seed);
  if (shape.duplicate_centroids)
    for (int k = std::max(shape.k.kmin, 2); k <= shape.k.kmax; ++k) {
      float* first = c.centroids.data() + size_t(shape.k.slot_offset(k)) * shape.n;
      std::copy(first, first + shape.n, first + shape.n);
    }
  return c;
}

// One (variant, shape) a test: ctest runs the eight in parallel (the single test that walked all
// of them took 356 s of the GPU machine's full ctest at 3751d68).
struct LegalPointsCase {
  const char* variant;
  DeviceShape shape;
};

const LegalPointsCase kLegalPointsCases[] = {
    {"gemm-cublas", {5003, 32, KRange{1024, 1024}, false}}, {"gemm-cublas", {20011, 3, KRange{3, 7}, false}},
    {"gemm-cublas", {10007, 70, KRange{16, 40}, false}},   {"gemm-cublas", {10007, 8, KRange{3, 40}, true}},
    {"gemm-tf32x3", {5003, 32, KRange{1024, 1024}, false}}, {"gemm-tf32x3", {20011, 3, KRange{3, 7}, false}},
    {"gemm-tf32x3", {10007, 70, KRange{16, 40}, false}},   {"gemm-tf32x3", {10007, 8, KRange{3, 40}, true}},
};

class GemmLegalPoints : public ::testing::TestWithParam<LegalPointsCase> {};

TEST_P(GemmLegalPoints, EveryLegalParamPointMatchesTheReference) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  const DeviceInfo device = query_device(0);
  const Variant& v = std::string(GetParam().variant) == "gemm-cublas" ? cublas_variant() : tf32_variant();
  ASSERT_EQ(v.name(), GetParam().variant);
  const DeviceShape& shape = GetParam().shape;
  const DeviceCase c = make_device_case(shape, 2024 + shape.n, 11);
  SCOPED_TRACE(v.name() + " " + c.problem.str());
  if (auto reason = v.can_implement(c.problem, device)) {
    // Each of these shapes is one the variant serves (K <= 1024, N <= 70): a refusal is a failure.
    FAIL() << v.name() << " refused " << c.problem.str() << ": " << *reason;
  }
  int runs = 0;
  for (const Params& params : v.param_space(c.problem, device).enumerate()) {
    SCOPED_TRACE(params_label(params));
    auto run = v.prepare(c.problem, c.data, params, device);
    run->set_centroids(c.centroids);
    run->iterate(true);
    run->synchronize();
    const VerifyReport report = compare_with_reference(c.data, shape.k, c.centroids, run->read_back());
    EXPECT_TRUE(report.passed) << report.summary();
    ++runs;
  }
  EXPECT_GT(runs, 0);
}

std::string legal_points_name(const ::testing::TestParamInfo<LegalPointsCase>& info) {
  std::string name = std::string(info.param.variant) + "_N" + std::to_string(info.param.shape.n) + "_K" +
                     std::to_string(info.param.shape.k.kmin) + "_" + std::to_string(info.param.shape.k.kmax);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(GemmVariantsOnDevice, GemmLegalPoints, ::testing::ValuesIn(kLegalPointsCases),
                         legal_points_name);

// update=sorted explicitly, whatever the defaults pick: K=300 (9-bit sort, runs that cross
// piece boundaries), a K range with K=1 (one-bit sort, one run spanning every piece), N=70
// (three 32-dimension passes) with exact ties, both layouts, with and without stored labels.
TEST(GemmVariantsOnDevice, SortedUpdateMatchesTheReference) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  const DeviceInfo device = query_device(0);
  const std::vector<DeviceShape> shapes = {{40009, 32, KRange{300, 300}, false},
                                           {20011, 3, KRange{3, 7}, false},
                                           {30011, 70, KRange{3, 7}, true},
                                           {5003, 8, KRange{1, 4}, false}};
  int runs = 0;
  for (const DeviceShape& shape : shapes) {
    const DeviceCase c = make_device_case(shape, 77 + shape.n, 13);
    const Dataset& data = c.data;
    const Problem& problem = c.problem;
    const std::vector<float>& centroids = c.centroids;
    SCOPED_TRACE(problem.str());
    ASSERT_EQ(tf32_variant().can_implement(problem, device), std::nullopt);
    const ParamSpace space = tf32_variant().param_space(problem, device);
    for (const char* layout : {"aos", "soa"}) {
      Params params = tf32_variant().default_params(problem, device);
      params["update"] = "sorted";
      params["layout"] = layout;
      SCOPED_TRACE(params_label(params));
      ASSERT_EQ(space.check(params), std::nullopt);
      auto run = tf32_variant().prepare(problem, data, params, device);
      for (const bool store_labels : {true, false}) {
        run->set_centroids(centroids);
        run->iterate(store_labels);
        run->synchronize();
        const IterationResult got = run->read_back();
        const VerifyReport report = compare_with_reference(data, shape.k, centroids, got);
        EXPECT_TRUE(report.passed) << "labels " << (store_labels ? "stored" : "not stored") << ": "
                                   << report.summary();
        ++runs;
      }
    }
  }
  EXPECT_EQ(runs, 16);
}

}  // namespace
}  // namespace mk
