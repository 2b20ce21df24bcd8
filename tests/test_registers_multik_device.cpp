// registers-multik on the GPU: both values of the rows axis (a lane reads its rows from global
// memory, or from per-warp shared-memory stages filled a step ahead) against the FP64 reference,
// with a point count that leaves the last warp step partly past M, so the zero-filled rows of a
// stage are exercised too. Without a GPU every case is skipped with the driver's reason.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "datasets/dataset.hpp"
#include "harness/reference.hpp"
#include "tests/reference_steps.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

struct RowsCase {
  int n, kmin, kmax;
  const char* accumulate;
  int lane_points;
};

TEST(RegistersMultiKDevice, RowsFromGlobalOrSharedStagesMatchTheReference) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  const Variant& variant = Registry::instance().get("registers-multik");
  const DeviceInfo device = query_device(0);
  // N=32 K=8 is the Python benchmark's shape; the stage's row stride is padded for N=8, 16 and
  // 32 and not for N=4 and 12; accumulate=registers takes no second read of the rows.
  const std::vector<RowsCase> cases{{32, 8, 8, "mma", 1}, {32, 8, 8, "mma", 2},      {8, 3, 7, "mma", 2},
                                    {4, 3, 5, "mma", 1},  {12, 3, 6, "mma", 2},      {16, 3, 7, "mma", 1},
                                    {8, 3, 5, "registers", 1}};
  for (const RowsCase& c : cases)
    for (const char* rows : {"global", "shared"}) {
      GeneratorSpec spec;
      spec.kind = "blobs";
      spec.centers = 6;
      spec.m = 200003;  // the last warp step ends past M
      spec.n = c.n;
      spec.seed = 7 + c.n;
      const Dataset data = generate(spec);
      Problem problem;
      problem.m = data.m;
      problem.n = data.n;
      problem.k = KRange{c.kmin, c.kmax};
      const std::string label = problem.str() + " accumulate=" + c.accumulate +
                                " lane_points=" + std::to_string(c.lane_points) + " rows=" + rows;
      SCOPED_TRACE(label);
      ASSERT_FALSE(variant.can_implement(problem, device).has_value()) << *variant.can_implement(problem, device);
      Params overrides{{"rows", rows}, {"accumulate", c.accumulate}, {"lane_points", c.lane_points}};
      const Params params = resolve_params(variant, problem, device, overrides);
      auto run = variant.prepare(problem, data, params, device);
      testing_support::expect_steps_match_reference(
          *run, data, problem.k, initial_centroids(data, problem.k, InitMethod::RandomSample, 5), 3, true);
      if (HasFatalFailure()) return;
    }
}

}  // namespace
}  // namespace mk
