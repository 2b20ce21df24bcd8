// tf32-window's contract on the CPU: which shapes it takes, its defaults, and the key window
// that makes its FP16 ranking FP32-faithful, checked against FP64 distances on an
// emulation of the kernel's key arithmetic. Its GPU behaviour is tested with every other
// variant in test_gpu_variants.cpp (at the shapes tests/variant_claims.hpp names for it) and
// below at the large K, clustered, offset, sparse and odd-width data its window and scans exist for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "datasets/dataset.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "harness/reference.hpp"
#include "variants/variant.hpp"
#include "tests/reference_steps.hpp"
#include "tests/synthetic_devices.hpp"
#include "tests/variant_claims.hpp"
#include "variants/common/fp16_key_error.hpp"
#include "variants/common/near_tie_bound.hpp"

namespace mk {
namespace {

using testing_support::h100_like;

Problem shape(int64_t m, int n, int kmin, int kmax) { return testing_support::make_problem(m, n, kmin, kmax); }

const Variant& window_variant() { return Registry::instance().get("tf32-window"); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Tf32WindowSpace, TakesOneLargeKUpToOneHundredTwentyEightDimensions) {
  EXPECT_FALSE(window_variant().can_implement(shape(1 << 21, 32, 1024, 1024), h100_like()).has_value());
  EXPECT_FALSE(window_variant().can_implement(shape(1 << 21, 64, 256, 256), h100_like()).has_value());
  EXPECT_FALSE(window_variant().can_implement(shape(1 << 20, 128, 100, 100), h100_like()).has_value());
  EXPECT_FALSE(window_variant().can_implement(shape(1 << 20, 70, 500, 500), h100_like()).has_value());
  EXPECT_FALSE(window_variant().can_implement(shape(1000, 2, 64, 64), h100_like()).has_value());
}

TEST(Tf32WindowSpace, RefusesWhatItCannotDoNamingWhyAndTheAlternative) {
  const auto few = window_variant().can_implement(shape(1 << 21, 8, 32, 32), h100_like());
  ASSERT_TRUE(few.has_value());
  EXPECT_TRUE(contains(*few, "tensor-multik")) << *few;
  const auto range = window_variant().can_implement(shape(1 << 21, 32, 100, 200), h100_like());
  ASSERT_TRUE(range.has_value());
  EXPECT_TRUE(contains(*range, "one K")) << *range;
  const auto wide = window_variant().can_implement(shape(1 << 21, 129, 256, 256), h100_like());
  ASSERT_TRUE(wide.has_value());
  EXPECT_TRUE(contains(*wide, "gemm-window")) << *wide;
  // 4096 centroids × 32 dims of table are 512 KiB: beyond any SM's shared memory.
  const auto big = window_variant().can_implement(shape(1 << 21, 32, 4096, 4096), h100_like());
  ASSERT_TRUE(big.has_value());
  EXPECT_TRUE(contains(*big, "shared memory")) << *big;
  DeviceInfo turing = h100_like();
  turing.cc_major = 7;
  turing.cc_minor = 5;
  EXPECT_TRUE(window_variant().can_implement(shape(1 << 21, 32, 1024, 1024), turing).has_value());
}

// Values whose squared spread overflows what FP32 keys hold are refused before any GPU work,
// so this runs without a GPU.
TEST(Tf32WindowSpace, RefusesDataBeyondTheRangeOfItsFp32Keys) {
  GeneratorSpec spec;
  spec.m = 2000;
  spec.n = 8;
  Dataset data = generate(spec);
  for (float& v : data.values) v *= 1e15f;
  const Problem problem = shape(data.m, data.n, 64, 64);
  try {
    window_variant().prepare(problem, data, window_variant().default_params(problem, h100_like()), h100_like());
    FAIL() << "data with |x - mean|^2 near 1e30 was accepted";
  } catch (const UnsupportedError& error) {
    EXPECT_TRUE(contains(error.what(), "1e28")) << error.what();
  }
}

// The other end: squared spreads below 1e-30 would underflow the exact FP32 distances.
TEST(Tf32WindowSpace, RefusesDataTooSmallForFp32SquaredDistances) {
  GeneratorSpec spec;
  spec.m = 2000;
  spec.n = 8;
  Dataset data = generate(spec);
  for (float& v : data.values) v *= 1e-20f;
  const Problem problem = shape(data.m, data.n, 64, 64);
  try {
    window_variant().prepare(problem, data, window_variant().default_params(problem, h100_like()), h100_like());
    FAIL() << "data with |x - mean|^2 near 1e-40 was accepted";
  } catch (const UnsupportedError& error) {
    EXPECT_TRUE(contains(error.what(), "1e-30")) << error.what();
  }
}

TEST(Tf32WindowSpace, DefaultBlockFollowsHowManyTablesFitAnSm) {
  // N=32, K=2048: the FP16 table alone is 128 KiB, room for one block, so it gets 16 warps.
  const Problem large = shape(1 << 21, 32, 2048, 2048);
  const Params large_defaults = window_variant().default_params(large, h100_like());
  EXPECT_EQ(large_defaults.at("block"), 512);
  EXPECT_FALSE(window_variant().param_space(large, h100_like()).check(large_defaults).has_value());
  // N=32, K=1024: 64 KiB of FP16 table, two blocks of 256 per SM.
  const Problem issue_case = shape(1 << 21, 32, 1024, 1024);
  EXPECT_EQ(window_variant().default_params(issue_case, h100_like()).at("block"), 256);
  const Problem small = shape(1 << 21, 8, 256, 256);
  const Params small_defaults = window_variant().default_params(small, h100_like());
  EXPECT_EQ(small_defaults.at("block"), 256);
  EXPECT_FALSE(window_variant().param_space(small, h100_like()).check(small_defaults).has_value());
}

// Above 64 dims a kernel is built for each block bound (255 registers a thread up to 256
// threads, 168 at 384), so blocks of 384 at most, and the default is the largest whose
// scratch fits beside the table: a block an SM either way.
TEST(Tf32WindowSpace, WideRowsRunBlocksOfAtMost384Threads) {
  for (const auto& [n, k, expected] : {std::tuple{128, 100, 384}, std::tuple{80, 1024, 384}, std::tuple{128, 800, 256}}) {
    const Problem problem = shape(1 << 21, n, k, k);
    SCOPED_TRACE(problem.str());
    const Params defaults = window_variant().default_params(problem, h100_like());
    EXPECT_EQ(defaults.at("block"), expected);
    const ParamSpace space = window_variant().param_space(problem, h100_like());
    EXPECT_FALSE(space.check(defaults).has_value());
    const Axis* blocks = space.find("block");
    ASSERT_NE(blocks, nullptr);
    for (const nlohmann::json& block : blocks->values) EXPECT_LE(block.get<int>(), 384);
  }
  // 64 dims keep the 512-thread kernels.
  EXPECT_EQ(window_variant().default_params(shape(1 << 21, 64, 1000, 1000), h100_like()).at("block"), 512);
}

TEST(Tf32WindowSpace, BlockSumsInSharedMemoryAreTheDefaultUpToFourThousandAddresses) {
  // K·N ≤ 4096 (the H200's A/B: layout.hpp's kSharedSumsUpTo).
  for (const auto& [n, k, expected] :
       {std::tuple{32, 64, "shared"}, std::tuple{16, 128, "shared"}, std::tuple{64, 64, "shared"},
        std::tuple{48, 128, "global"}, std::tuple{64, 256, "global"}, std::tuple{32, 1024, "global"},
        std::tuple{48, 2000, "global"}}) {
    const Problem problem = shape(1 << 22, n, k, k);
    const Params defaults = window_variant().default_params(problem, h100_like());
    EXPECT_EQ(defaults.at("update"), expected) << "N=" << n << " K=" << k;
    EXPECT_FALSE(window_variant().param_space(problem, h100_like()).check(defaults).has_value());
  }
  // 2000 × 48 FP32 sums (375 KiB) fit no block: update=shared is outside the space there.
  const Problem wide = shape(1 << 22, 48, 2000, 2000);
  Params shared = window_variant().default_params(wide, h100_like());
  shared["update"] = "shared";
  EXPECT_TRUE(window_variant().param_space(wide, h100_like()).check(shared).has_value());
}

TEST(Tf32WindowSpace, SecondSweepSkipsEmptyTilesFromKOf993) {
  // (kpad 1024.) Below that enough n-tiles hold an in-window key of some row of the warp
  // that the vote costs more than it saves (N=32 on the H200: K=512 0.748 against 0.736 ms
  // for counting every tile; K=1024 1.18 against 1.22).
  for (const auto& [k, expected] : {std::pair{256, "count"}, std::pair{512, "count"}, std::pair{992, "count"},
                                    std::pair{993, "skip"}, std::pair{2048, "skip"}}) {
    const Problem problem = shape(1 << 21, 32, k, k);
    const Params defaults = window_variant().default_params(problem, h100_like());
    EXPECT_EQ(defaults.at("empty_tiles"), expected) << "K=" << k;
    EXPECT_FALSE(window_variant().param_space(problem, h100_like()).check(defaults).has_value());
  }
}

struct WindowTrials {
  int points = 0, ambiguous = 0, uncovered = 0;
  double keys_inside = 0;  // summed, then the mean number of keys inside a point's window

