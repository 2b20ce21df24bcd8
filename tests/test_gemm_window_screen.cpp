// The settle kernel's FP32 screen (variants/gemm_window/fp32_screen.hpp): where it decides a
// row, its label is the FP64 path's. Both are emulated on the CPU as the kernel sums them (32
// lanes, float4 pieces in two chains, the warp's butterfly) on candidates at controlled
// relative gaps, from exact duplicates to well apart, at FP32's extremes of scale.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "variants/gemm_window/fp32_screen.hpp"

namespace mk {
namespace {

constexpr int kLanes = 32;

// One lane's share, in T, in the kernel's chains (candidate_distances.cuh, in FP32 for the
// screen, in FP64 for the exact distances).
template <typename T>
T lane_share(const std::vector<float>& x, const std::vector<float>& c, int part) {
  const int n = int(x.size());
  T s0 = 0, s1 = 0;
  const auto term = [&](int d, T& s) {
    const T e = T(x[d]) - T(c[d]);
    s = std::fma(e, e, s);
  };
  if (n % 4 == 0) {
    for (int i = part; i < n / 4; i += kLanes) {
      term(4 * i, s0);
      term(4 * i + 1, s1);
      term(4 * i + 2, s0);
      term(4 * i + 3, s1);
    }
  } else {
    for (int d = part; d < n; d += kLanes) term(d, s0);
  }
  return s0 + s1;
}

// The warp's xor butterfly: every lane ends with the same sum.
template <typename T>
T warp_distance(const std::vector<float>& x, const std::vector<float>& c) {
  T v[kLanes];
  for (int l = 0; l < kLanes; ++l) v[l] = lane_share<T>(x, c, l);
  for (int offset = 16; offset > 0; offset >>= 1) {
    T next[kLanes];
    for (int l = 0; l < kLanes; ++l) next[l] = v[l] + v[l ^ offset];
    for (int l = 0; l < kLanes; ++l) v[l] = next[l];
  }
  return v[0];
}

struct Outcome {
  bool decided;
  bool agrees;
};

// The screen on a row's listed columns of `centroids` (a column may be listed twice: a
// scanned slice repeats its listed keys' columns), and the FP64 path's label (distances
// rounded to FP32, the lower column on equal values).
Outcome settle(const std::vector<float>& x, const std::vector<std::vector<float>>& centroids,
               const std::vector<int>& listed) {
  float smallest = INFINITY, runner_up = INFINITY;
  int smallest_column = -1, fp64_label = -1;
  float fp64_best = INFINITY;
  for (int j : listed) {
    const float d = warp_distance<float>(x, centroids[j]);
    if (d < smallest) {
      runner_up = smallest;
      smallest = d;
      smallest_column = j;
    } else if (d < runner_up && j != smallest_column) {
      runner_up = d;
    }
    const float exact = float(warp_distance<double>(x, centroids[j]));
    if (exact < fp64_best || (exact == fp64_best && j < fp64_label)) {
      fp64_best = exact;
      fp64_label = j;
    }
  }
  const bool decided = gemm_window::screen_decides(smallest, runner_up, int(x.size()));
  return {decided, !decided || smallest_column == fp64_label};
}

Outcome settle(const std::vector<float>& x, const std::vector<std::vector<float>>& centroids) {
  std::vector<int> listed(centroids.size());
  for (int j = 0; j < int(listed.size()); ++j) listed[j] = j;
  return settle(x, centroids, listed);
}

// x, and candidates at distance r·(1 + gap)^k from it along random directions (k = 0, 1, then
// farther), in a random column order.
std::vector<std::vector<float>> row_at_gap(std::mt19937& rng, const std::vector<float>& x, double scale, double gap) {
  const int n = int(x.size());
  std::normal_distribution<double> normal;
  std::vector<std::vector<float>> out;
  const double radius = scale * (0.5 + std::uniform_real_distribution<double>()(rng));
  for (double factor : {1.0, 1.0 + gap, 1.5, 2.0}) {
    std::vector<double> dir(n);
    double norm = 0;
    for (double& v : dir) norm += (v = normal(rng)) * v;
    std::vector<float> c(n);
    for (int d = 0; d < n; ++d) c[d] = float(x[d] + radius * factor * dir[d] / std::sqrt(norm));
    out.push_back(std::move(c));
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

std::vector<float> random_point(std::mt19937& rng, int n, double scale, double offset) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<float> x(n);
  for (float& v : x) v = float(offset + scale * uniform(rng));
  return x;
}

TEST(GemmWindowScreen, DecidesOnlyWhereItsLabelIsTheFp64PathsAtEveryGapAndScale) {
  std::mt19937 rng(32);
  for (int n : {3, 5, 32, 100, 128, 256, 768, 1024}) {
    for (double scale : {1e-18, 1.0, 1e12}) {
      int decided_apart = 0, rows_apart = 0;
      for (double gap : {0.0, 1e-9, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2}) {
        for (int trial = 0; trial < 12; ++trial) {
          const std::vector<float> x = random_point(rng, n, scale, trial % 2 ? 3.0 * scale : 0.0);
          const Outcome o = settle(x, row_at_gap(rng, x, scale, gap));
          EXPECT_TRUE(o.agrees) << "n=" << n << " scale=" << scale << " gap=" << gap;
          if (gap >= 1e-3) {
            ++rows_apart;
            decided_apart += o.decided;
          }
        }
      }
      // Not vacuous: candidates 0.1 % apart are decided by the screen.
      EXPECT_EQ(decided_apart, rows_apart) << "n=" << n << " scale=" << scale;
    }
  }
}

TEST(GemmWindowScreen, ADuplicateCentroidOrAnAbsentRunnerUpDecidesNothing) {
  std::mt19937 rng(7);
  for (int n : {4, 128, 768}) {
    const std::vector<float> x = random_point(rng, n, 1.0, 0.0);
    std::vector<std::vector<float>> row = row_at_gap(rng, x, 1.0, 0.5);
    int nearest = 0;
    for (int j = 1; j < int(row.size()); ++j)
      if (warp_distance<double>(x, row[j]) < warp_distance<double>(x, row[nearest])) nearest = j;
    row.push_back(row[nearest]);
    const Outcome o = settle(x, row);
    EXPECT_FALSE(o.decided) << "n=" << n;
    EXPECT_TRUE(o.agrees) << "n=" << n;
  }
  EXPECT_FALSE(gemm_window::screen_decides(1.f, INFINITY, 128));
  EXPECT_FALSE(gemm_window::screen_decides(1.f, NAN, 128));
  EXPECT_FALSE(gemm_window::screen_decides(NAN, 2.f, 128));
  EXPECT_FALSE(gemm_window::screen_decides(2.f, 2.f, 128));
  EXPECT_TRUE(gemm_window::screen_decides(1.f, 1.001f, 1024));
}

// The bound itself: the FP32 sum in the kernel's order errs by at most γ_k·D + η against the
// exact distance (long double: differences exact, 64-bit significands), on random rows and on
// rows where each lane's first piece dominates. The errors seen are 4-19 % of the bound
// (g++ 12, x86-64): at least 1 % is required, so the bound is not vacuously loose, and they
// are far above η, so a bound without γ fails.
TEST(GemmWindowScreen, TheFp32SumErrsWithinItsForwardErrorBound) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (int n : {4, 5, 31, 128, 129, 256, 768, 1000, 1024}) {
    const double k = double(gemm_window::screen_roundings(n)) * 0x1p-24;
    const double gamma = k / (1.0 - k), eta = (2.0 * n + 256.0) * 0x1p-150;
    double worst = 0.0;  // the largest error seen, as a fraction of the bound
    for (int trial = 0; trial < 40; ++trial) {
      const bool dominant_heads = trial % 2 == 0;
      std::vector<float> x(n), c(n);
      for (int d = 0; d < n; ++d) {
        const bool head = n % 4 == 0 ? d / 4 < 32 : d < 32;  // each lane's first piece or dim
        const double magnitude = dominant_heads ? (head ? 1.0 : 0x1p-12 * (1.0 + uniform(rng))) : uniform(rng);
        x[d] = float(uniform(rng));
        c[d] = float(double(x[d]) + magnitude * (uniform(rng) < 0.5 ? -1.0 : 1.0) * (0.75 + 0.5 * uniform(rng)));
      }
      const double computed = double(warp_distance<float>(x, c));
      long double exact = 0.0L;
      for (int d = 0; d < n; ++d) {
        const long double e = (long double)x[d] - (long double)c[d];
        exact += e * e;
      }
      const double error = std::fabs(computed - double(exact));
      const double limit = gamma * double(exact) + eta;
      EXPECT_LE(error, limit) << "n=" << n << " trial=" << trial;
      worst = std::max(worst, error / limit);
    }
    EXPECT_GT(worst, 0.01) << "n=" << n << ": the bound is over 100 times the largest error seen";
  }
}

// The rule's width at 1.0 for 128 dims: k = 12 roundings, γ ≈ 7.2e-7, so the runner-up must be
// about (1 + γ)²·(1 + 2^-21) ≈ 1 + 1.9e-6 of the smallest, 16.00001 FP32 units at 1.0: 17 units
// decide, 16 do not.
TEST(GemmWindowScreen, TheRunnerUpMustClearTheBoundOnBothSides) {
  const float one = 1.0f;
  float above = one;
  for (int ulp = 0; ulp < 16; ++ulp) above = std::nextafter(above, 2.0f);
  EXPECT_FALSE(gemm_window::screen_decides(one, above, 128));
  above = std::nextafter(above, 2.0f);
  EXPECT_TRUE(gemm_window::screen_decides(one, above, 128));
  // Wider rows need more: 1024 dims (k = 40) leaves 17 units undecided.
  EXPECT_FALSE(gemm_window::screen_decides(one, above, 1024));
}

TEST(GemmWindowScreen, AColumnListedTwiceIsOneCandidate) {
  // The main kernel lists a slice's first and second keys and then scans the whole slice, so
  // the winner's column can come twice; the repeat must not read as a tie, or no scanned row
  // would ever be settled by the screen.
  std::mt19937 rng(5);
  int decided = 0, rows = 0;
  for (int n : {4, 128, 768}) {
    for (int trial = 0; trial < 8; ++trial) {
      const std::vector<float> x = random_point(rng, n, 1.0, 0.0);
      const std::vector<std::vector<float>> row = row_at_gap(rng, x, 1.0, 0.01);
      for (const std::vector<int>& listed : {std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}, std::vector<int>{3, 2, 3, 1, 0, 0, 1, 2}}) {
        const Outcome o = settle(x, row, listed);
        EXPECT_TRUE(o.agrees) << "n=" << n;
        ++rows;
        decided += o.decided;
      }
    }
  }
  EXPECT_EQ(decided, rows);
}

TEST(GemmWindowScreen, SubnormalDistancesAreDecidedOnlyWhenTheirFp32RoundingsDiffer) {
  std::mt19937 rng(11);
  int decided_subnormal = 0;
  for (int n : {8, 128, 768}) {
    for (double scale : {1e-21, 1e-23}) {  // squares of 1e-21 and 1e-23 fall below FP32's normal range
      for (double gap : {0.0, 1e-6, 1e-2, 1.0}) {
        for (int trial = 0; trial < 8; ++trial) {
          const std::vector<float> x = random_point(rng, n, scale, 0.0);
          const Outcome o = settle(x, row_at_gap(rng, x, scale, gap));
          EXPECT_TRUE(o.agrees) << "n=" << n << " scale=" << scale << " gap=" << gap;
          if (scale == 1e-21) decided_subnormal += o.decided;
        }
      }
    }
  }
  // Not vacuous: rows of subnormal distances far enough apart are decided (at 1e-23 the
  // squares mostly underflow to zero, ties the screen leaves to FP64).
  EXPECT_GT(decided_subnormal, 0);
  // A centroid on the point against one a subnormal distance away: the rule needs 2^-147 more.
  EXPECT_FALSE(gemm_window::screen_decides(0.f, 0x1p-149f, 8));
  EXPECT_TRUE(gemm_window::screen_decides(0.f, 0x1p-140f, 8));
}

}  // namespace
}  // namespace mk
