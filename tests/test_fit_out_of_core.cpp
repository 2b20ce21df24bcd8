// `mkbench fit` out of core (docs/fit.md, "Data larger than the GPU"), through the binary:
// `--chunk-points C` (C dividing no part of M) gives the in-core fit with `--empty keep`
// (fit_compare.hpp's tolerances, the same step counts), fit.json records the chunking (read from
// the .npy's memory mapping, never copied), and the options an out-of-core fit cannot honour are
// refused. On a GPU, the same for registers-multik.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "fit_compare.hpp"
#include "generator_specs.hpp"
#include "harness/measure.hpp"
#include "process_helpers.hpp"

namespace mk {
namespace {

using testing_support::expect_same_fit;
using testing_support::read_fit_json;
using testing_support::run_mkbench_args;
using testing_support::TempFolder;

constexpr int64_t kPoints = 50001;
constexpr int64_t kChunk = 7001;  // 8 chunks, the last of 1 994 points

// kPoints × 5 around 6 blobs: `mkbench fit --dataset blobs:centers=6 --points 50001 --dims 5
// --seed S` makes the same.
Dataset blob_points(uint64_t seed = 17) {
  GeneratorSpec spec = testing_support::generator_spec("blobs", kPoints, 5, seed);
  spec.centers = 6;
  return generate(spec);
}

std::vector<std::string> fit_args(const std::string& file, const std::string& variant, const std::string& device,
                                  const std::string& out) {
  return {"fit",  "--dataset", "npy:" + file, "--k",   "3..7", "--variant", variant, "--device", device, "--seed",
          "5",    "--empty",   "keep",        "--tol", "0",    "--out",     out,     "--quiet"};
}

// On a GPU, FP64 atomics add in a run-to-run order: both fits run to their fixed point (tol 0),
// where a K may stop a step sooner or later on the rounding floor (the Python GPU tests' 3).
void expect_chunks_match_in_core(const std::string& variant, const std::string& device, int step_difference) {
  TempFolder folder("fit_out_of_core");
  const Dataset data = blob_points();
  const std::string file = folder.file("points.npy");
  save_npy(file, data);
  const std::string whole = folder.file("whole"), chunks = folder.file("chunks");
  const auto in_core = run_mkbench_args(fit_args(file, variant, device, whole));
  ASSERT_EQ(in_core.exit_code, 0) << in_core.output;
  std::vector<std::string> args = fit_args(file, variant, device, chunks);
  args.insert(args.end(), {"--chunk-points", std::to_string(kChunk)});
  const auto out_of_core = run_mkbench_args(args);
  ASSERT_EQ(out_of_core.exit_code, 0) << out_of_core.output;
  EXPECT_NE(out_of_core.output.find("fit: out of core, " + std::to_string(kChunk) + " points a chunk (--chunk-points)"),
            std::string::npos)
      << out_of_core.output;
  expect_same_fit(chunks, whole, data, step_difference);
  const nlohmann::json doc = read_fit_json(chunks);
  ASSERT_TRUE(doc.contains("out_of_core")) << "fit.json does not record the chunking";
  EXPECT_EQ(doc.at("out_of_core").at("chunk_points"), kChunk);
  EXPECT_EQ(doc.at("out_of_core").at("chunks"), (kPoints + kChunk - 1) / kChunk);
  // Planned out of core from the file's header, so the rows were never copied into host memory.
  EXPECT_EQ(doc.at("out_of_core").at("source"), "memory-mapped file");
  EXPECT_NE(out_of_core.output.find("read from the file's memory mapping"), std::string::npos) << out_of_core.output;
  EXPECT_FALSE(read_fit_json(whole).contains("out_of_core"));
}

TEST(FitOutOfCore, ChunksOfTheHostCpuGiveTheInCoreFit) { expect_chunks_match_in_core("cpu-openmp", "cpu", 0); }

TEST(FitOutOfCore, AGeneratorsRowsMadeWhereTheyAreReadGiveTheInCoreFit) {
  // The data of blob_points() from the generator itself (fit's --seed seeds it): out of core, no
  // host memory holds it; k-means++ (the default) seeds from every row, gathered.
  TempFolder folder("fit_generated");
  const Dataset data = blob_points(5);
  auto args_for = [](const std::string& out) {
    std::vector<std::string> args = fit_args("", "cpu-openmp", "cpu", out);
    args[2] = "blobs:centers=6";  // --dataset's value
    args.insert(args.end(), {"--points", std::to_string(kPoints), "--dims", "5"});
    return args;
  };
  const auto in_core = run_mkbench_args(args_for(folder.file("whole")));
  ASSERT_EQ(in_core.exit_code, 0) << in_core.output;
  std::vector<std::string> args = args_for(folder.file("chunks"));
  args.insert(args.end(), {"--chunk-points", std::to_string(kChunk)});
  const auto out_of_core = run_mkbench_args(args);
  ASSERT_EQ(out_of_core.exit_code, 0) << out_of_core.output;
  EXPECT_NE(out_of_core.output.find("each generated where it is read"), std::string::npos) << out_of_core.output;
  expect_same_fit(folder.file("chunks"), folder.file("whole"), data, 0);
  const nlohmann::json doc = read_fit_json(folder.file("chunks"));
  ASSERT_TRUE(doc.contains("out_of_core")) << "fit.json does not record the chunking";
  EXPECT_EQ(doc.at("out_of_core").at("source"), "generator");
  EXPECT_EQ(doc.at("dataset"), read_fit_json(folder.file("whole")).at("dataset")) << "the same data, named alike";
  // --hold-points makes them whole in host memory and copies the chunks from there.
  std::vector<std::string> held = args_for(folder.file("held"));
  held.insert(held.end(), {"--chunk-points", std::to_string(kChunk), "--hold-points"});
  const auto from_host = run_mkbench_args(held);
  ASSERT_EQ(from_host.exit_code, 0) << from_host.output;
  EXPECT_EQ(read_fit_json(folder.file("held")).at("out_of_core").at("source"), "host array");
  expect_same_fit(folder.file("held"), folder.file("whole"), data, 0);
}

TEST(FitOutOfCore, OptionsItCannotHonourAreRefused) {
  struct Case {
    std::vector<std::string> extra;
    int exit_code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--chunk-points", "0"}, 2, "--chunk-points must be at least 1"},
      {{"--chunk-points", "lots"}, 2, "--chunk-points"},
      {{"--chunk-points", "5000", "--empty", "farthest"}, 2, "use --empty keep"},
      {{"--chunk-points", "5000", "--device", "cpu:2"}, 2, "each shard holds its rows whole"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args{"fit",     "--dataset",  "blobs:centers=3", "--dims", "3", "--points", "20000",
                                  "--k",     "3",          "--variant",       "cpu-openmp", "--quiet"};
    if (std::find(c.extra.begin(), c.extra.end(), "--device") == c.extra.end())
      args.insert(args.end(), {"--device", "cpu"});
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const auto result = run_mkbench_args(args);
    EXPECT_EQ(result.exit_code, c.exit_code) << c.extra.back() << ": " << result.output;
    EXPECT_NE(result.output.find(c.says), std::string::npos) << result.output;
  }
}

TEST(FitOutOfCore, RegistersMultikChunksGiveTheInCoreFitOnAGpu) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  expect_chunks_match_in_core("registers-multik", "0", 3);
}

}  // namespace
}  // namespace mk
