// A run kept warm (variants/warm_runs.hpp) and taken by the next fit of its shape fits new points
// as a freshly prepared run does: the Python device route's reuse, through fit_device_points on
// host rows. Blobs with one centre per cluster keep every point far from a tie, so the labels
// must agree exactly and the centres to FP32 summation-order noise. Without a GPU the case is
// skipped with the driver's reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "apps/fit/device_points.hpp"
#include "apps/fit/fit.hpp"
#include "core/device_info.hpp"
#include "datasets/dataset.hpp"
#include "variants/variant.hpp"
#include "variants/warm_runs.hpp"

namespace mk {
namespace {

Dataset blobs(uint64_t seed, const Problem& problem) {
  GeneratorSpec spec;
  spec.kind = "blobs";
  spec.centers = problem.k.kmax;
  spec.m = problem.m;
  spec.n = problem.n;
  spec.seed = seed;
  return generate(spec);
}

KFit fit_on(PreparedRun& run, const Dataset& data, const KRange& k, const DeviceInfo& device) {
  DevicePoints points;
  points.data = data.values.data();
  points.m = data.m;
  points.n = data.n;
  points.row_stride = data.n;
  points.on_host = true;
  FitSettings settings;
  settings.k = k;
  settings.init = "array";
  settings.initial_centroids.assign(data.values.begin(), data.values.begin() + size_t(k.kmax) * size_t(data.n));
  settings.max_iter = 8;
  settings.tol = 0;
  std::vector<DeviceFit> fits = fit_device_points(points, run, settings, device);
  return std::move(fits.at(0).fit);
}

TEST(WarmRunsDevice, AKeptRunTakenByTheNextFitFitsNewPointsAsAFreshRunDoes) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  release_warm_runs();
  const Variant& variant = Registry::instance().get("registers-multik");
  const DeviceInfo device = query_device(0);
  Problem problem;
  problem.m = 100003;  // the last warp step ends past M
  problem.n = 32;
  problem.k = KRange{8, 8};
  problem.streamed = true;
  const Params params = resolve_params(variant, problem, device, Params::object());
  Dataset none;
  none.m = problem.m;
  none.n = problem.n;
  const WarmRunKey key{device.ordinal, variant.name(), params.dump(), problem.str()};

  const Dataset first = blobs(11, problem), second = blobs(12, problem);
  std::unique_ptr<PreparedRun> kept = variant.prepare(problem, none, params, device);
  fit_on(*kept, first, problem.k, device);
  const PreparedRun* address = kept.get();
  keep_run_warm(key, std::move(kept));
  std::unique_ptr<PreparedRun> reused = take_warm_run(key);
  ASSERT_EQ(reused.get(), address) << "the next fit of the key did not take the kept run";
  const KFit warm = fit_on(*reused, second, problem.k, device);
  reused.reset();

  std::unique_ptr<PreparedRun> fresh_run = variant.prepare(problem, none, params, device);
  const KFit fresh = fit_on(*fresh_run, second, problem.k, device);

  ASSERT_EQ(warm.labels.size(), fresh.labels.size());
  EXPECT_TRUE(std::equal(warm.labels.begin(), warm.labels.end(), fresh.labels.begin()))
      << "labels differ between the reused and the fresh run";
  EXPECT_EQ(warm.counts, fresh.counts);
  EXPECT_EQ(warm.iterations, fresh.iterations);
  ASSERT_EQ(warm.centroids.size(), fresh.centroids.size());
  double largest = 0;
  for (size_t i = 0; i < warm.centroids.size(); ++i)
    largest = std::max(largest, double(std::fabs(warm.centroids[i] - fresh.centroids[i])) /
                                    std::max(1.0, double(std::fabs(fresh.centroids[i]))));
  EXPECT_LT(largest, 1e-5) << "centres differ by more than summation order";
  EXPECT_NEAR(warm.inertia / fresh.inertia, 1.0, 1e-6);
}

}  // namespace
}  // namespace mk
