// `mkbench fit --device 0,1` (two GPUs of one process, NCCL where built in) gives the fit of
// `--device 0` through the binary: the same best_k, per K the centroids within --verify's
// tolerance, labels equal except near ties (fit_compare.hpp). Both start from the same given
// centres (--init npy:) and run the same 10 steps (--tol 0), and the variants are those whose
// per-point arithmetic does not depend on the shard (tests/test_sharded_gpu.cpp's). Fits run to
// convergence are not compared: the GPUs' FP64 atomics sum in a run-to-run order, a K can stop
// on the rounding floor a step sooner or later, and that step moves its centroids by more
// than the tolerance (K=7 on a 4-GPU H200 at ae14067: 5 coordinates, 5 labels off).
// Skips without two CUDA GPUs; tests/device.sh's multigpu-verify stage runs it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "fit_compare.hpp"
#include "harness/measure.hpp"
#include "process_helpers.hpp"

namespace mk {
namespace {

using testing_support::expect_same_fit;
using testing_support::read_fit_json;
using testing_support::run_mkbench_args;
using testing_support::TempFolder;

TEST(FitShardedGpu, TwoGpusFitAKRangeAsOneGpu) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  if (gpu_count() < 2) GTEST_SKIP() << "needs 2 CUDA GPUs, this machine has " << gpu_count();
  TempFolder folder("fit_sharded_gpu");
  GeneratorSpec spec;
  spec.kind = "blobs";
  spec.m = 200003;  // odd: two shards of different sizes
  spec.n = 8;
  spec.centers = 5;
  spec.seed = 21;
  const Dataset data = generate(spec);
  const std::string file = folder.file("points.npy");
  save_npy(file, data);
  Dataset start;  // 7 spread rows of the data: the first k seed each K of 3..7
  start.m = 7;
  start.n = data.n;
  for (int64_t row = 0; row < start.m; ++row)
    start.values.insert(start.values.end(), data.values.begin() + (row * 28571 + 5) * data.n,
                        data.values.begin() + (row * 28571 + 6) * data.n);
  const std::string init = folder.file("init.npy");
  save_npy(init, start);
  for (const std::string variant : {"registers-multik", "shared-atomics"}) {
    SCOPED_TRACE(variant);
    auto fit = [&](const std::string& device, const std::string& out) {
      return run_mkbench_args({"fit", "--dataset", "npy:" + file, "--k", "3..7", "--init", "npy:" + init,
                               "--variant", variant, "--empty", "keep", "--max-iter", "10", "--tol", "0", "--device", device,
                               "--out", out, "--quiet"});
    };
    const std::string one = folder.file(variant + "-one"), two = folder.file(variant + "-two");
    const auto single = fit("0", one);
    ASSERT_EQ(single.exit_code, 0) << single.output;
    const auto sharded = fit("0,1", two);
    ASSERT_EQ(sharded.exit_code, 0) << sharded.output;
    const nlohmann::json doc = read_fit_json(two);
    EXPECT_EQ(doc.at("variant").at("name"), variant);
    ASSERT_TRUE(doc.contains("parallel")) << "fit.json does not record the shards";
    EXPECT_EQ(doc.at("parallel").at("ranks"), 2);
    EXPECT_EQ(doc.at("parallel").at("launch"), "one-process");
    EXPECT_EQ(doc.at("parallel").at("shards").size(), 2u);
    expect_same_fit(two, one, data, 0);
  }
}

}  // namespace
}  // namespace mk
