// best_k recovers the planted K of `blobs:centers=K` (issue 31's check): K = 3, 6, 12, spread
// 1.0 and 2.5 in the default box, N = 2 and 16, ten seeds each, `fit --k 2..16 --n-init 3`.
// The planted K and centres are the reference: the generator's (blob_centers), not the code
// under test's. Runs on whatever `fit --variant auto` picks (cpu-openmp without a GPU).
//
// A planted K is only recoverable where its blobs do not overlap, so a seed counts when every
// two planted centres are at least 4 spreads apart (two equal Gaussian blobs are not even
// bimodal below 2). Every N = 16 seed qualifies, where the check is the issue's: 9 of 10. In
// N = 2 the default box [-10, 10]^2 puts planted centres as close as 0.1 (K = 12): there only
// the separable seeds are held to 90 %, a set with none is skipped with its picks printed,
// and docs/fit.md lists the misses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "apps/fit/fit.hpp"
#include "apps/fit/fit_variant.hpp"
#include "core/device_info.hpp"
#include "datasets/dataset.hpp"
#include "harness/measure.hpp"

namespace mk {
namespace {

struct BlobSet {
  int centers;
  double spread;
  int n;
};

std::string set_name(const ::testing::TestParamInfo<BlobSet>& info) {
  char text[64];
  std::snprintf(text, sizeof text, "K%d_spread%s_N%d", info.param.centers, info.param.spread == 1.0 ? "1" : "2p5",
                info.param.n);
  return text;
}

class FitBestK : public ::testing::TestWithParam<BlobSet> {};

// M: 200 points a blob at K = 12, few enough that the 360 seedings of a CPU run (12 sets, 10
// seeds, 3 restarts) take a few minutes on CI's two cores.
constexpr int64_t kPoints = 2400;
constexpr int kSeeds = 10;
// One k-means++ seeding at K = 12 (N = 16, spread 2.5) ended in a local minimum (two blobs
// merged, one split) in 3 of 10 seeds, which no rule for K can undo; 3 restarts left 1.
constexpr int kRestarts = 3;
constexpr double kSeparation = 4.0;  // in spreads

bool planted_centres_separable(const GeneratorSpec& spec) {
  const std::vector<float> centres = blob_centers(spec);
  for (int a = 0; a < spec.centers; ++a)
    for (int b = a + 1; b < spec.centers; ++b) {
      double d2 = 0;
      for (int d = 0; d < spec.n; ++d) {
        const double diff = double(centres[size_t(a) * spec.n + d]) - double(centres[size_t(b) * spec.n + d]);
        d2 += diff * diff;
      }
      if (std::sqrt(d2) < kSeparation * spec.spread) return false;
    }
  return true;
}

TEST_P(FitBestK, RecoversThePlantedKWhereTheBlobsAreSeparable) {
  const BlobSet set = GetParam();
  const DeviceInfo gpu = gpu_count() > 0 ? query_device(0) : query_host_cpu();
  int hits = 0, separable = 0, separable_hits = 0;
  std::string picks, variant_name;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    GeneratorSpec spec;
    spec.kind = "blobs";
    spec.centers = set.centers;
    spec.spread = set.spread;
    spec.m = kPoints;
    spec.n = set.n;
    spec.seed = uint64_t(seed);
    const Dataset data = generate(spec);
    FitSettings settings;
    settings.k = KRange{2, 16};
    settings.n_init = kRestarts;
    settings.seed = uint64_t(seed);
    Problem problem;
    problem.m = data.m;
    problem.n = data.n;
    problem.k = settings.k;
    const FitVariantChoice choice = choose_fit_variant("auto", problem, gpu);
    ASSERT_FALSE(choice.name.empty()) << choice.reason;
    const Variant& variant = Registry::instance().get(choice.name);
    variant_name = variant.name();
    const DeviceInfo device = variant.runs_on_gpu() ? gpu : query_host_cpu();
    settings.metrics_on_gpu = device.is_gpu;
    auto run = variant.prepare(problem, data, resolve_params(variant, problem, device, Params::object()), device);
    const FitResult result = fit_k_range(std::move(run), data, settings, device);
    const bool hit = result.best.k == set.centers;
    const bool apart = planted_centres_separable(spec);
    hits += hit;
    separable += apart;
    separable_hits += apart && hit;
    picks += " " + std::to_string(result.best.k.value_or(0)) + (apart ? "" : "*");
  }
  std::printf("best_k %s on %s: planted K=%d, spread %.1f, N=%d: %d of %d seeds; %d of the %d separable "
              "(picks, * = centres closer than %.0f spreads:%s)\n",
              kBestKRule, variant_name.c_str(), set.centers, set.spread, set.n, hits, kSeeds, separable_hits,
              separable, kSeparation, picks.c_str());
  if (separable == 0)
    GTEST_SKIP() << "no seed of this set has its planted centres " << kSeparation << " spreads apart: the planted K "
                 << "is not recoverable (best_k hit it in " << hits << " of " << kSeeds << "; picks:" << picks << ")";
  EXPECT_GE(10 * separable_hits, 9 * separable) << "picks:" << picks;
}

INSTANTIATE_TEST_SUITE_P(Blobs, FitBestK,
                         ::testing::Values(BlobSet{3, 1.0, 2}, BlobSet{3, 1.0, 16}, BlobSet{3, 2.5, 2},
                                           BlobSet{3, 2.5, 16}, BlobSet{6, 1.0, 2}, BlobSet{6, 1.0, 16},
                                           BlobSet{6, 2.5, 2}, BlobSet{6, 2.5, 16}, BlobSet{12, 1.0, 2},
                                           BlobSet{12, 1.0, 16}, BlobSet{12, 2.5, 2}, BlobSet{12, 2.5, 16}),
                         set_name);

}  // namespace
}  // namespace mk
