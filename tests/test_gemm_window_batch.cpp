// gemm-window serving a whole batch (Problem::batch) in one launch a kernel: which batches it
// takes (batch_refusal), the geometry that gives each problem its own group of the table, and on
// the GPU every problem's step against the FP64 reference on its own rows, with each update path
// and tile the one launch takes.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "harness/reference.hpp"
#include "tests/synthetic_devices.hpp"
#include "variants/batched/batched_variant.hpp"
#include "variants/gemm_window/config.hpp"
#include "variants/gemm_window/run.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

using gemm_window::batch_refusal;
using gemm_window::block_smem_bytes;
using gemm_window::find_tile;
using gemm_window::kTileConfigs;
using gemm_window::make_batch_geometry;
using gemm_window::run_config;

const Variant& window_variant() { return Registry::instance().get("gemm-window"); }

Problem batch_of(int batch, int64_t m, int n, int k) {
  Problem problem = testing_support::make_problem(m, n, k, k);
  problem.batch = batch;
  return problem;
}

Params params_with(const std::string& tile, const std::string& update, int stage = 32) {
  return Params{{"tile", tile}, {"update", update}, {"table", "stream"}, {"grid", 0},
                {"stage", stage}, {"points", "global"}, {"arbitrate", "auto"}};
}

TEST(GemmWindowBatch, EachProblemHasItsOwnGroupOfSlotsAndTiles) {
  const auto& tile = *find_tile("64x128/2x2");
  const gemm_window::Geometry g = make_batch_geometry(96, 300, 5, tile);
  ASSERT_EQ(g.groups.size(), 5u);
  EXPECT_EQ(g.slots, 1500);
  EXPECT_EQ(g.total_tiles, 5 * 3);  // 300 columns in tiles of 128: 3
  EXPECT_EQ(g.total_columns, 15 * 128);
  for (int b = 0; b < 5; ++b) {
    EXPECT_EQ(g.groups[size_t(b)].k, 300);
    EXPECT_EQ(g.groups[size_t(b)].slot_offset, 300 * b);
    EXPECT_EQ(g.groups[size_t(b)].first_tile, 3 * b);
    EXPECT_EQ(g.groups[size_t(b)].tiles, 3);
  }
  EXPECT_EQ(g.index_bits, gemm_window::make_geometry(96, 300, 300, tile).index_bits);
}

TEST(GemmWindowBatch, TakesIssue32sBatchAndRefusesWhatOneLaunchCannotServeNamingWhy) {
  const auto refusal = [](const Problem& problem, const Params& params) {
    const auto why = batch_refusal(problem, run_config(params));
    return why ? *why : std::string("none");
  };
  // Issue 32's batch: 32 problems of 65,536 x 128, K=1024, with the tiles and updates auto takes.
  EXPECT_EQ(refusal(batch_of(32, 65536, 128, 1024), params_with("128x64/wgmma", "sorted")), "none");
  EXPECT_EQ(refusal(batch_of(32, 65536, 128, 1024), params_with("64x128/2x2", "sorted", 64)), "none");
  EXPECT_NE(refusal(batch_of(4, 1000, 32, 64), params_with("64x128/2x2", "sorted")).find("multiple of the tile's 64"),
            std::string::npos);
  Problem range = batch_of(4, 1024, 32, 3);
  range.k = KRange{3, 7};
  EXPECT_NE(refusal(range, params_with("64x128/2x2", "sorted")).find("K range"), std::string::npos);
  EXPECT_NE(refusal(batch_of(4, 1024, 32, 64), params_with("64x128/2x2", "shared")).find("update=shared"),
            std::string::npos);
  EXPECT_NE(refusal(batch_of(65, 1024, 32, 64), params_with("64x128/2x2", "sorted")).find("more than 64 problems"),
            std::string::npos);
  EXPECT_NE(refusal(batch_of(16, 1024, 32, 1024), params_with("64x128/2x2", "global")).find("8192 slots"),
            std::string::npos);
  // K=64 at 32 dims is one centroid tile of one chunk: one ring stage a problem. At 64 dims, two
  // chunks: two stages at 32-dim stages (taken), one at 64-dim stages.
  EXPECT_NE(refusal(batch_of(4, 1024, 32, 64), params_with("64x128/2x2", "sorted")).find("one ring stage"),
            std::string::npos);
  EXPECT_EQ(refusal(batch_of(4, 1024, 64, 64), params_with("64x128/2x2", "sorted")), "none");
  EXPECT_NE(refusal(batch_of(4, 1024, 64, 64), params_with("64x128/2x2", "sorted", 64)).find("one ring stage"),
            std::string::npos);
  // A wgmma tile's stage is a whole centroid tile, whatever stage says: K=64 is one tile of 64
  // columns, K=128 two.
  EXPECT_NE(refusal(batch_of(4, 1024, 128, 64), params_with("128x64/wgmma", "sorted")).find("one ring stage"),
            std::string::npos);
  EXPECT_EQ(refusal(batch_of(4, 1024, 128, 128), params_with("128x64/wgmma", "sorted")), "none");
}

