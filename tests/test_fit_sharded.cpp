// `mkbench fit --device` over shards, through the binary (docs/multi-gpu.md, docs/fit.md):
// `--device cpu:3` (cpu-openmp over three in-process ranks) and `mpirun -np 2 ... --device cpu`
// (one rank a shard) give one device's fit, for one K and for a K range (fit_compare.hpp's
// tolerances), and fit.json records the shards as a results row records them; the --device
// texts `run` refuses are refused alike (exit 2, the same message); a step that leaves a
// cluster empty under farthest stops a sharded fit with exit 3. The GPU twin is
// test_fit_sharded_gpu.cpp.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "apps/fit/fit_output.hpp"
#include "datasets/dataset.hpp"
#include "fit_compare.hpp"
#include "harness/measure.hpp"
#include "harness/parallel/mpi_communicator.hpp"
#include "process_helpers.hpp"

namespace mk {
namespace {

using testing_support::expect_same_fit;
using testing_support::read_fit_json;
using testing_support::run_mkbench_args;
using testing_support::shell_quote;
using testing_support::TempFolder;

constexpr int64_t kPoints = 30001;  // odd: no shard count divides it
constexpr int kDims = 4;

Dataset blob_points() {
  GeneratorSpec spec;
  spec.kind = "blobs";
  spec.m = kPoints;
  spec.n = kDims;
  spec.centers = 5;
  spec.seed = 11;
  return generate(spec);
}

std::vector<std::string> fit_args(const std::string& data_file, const std::string& k, const std::string& device,
                                  const std::string& out) {
  return {"fit",      "--dataset", "npy:" + data_file, "--k",    k,       "--variant", "cpu-openmp",
          "--device", device,      "--seed",           "7",      "--out", out,         "--quiet"};
}

void expect_host_shards_match_one_device(const std::string& k, bool weighted = false) {
  TempFolder folder("fit_sharded");
  const Dataset data = blob_points();
  const std::string file = folder.file("points.npy");
  save_npy(file, data);
  std::vector<std::string> extra;
  if (weighted) {  // weights 0.5, 1, ..., 2.5 by point: a weighted fit's own route (host update)
    std::vector<float> weights(size_t(data.m));
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = 0.5f * float(1 + i % 5);
    const std::string path = folder.file("weights.npy");
    std::ofstream(path, std::ios::binary)
        << npy_bytes("<f4", {data.m}, weights.data(), weights.size() * sizeof(float));
    extra = {"--weights", "npy:" + path};
  }
  auto args = [&](const std::string& device, const std::string& out) {
    std::vector<std::string> a = fit_args(file, k, device, out);
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const std::string one = folder.file("one"), three = folder.file("three");
  const auto single = run_mkbench_args(args("cpu", one));
  ASSERT_EQ(single.exit_code, 0) << single.output;
  const auto sharded = run_mkbench_args(args("cpu:3", three));
  ASSERT_EQ(sharded.exit_code, 0) << sharded.output;
  expect_same_fit(three, one, data, 0);

  const nlohmann::json doc = read_fit_json(three);
  EXPECT_EQ(doc.at("device_option"), "cpu:3");
  ASSERT_TRUE(doc.contains("parallel")) << "fit.json does not record the shards";
  const nlohmann::json& parallel = doc.at("parallel");
  EXPECT_EQ(parallel.at("ranks"), 3);
  EXPECT_EQ(parallel.at("communicator"), "in-process");
  EXPECT_EQ(parallel.at("launch"), "one-process");
  ASSERT_EQ(parallel.at("shards").size(), 3u);
  int64_t rows = 0;
  for (const auto& shard : parallel.at("shards")) rows += shard.at("rows").get<int64_t>();
  EXPECT_EQ(rows, kPoints);  // every point in exactly one shard
  // Every step of the fit is timed: the per-shard medians are real times, not zeros.
  EXPECT_GT(parallel.at("shards")[0].at("step_median_ms").get<double>(), 0.0);
  EXPECT_FALSE(read_fit_json(one).contains("parallel")) << "one device is not sharded";
}

TEST(FitSharded, HostShardsFitOneKAsOneDevice) { expect_host_shards_match_one_device("5"); }

TEST(FitSharded, HostShardsFitAKRangeAsOneDeviceAndChooseTheSameK) { expect_host_shards_match_one_device("2..7"); }

TEST(FitSharded, HostShardsFitAWeightedKRangeAsOneDevice) { expect_host_shards_match_one_device("2..5", true); }

// Each bad --device exits 2 with the message `run` gives for it.
TEST(FitSharded, BadDevicesAreRefusedAsRunRefusesThem) {
  const std::string gpus_past_the_last = std::to_string(gpu_count()) + "," + std::to_string(gpu_count() + 1);
  for (const std::string device : {std::string("cpu:0"), std::string("0,0"), std::string("1,x"), gpus_past_the_last}) {
    SCOPED_TRACE("--device " + device);
    const auto run = run_mkbench_args({"run", "--variant", "cpu-openmp", "--dims", "2", "--points", "100", "--k",
                                       "3", "--iters", "3", "--device", device});
    const auto fit = run_mkbench_args({"fit", "--dataset", "blobs", "--dims", "2", "--points", "100", "--k", "3",
                                       "--quiet", "--device", device});
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_EQ(fit.exit_code, 2) << fit.output;
    const size_t at = run.output.find("mkbench: error: ");
    ASSERT_NE(at, std::string::npos) << run.output;
    const std::string message = run.output.substr(at, run.output.find('\n', at) - at);
    EXPECT_NE(fit.output.find(message), std::string::npos) << "fit: " << fit.output << "\nrun: " << message;
  }
}

// A centre far from every point receives none in the first step. One device relocates it
// (farthest); over shards each would pick its own point, so the fit stops with exit 3 and
// says how to go on; --empty keep runs over shards.
TEST(FitSharded, AStepThatEmptiesAClusterStopsAShardedFitWithExitThree) {
  TempFolder folder("fit_sharded_empty");
  const Dataset data = blob_points();
  const std::string file = folder.file("points.npy");
  save_npy(file, data);
  Dataset init;
  init.m = 3;
  init.n = kDims;
  init.values.assign(data.values.begin(), data.values.begin() + 3 * kDims);
  for (int j = 0; j < kDims; ++j) init.values[size_t(2 * kDims + j)] = 1e6f;
  const std::string init_file = folder.file("init.npy");
  save_npy(init_file, init);
  auto args = [&](const std::string& device, const std::string& empty) {
    std::vector<std::string> a = fit_args(file, "3", device, folder.file("out-" + device + "-" + empty));
    a.insert(a.end(), {"--init", "npy:" + init_file, "--empty", empty});
    return a;
  };
  const auto sharded = run_mkbench_args(args("cpu:2", "farthest"));
  EXPECT_EQ(sharded.exit_code, 3) << sharded.output;
  EXPECT_NE(sharded.output.find("fit --device cpu:2 (2 shards) stopped at a step that left a cluster empty"),
            std::string::npos)
      << sharded.output;
  EXPECT_NE(sharded.output.find("use --empty keep, or one device"), std::string::npos) << sharded.output;
  const auto single = run_mkbench_args(args("cpu", "farthest"));
  EXPECT_EQ(single.exit_code, 0) << single.output;
  const auto kept = run_mkbench_args(args("cpu:2", "keep"));
  EXPECT_EQ(kept.exit_code, 0) << kept.output;
}

std::pair<int, std::string> shell(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  char buffer[4096];
  size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// Two processes, one shard each (MPI_Allreduce); rank 0 writes the files.
TEST(FitSharded, MpirunRanksFitAKRangeAsOneDevice) {
  if (!mpi_built_in()) GTEST_SKIP() << "this build has no MPI (install libopenmpi-dev and reconfigure)";
  if (shell("command -v mpirun").first != 0) GTEST_SKIP() << "no mpirun on PATH (Debian: openmpi-bin)";
  TempFolder folder("fit_sharded_mpi");
  const Dataset data = blob_points();
  const std::string file = folder.file("points.npy");
  save_npy(file, data);
  const std::string one = folder.file("one"), ranks = folder.file("ranks");
  const auto single = run_mkbench_args(fit_args(file, "2..6", "cpu", one));
  ASSERT_EQ(single.exit_code, 0) << single.output;
  std::string command = "timeout 240 mpirun -np 2 --oversubscribe";
  if (::geteuid() == 0) command += " --allow-run-as-root";
  command += " " + shell_quote(MKBENCH_BINARY);
  for (const auto& arg : fit_args(file, "2..6", "cpu", ranks)) command += " " + shell_quote(arg);
  const auto [code, output] = shell(command);
  ASSERT_EQ(code, 0) << output;
  expect_same_fit(ranks, one, data, 0);
  const nlohmann::json parallel = read_fit_json(ranks).at("parallel");
  EXPECT_EQ(parallel.at("ranks"), 2);
  EXPECT_EQ(parallel.at("launch"), "mpirun");
  EXPECT_EQ(parallel.at("communicator"), "mpi");
}

}  // namespace
}  // namespace mk