  // One point: every centroid at least as near (FP64) as the key winner must have a key
  // inside the threshold.
  void add(const std::vector<float>& keys, const std::vector<double>& exact, int winner, float threshold) {
    int inside = 0;
    for (size_t j = 0; j < keys.size(); ++j) {
      inside += keys[j] <= threshold;
      if (exact[j] <= exact[size_t(winner)] && !(keys[j] <= threshold)) ++uncovered;
    }
    ++points;
    ambiguous += inside > 1;
    keys_inside += inside;
  }
};

// The FP16 sweep's key, emulated: translated inputs scaled below 2^14, rounded to FP16 (with
// subnormals), products summed per m16n8k16 step of 16 dimensions and added to the FP32
// accumulator that starts at ‖c‖².
float emulated_f16_key(const std::vector<float>& x, const std::vector<float>& c, float norm) {
  float acc = norm;
  for (size_t d0 = 0; d0 < x.size(); d0 += 16) {
    double step = 0;
    for (size_t d = d0; d < d0 + 16 && d < x.size(); ++d)
      step += double(gemm::fp16_round(x[d])) * double(gemm::fp16_round(-2.f * c[d]));
    acc += float(step);
  }
  return acc;
}

// The threshold as the kernel forms it (fp16_keys::plain_key_window, which key_sweeps.cuh's
// window_ramps calls): the point's FP16 residual, the table's residual ratio ρ (largest over
// the centroids), and the table's largest ‖c‖² for the winner's and for the cap R on r.
float measured_threshold(const std::vector<float>& x, float xn2, float best_key, float largest_cnorm2, float rho,
                         int npad) {
  float res2 = 0.f;  // in order, as a lane's FP32 sums would be (the widening covers any order)
  for (float v : x) {
    const float e = v - gemm::fp16_round(v);
    res2 = std::fma(e, e, res2);
  }
  fp16_keys::KeyErrorModel model = fp16_keys::key_error_model(npad, 0);
  model.pack_rel = 0.f;
  model.rho = fp16_keys::measured_rho(rho);
  model.tau = fp16_keys::residual_floor(npad);
  model.largest_cnorm = fp16_keys::largest_centroid_norm(largest_cnorm2);
  return best_key + fp16_keys::plain_key_window(xn2, res2, int(x.size()), best_key, largest_cnorm2, model);
}

// Uniform data in an offset box; `faint` dimensions are scaled by 1e-9, so after the
// scaling their FP16 values are subnormal and the window's absolute term has to cover them.
// `measured` picks the kernel's threshold; otherwise the worst case of 2^-11 per input
// (near_tie_bound.hpp's Fp16KeyModel), the yardstick it is compared with.
WindowTrials run_f16_trials(int n, int k, int faint, int points, uint32_t seed, bool measured = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(2.f, 3.f);
  std::vector<std::vector<float>> data(static_cast<size_t>(points), std::vector<float>(static_cast<size_t>(n)));
  for (auto& row : data)
    for (int d = 0; d < n; ++d) row[size_t(d)] = uniform(rng) * (d < faint ? 1e-9f : 1.f);
  std::vector<double> mean(static_cast<size_t>(n), 0.0);
  for (const auto& row : data)
    for (int d = 0; d < n; ++d) mean[size_t(d)] += row[size_t(d)];
  std::vector<float> center(static_cast<size_t>(n));
  for (int d = 0; d < n; ++d) center[size_t(d)] = float(mean[size_t(d)] / points);
  double largest = 0;
  for (const auto& row : data) {
    double sq = 0;
    for (int d = 0; d < n; ++d) sq += double(row[size_t(d)] - center[size_t(d)]) * (row[size_t(d)] - center[size_t(d)]);
    largest = std::max(largest, sq);
  }
  int exponent = 0;
  std::frexp(largest, &exponent);
  const float scale = std::ldexp(1.f, 14 - ((exponent + 1) >> 1));
  auto scaled = [&](const std::vector<float>& v) {
    std::vector<float> out(v.size());
    for (size_t d = 0; d < v.size(); ++d) out[d] = (v[d] - center[d]) * scale;
    return out;
  };
  std::vector<std::vector<float>> centroids, scaled_centroids;
  std::vector<float> norms;
  float largest_cnorm2 = 0;
  for (int j = 0; j < k; ++j) {
    centroids.push_back(data[size_t(j) * 7 % size_t(points)]);
    scaled_centroids.push_back(scaled(centroids.back()));
    double sq = 0;
    for (float v : scaled_centroids.back()) sq += double(v) * v;
    norms.push_back(float(sq));
    largest_cnorm2 = std::max(largest_cnorm2, norms.back());
  }
  const gemm::Fp16KeyModel model = gemm::fp16_key_model((n + 15) / 16 * 16);
  const int npad = (n + 15) / 16 * 16;
  float rho = 0.f;  // as build_f16_window_image measures it
  for (const auto& c : scaled_centroids) {
    double res2 = 0, norm2 = 0;
    for (float v : c) {
      const double e = double(gemm::fp16_round(-2.f * v)) * -0.5 - double(v);
      res2 += e * e;
      norm2 += double(v) * v;
    }
    rho = std::max(rho, float(std::sqrt(res2) / std::max(std::sqrt(norm2), double(fp16_keys::residual_floor(npad)))));
  }
  WindowTrials trials;
  for (const auto& row : data) {
    const std::vector<float> x = scaled(row);
    float xn2 = 0;
    for (float v : x) xn2 = std::fma(v, v, xn2);
    std::vector<float> keys(static_cast<size_t>(k));
    std::vector<double> exact(static_cast<size_t>(k));
    int winner = 0;
    for (int j = 0; j < k; ++j) {
      keys[size_t(j)] = emulated_f16_key(x, scaled_centroids[size_t(j)], norms[size_t(j)]);
      double dist = 0;
      for (int d = 0; d < n; ++d) {
        const double e = double(row[size_t(d)]) - centroids[size_t(j)][size_t(d)];
        dist += e * e;
      }
      exact[size_t(j)] = dist;
      if (keys[size_t(j)] < keys[size_t(winner)]) winner = j;
    }
    const float best = keys[size_t(winner)];
    trials.add(keys, exact, winner,
               measured ? measured_threshold(x, xn2, best, largest_cnorm2, rho, npad)
                        : best + gemm::fp16_key_window(xn2, best, largest_cnorm2, model));
  }
  trials.keys_inside /= trials.points;
  return trials;
}

// The kernel's window (measured FP16 residuals, fp16_key_error.hpp) holds every centroid at
// least as near as the key winner, on uniform data, offset data and data whose faint
// dimensions are FP16 subnormals, with fewer keys inside than the worst case of 2^-11 per
// input would leave (which held 37 % of uniform points' runners-up at 128/100/1M on the
// H200 against 19 %: MKBENCH_WINDOW_STATS, 909355b).
TEST(Fp16KeyWindow, HoldsEveryCentroidAtLeastAsNearAsTheSmallestKey) {
  for (const auto& [n, k, faint] : {std::tuple{32, 1024, 0}, std::tuple{8, 256, 0}, std::tuple{3, 64, 0},
                                    std::tuple{32, 256, 24}, std::tuple{16, 128, 6}, std::tuple{128, 100, 0},
                                    std::tuple{96, 128, 6}}) {
    SCOPED_TRACE("N=" + std::to_string(n) + " K=" + std::to_string(k) + " faint dims " + std::to_string(faint));
    const WindowTrials measured = run_f16_trials(n, k, faint, 1500, 91u + n + faint, true);
    const WindowTrials worst_case = run_f16_trials(n, k, faint, 1500, 91u + n + faint, false);
    EXPECT_EQ(measured.uncovered, 0);
    EXPECT_GT(measured.ambiguous, 0);
    EXPECT_LT(measured.ambiguous, measured.points / 2);
    EXPECT_LT(measured.keys_inside, 2.0);
    EXPECT_LT(measured.keys_inside, worst_case.keys_inside);
    EXPECT_LE(measured.ambiguous, worst_case.ambiguous);
  }
}

TEST(Fp16KeyWindow, RoundsLikeBinary16) {
  EXPECT_EQ(gemm::fp16_round(1.f + 0x1p-11f), 1.f);                // a tie goes to even
  EXPECT_EQ(gemm::fp16_round(1.f + 3 * 0x1p-11f), 1.f + 0x1p-9f);  // ... in both directions
  EXPECT_EQ(gemm::fp16_round(0x1p-25f), 0.f);                      // half the smallest subnormal, even
  EXPECT_EQ(gemm::fp16_round(0x1.8p-25f), 0x1p-24f);
  EXPECT_EQ(gemm::fp16_round(-3 * 0x1p-24f), -3 * 0x1p-24f);      // subnormals are kept
  EXPECT_EQ(gemm::fp16_round(65504.f), 65504.f);
  EXPECT_TRUE(std::isinf(gemm::fp16_round(65520.f)));
}

// --- on the GPU ----------------------------------------------------------------------

struct GpuCase {
  std::string name;
  GeneratorSpec spec;
  int k;
  bool labels;
  float offset;  // added to every value: data far from the origin, where |x||c| ≫ distances
  float scale = 1.f;  // then every value multiplied: FP16's range is 2^-24..65504
  float grid = 0.f;   // then, if > 0, rounded to multiples of it: exact ties everywhere
};

// ctest lists parameterised cases with their parameter; the name says it all.
void PrintTo(const GpuCase& c, std::ostream* os) { *os << c.name; }

class Tf32WindowOnDevice : public ::testing::TestWithParam<GpuCase> {
 protected:
  void SetUp() override {
    if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  }
};

TEST_P(Tf32WindowOnDevice, TwoStepsMatchTheReference) {
  const GpuCase c = GetParam();
  Dataset data = generate(c.spec);
  for (float& v : data.values) {
    v = (v + c.offset) * c.scale;
    if (c.grid > 0.f) v = std::round(v / c.grid) * c.grid;
  }
  const Problem problem = shape(data.m, data.n, c.k, c.k);
  const DeviceInfo device = query_device(0);
  if (auto reason = window_variant().can_implement(problem, device)) {
    // Every case's shape is accepted on Hopper (HopperAcceptsEveryDeviceCase checks that on CPU).
    if (testing_support::claims_apply_to(device))
      FAIL() << device.name << " refused " << problem.str() << ", a shape tf32-window runs on Hopper: " << *reason;
    GTEST_SKIP() << "tf32-window cannot run " << problem.str() << " on " << device.name << ": " << *reason;
  }
  // The second sweep with and without skipping the n-tiles that hold no in-window key (the
  // default depends on K), and both updates wherever the block's sums fit.
  std::vector<Params> points;
  for (const char* update : {"global", "shared"})
    for (const char* empty_tiles : {"skip", "count"}) {
      Params params = resolve_params(window_variant(), problem, device, Params::object());
      params["empty_tiles"] = empty_tiles;
      params["update"] = update;
      points.push_back(params);
    }
  // update=shared on one block an SM: every warp runs several flush rounds where the case has
  // enough steps (uniform_n8_k64_rounds), so the mid-run flushes and the idle warps' barriers run.
  Params rounds = resolve_params(window_variant(), problem, device, Params::object());
  rounds["update"] = "shared";
  rounds["grid"] = int64_t(std::max(1, device.sm_count));
  points.push_back(rounds);
  // Above 64 dims the default block (384) runs the 168-register kernel; 256 runs the other.
  if (problem.n > 64) {
    Params narrow_block = resolve_params(window_variant(), problem, device, Params::object());
    narrow_block["block"] = 256;
    points.push_back(narrow_block);
  }
  for (const Params& params : points) {
    SCOPED_TRACE(params_label(params));
    const auto why = window_variant().param_space(problem, device).check(params);
    if (why && params.at("update") == "shared") continue;  // the block's sums do not fit beside the table
    ASSERT_FALSE(why.has_value()) << *why;                  // update=global runs every case
    auto run = window_variant().prepare(problem, data, params, device);
    testing_support::expect_steps_match_reference(
        *run, data, problem.k, initial_centroids(data, problem.k, InitMethod::RandomSample, 11), 2, c.labels);
  }
}

GeneratorSpec spec_of(const std::string& kind, int64_t m, int n, int centers, double zeros, uint64_t seed) {
  GeneratorSpec spec;
  spec.kind = kind;
  spec.m = m;
  spec.n = n;
  spec.centers = centers;
  spec.zero_fraction = zeros;
  spec.seed = seed;
  return spec;
}

const GpuCase kDeviceCases[] = {
    GpuCase{"uniform_n32_k1024", spec_of("uniform", 60000, 32, 8, 0, 5), 1024, true, 0.f},
    GpuCase{"blobs_n32_k256_no_labels", spec_of("blobs", 100000, 32, 300, 0, 6), 256, false, 0.f},
    GpuCase{"offset_uniform_n16_k300", spec_of("uniform", 50000, 16, 8, 0, 7), 300, true, 1000.f},
    GpuCase{"sparse_blobs_n24_k64", spec_of("blobs", 50000, 24, 40, 0.9, 8), 64, true, 0.f},
    GpuCase{"uniform_n64_k200", spec_of("uniform", 30000, 64, 8, 0, 9), 200, true, 0.f},
    GpuCase{"uniform_n48_k128", spec_of("uniform", 30000, 48, 8, 0, 10), 128, true, 0.f},
    GpuCase{"uniform_n30_k500", spec_of("uniform", 40000, 30, 8, 0, 11), 500, true, 0.f},
    GpuCase{"uniform_n5_k2000", spec_of("uniform", 40000, 5, 8, 0, 12), 2000, true, 0.f},
    GpuCase{"uniform_n8_k64_m100", spec_of("uniform", 100, 8, 8, 0, 13), 64, true, 0.f},
    // Values on a grid of halves: many exactly equidistant centroids, so
    // lanes with two and with three or more in-window keys.
    GpuCase{"grid_n8_k256_ties", spec_of("uniform", 40000, 8, 8, 0, 14), 256, true, 0.f, 1.f, 0.5f},
    GpuCase{"tiny_uniform_n32_k128", spec_of("uniform", 30000, 32, 8, 0, 15), 128, true, 0.f, 1e-12f},
    GpuCase{"huge_blobs_n20_k96", spec_of("blobs", 30000, 20, 50, 0, 16), 96, true, 0.f, 1e12f},
    GpuCase{"uniform_n32_k1000_partial_step", spec_of("uniform", 50017, 32, 8, 0, 17), 1000, true,
            0.f},
    // The wide kernels: eight steps at full width (two load batches), six steps with zero
    // padding past N=70 (the general load path), and 96 dims at full width with ties.
    GpuCase{"uniform_n128_k100", spec_of("uniform", 40000, 128, 8, 0, 19), 100, true, 0.f},
    GpuCase{"blobs_n70_k300_partial_step", spec_of("blobs", 30011, 70, 200, 0, 20), 300, true, 0.f},
    GpuCase{"grid_n96_k128_ties", spec_of("uniform", 20000, 96, 8, 0, 21), 128, true, 0.f, 1.f, 0.5f},
    GpuCase{"offset_blobs_n128_k700", spec_of("blobs", 30000, 128, 700, 0, 22), 700, true, 250.f},
    // The smallest table at 128 dims: an unclamped look-ahead past the image would read the
    // per-warp scratch (ab/tf32-window-norm-pairs.txt); racecheck is what sees that.
    GpuCase{"uniform_n128_k64_partial_step", spec_of("uniform", 3001, 128, 8, 0, 23), 64, true, 0.f},
    // 2^20 points: 32768 steps; with 8 warps a block and one block an SM (the rounds point)
    // about 31 steps a warp, so two flush rounds of update=shared (16 steps each at most).
    GpuCase{"uniform_n8_k64_rounds", spec_of("uniform", 1 << 20, 8, 8, 0, 18), 64, false, 0.f}};
INSTANTIATE_TEST_SUITE_P(Shapes, Tf32WindowOnDevice, ::testing::ValuesIn(kDeviceCases),
                         [](const ::testing::TestParamInfo<GpuCase>& info) { return info.param.name; });

// A device case that skipped on a refusal would hide the refusal: every case's shape must be
// accepted on Hopper (synthetic H100 and H200, no GPU needed). Data-dependent limits (the
// spread of ‖x − mean‖²) are the GPU test's to meet.
TEST(Tf32WindowDeviceCases, HopperAcceptsEveryDeviceCase) {
  for (const DeviceInfo& device : {h100_like(), testing_support::h200()})
    for (const GpuCase& c : kDeviceCases) {
      const Problem problem = shape(c.spec.m, c.spec.n, c.k, c.k);
      const auto refusal = window_variant().can_implement(problem, device);
      EXPECT_FALSE(refusal.has_value()) << c.name << " on " << device.name << ": " << refusal.value_or("");
    }
}

}  // namespace
}  // namespace mk