// update=sorted counts in sum_label_runs, so its blocks keep no counts in shared memory, for
// one problem or a batch; update=global keeps one a slot (B·K for a batch).
TEST(GemmWindowBatch, SortedBlocksCountNothingSoTheirSharedMemoryDoesNotGrowWithTheBatch) {
  const gemm_window::RunConfig sorted = run_config(params_with("128x64/wgmma", "sorted"));
  const gemm_window::RunConfig global = run_config(params_with("128x64/wgmma", "global"));
  for (const int batch : {1, 4}) {
    const gemm_window::SmemLayout l = gemm_window::block_smem_layout(batch_of(batch, 65536, 128, 1024), sorted);
    EXPECT_EQ(l.sums, l.counts) << batch << " problems: no counts";
    const gemm_window::SmemLayout g = gemm_window::block_smem_layout(batch_of(batch, 65536, 128, 1024), global);
    EXPECT_EQ(g.sums - g.counts, int64_t(batch) * 1024 * 4) << batch << " problems";
  }
  const int64_t one = block_smem_bytes(batch_of(1, 65536, 128, 1024), sorted);
  const int64_t all = block_smem_bytes(batch_of(32, 65536, 128, 1024), sorted);
  // Only the per-group inertia (a double a warp a problem) grows, and the wgmma tile's 1 KiB
  // alignment of A may absorb it.
  EXPECT_LE(all, one + 32 * kTileConfigs[sorted.tile_index].warps() * 8);
}

// `batch` problems of m rows; problem b's values uniform in [offset·b, offset·b + 1).
Dataset batch_data(int batch, int64_t m, int n, float offset, uint64_t seed) {
  GeneratorSpec spec;
  spec.kind = "uniform";
  spec.m = m * batch;
  spec.n = n;
  spec.seed = seed;
  Dataset data = generate(spec);
  for (int64_t i = 0; i < data.m; ++i)
    for (int d = 0; d < n; ++d) data.values[size_t(i) * n + d] += offset * float(i / m);
  return data;
}

struct BatchCase {
  const char* name;
  int batch;
  int64_t m;
  int n, k;
  float offset;  // problem b's rows start at offset·b: far apart, the shared scale widens every window
};

class GemmWindowBatchOnDevice : public ::testing::TestWithParam<BatchCase> {
 protected:
  void SetUp() override {
    if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
    if (query_device(0).cc_major < 8) GTEST_SKIP() << "gemm-window needs CC >= 8.0";
  }
};

// One launch a kernel for the whole batch (prepare_batch gives a run, not null), two steps,
// each problem judged on its own rows from its own centroids, with each update the one launch
// takes, deferred and in-block arbitration, and every tile the device runs.
TEST_P(GemmWindowBatchOnDevice, OneLaunchSolvesEveryProblemAsTheReferenceDoes) {
  const BatchCase c = GetParam();
  const Problem problem = batch_of(c.batch, c.m, c.n, c.k);
  const Dataset data = batch_data(c.batch, c.m, c.n, c.offset, 17);
  const DeviceInfo device = query_device(0);
  const Problem one = problem_of_one(problem);
  const ParamSpace space = window_variant().param_space(one, device);
  std::vector<Params> points;
  for (const auto& tile : kTileConfigs) {
    for (const char* update : {"sorted", "global"}) {
      Params p = resolve_params(window_variant(), one, device, Params::object());
      p["tile"] = tile.name;
      p["update"] = update;
      p["table"] = "stream";
      p["stage"] = 32;
      if (space.check(p)) continue;  // a tile this device or shape does not take
      if (batch_refusal(problem, run_config(p))) continue;
      points.push_back(p);
      if (std::string(update) == "sorted") {
        p["arbitrate"] = "block";
        points.push_back(p);
        // One and two blocks: each takes tiles of every problem in turn, so its ring hands over
        // from one problem's group to the next mid-sweep (with the full grid most blocks of these
        // small cases take one tile).
        for (int grid : {1, 2}) {
          Params few = p;
          few["arbitrate"] = "auto";
          few["grid"] = grid;
          points.push_back(few);
        }
      }
    }
  }
  ASSERT_GE(points.size(), 3u) << "the case must reach the one launch with several tiles and updates";
  for (const Params& params : points) {
    SCOPED_TRACE(params_label(params));
    std::unique_ptr<PreparedRun> run = window_variant().prepare_batch(problem, data, params, device);
    ASSERT_TRUE(run) << "the batch fell back to a run a problem";
    std::vector<float> before = batch_initial_centroids(data, problem, InitMethod::RandomSample, 5);
    for (int step = 0; step < 2; ++step) {
      run->set_centroids(before);
      run->iterate(true);
      run->synchronize();
      const IterationResult got = run->read_back();
      ASSERT_EQ(got.per_k.size(), size_t(c.batch));
      const VerifyReport report = compare_batch_with_reference(data, problem, before, got);
      ASSERT_TRUE(report.passed) << "step " << step << ": " << report.summary();
      before.clear();
      for (const KResult& r : got.per_k) before.insert(before.end(), r.centroids.begin(), r.centroids.end());
    }
  }
}

TEST_P(GemmWindowBatchOnDevice, ABatchOneLaunchCannotServeRunsARunAProblem) {
  const BatchCase c = GetParam();
  const Problem problem = batch_of(c.batch, c.m + 1, c.n, c.k);  // no longer a multiple of any tile's rows
  const Dataset data = batch_data(c.batch, c.m + 1, c.n, c.offset, 23);
  const DeviceInfo device = query_device(0);
  Params params = resolve_params(window_variant(), problem_of_one(problem), device, Params::object());
  params["update"] = "sorted";
  EXPECT_EQ(window_variant().prepare_batch(problem, data, params, device), nullptr);
  const auto batched = variant_for_batch(window_variant());
  auto run = batched->prepare(problem, data, params, device);
  const std::vector<float> before = batch_initial_centroids(data, problem, InitMethod::FirstK, 0);
  run->set_centroids(before);
  run->iterate(true);
  run->synchronize();
  const VerifyReport report = compare_batch_with_reference(data, problem, before, run->read_back());
  EXPECT_TRUE(report.passed) << report.summary();
}

INSTANTIATE_TEST_SUITE_P(
    Batches, GemmWindowBatchOnDevice,
    ::testing::Values(BatchCase{"b6_m1024_n96_k40", 6, 1024, 96, 40, 0.f},
                      BatchCase{"b3_m512_n64_k300_far_apart", 3, 512, 64, 300, 100.f},
                      BatchCase{"b4_m2048_n128_k512", 4, 2048, 128, 512, 0.f},
                      // Two centroid tiles a problem at the wgmma tile's 64 columns: its ring
                      // fetches the next problem's group right after a tile's first wgmmas.
                      BatchCase{"b4_m1024_n128_k100", 4, 1024, 128, 100, 0.f}),
    [](const ::testing::TestParamInfo<BatchCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace mk
