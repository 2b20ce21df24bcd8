// `mkbench fit --stream` (seed 001's streaming k-means, docs/streaming.md): quality against a
// full Lloyd fit with k-means++, the inertia against the centroids it wrote, determinism, bad
// input, SIGINT leaving no complete-looking output, and on a GPU the GPU path against the CPU.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/stream/stream.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "tests/generator_specs.hpp"
#include "tests/process_helpers.hpp"
#include "tests/seeding_test_support.hpp"

namespace mk {
namespace {

namespace fs = std::filesystem;
using testing_support::read_text;
using testing_support::run_mkbench_args;
using testing_support::start_mkbench;
using testing_support::TempFolder;

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_text(path)); }

// Σ over the points of the squared distance to the nearest of `centres`, in FP64 here.
template <class Centres>
double inertia_fp64(const Dataset& data, const Centres& centres, int k) {
  double total = 0;
  for (int64_t i = 0; i < data.m; ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (int c = 0; c < k; ++c) {
      double d2 = 0;
      for (int d = 0; d < data.n; ++d) {
        const double diff = double(data.at(i, d)) - double(centres[size_t(c) * data.n + d]);
        d2 += diff * diff;
      }
      best = std::min(best, d2);
    }
    total += best;
  }
  return total;
}

// Both sides best of 3 seedings (--n-init 3: for --stream, of the reduce phase on the weighted
// centres). One seeding left seed 2 in a local minimum at 1.30x while full Lloyd found the same
// optimum from every seed (docs/streaming.md has the numbers); 1.2 is the stated bound.
constexpr double kQualityFactor = 1.2;

TEST(StreamFit, InertiaWithinTheStatedFactorOfFullLloydOnBlobs) {
  TempFolder folder("stream_quality");
  const Dataset data = seeding_test::blobs(60000, 6, 12, 1.5, 11);
  save_npy(folder.file("x.npy"), data);
  for (int seed : {1, 2, 3}) {
    const std::string tag = std::to_string(seed);
    const auto full = run_mkbench_args({"fit", "--dataset", "npy:" + folder.file("x.npy"), "--k", "12", "--seed", tag,
                                        "--n-init", "3", "--variant", "cpu-openmp", "--quiet", "--silhouette-sample", "0", "--out",
                                        folder.file("full" + tag)});
    ASSERT_EQ(full.exit_code, 0) << full.output;
    const auto streamed = run_mkbench_args({"fit", "--stream", "--dataset", "npy:" + folder.file("x.npy"), "--k", "12",
                                            "--seed", tag, "--n-init", "3", "--variant", "cpu-openmp", "--quiet", "--out",
                                            folder.file("stream" + tag)});
    ASSERT_EQ(streamed.exit_code, 0) << streamed.output;
    const double lloyd = read_json(folder.file("full" + tag + "/fit.json"))["per_k"][0]["inertia"].get<double>();
    const auto doc = read_json(folder.file("stream" + tag + "/fit.json"));
    const double stream_inertia = doc["inertia"].get<double>();
    EXPECT_LE(stream_inertia, kQualityFactor * lloyd) << "seed " << seed;
    EXPECT_DOUBLE_EQ(doc["intermediate_weight_sum"].get<double>(), double(data.m));
    const Dataset centres = load_npy(folder.file("stream" + tag + "/centroids_k12.npy"));
    ASSERT_EQ(centres.m, 12);
    EXPECT_NEAR(inertia_fp64(data, centres.values, 12), stream_inertia, 1e-5 * stream_inertia);
    std::printf("blobs 60000 x 6, K=12, seed %d: streaming inertia %.6g, full Lloyd %.6g, factor %.4f\n", seed,
                stream_inertia, lloyd, stream_inertia / lloyd);
  }
}

TEST(StreamFit, SameSeedSameCentresAndAChunkSizeThatDoesNotDivideM) {
  const Dataset data = seeding_test::blobs(20011, 4, 5, 1.0, 3);
  stream::StreamSettings settings;
  settings.k = 5;
  settings.chunk_points = 997;
  const stream::StreamResult a = stream::stream_fit_cpu(data, settings);
  const stream::StreamResult b = stream::stream_fit_cpu(data, settings);
  EXPECT_EQ(a.centroids, b.centroids);
  EXPECT_EQ(a.intermediate_points, b.intermediate_points);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.chunks, 21);
  EXPECT_EQ(a.intermediate_weight_check, double(data.m));
  // The labels are the nearest final centre of every point.
  EXPECT_NEAR(inertia_fp64(data, a.centroids, 5), a.inertia, 1e-6 * a.inertia);
  settings.seed = 43;
  EXPECT_NE(stream::stream_fit_cpu(data, settings).intermediate_points, a.intermediate_points);
}

// A generator's rows generated where the pass reads them give what the same rows held give.
TEST(StreamFit, AGeneratorsRowsMadeOnDemandGiveTheHeldResult) {
  const GeneratorSpec spec = testing_support::generator_spec("blobs", 20011, 4, 8, 0.1);
  stream::StreamSettings settings;
  settings.k = 5;
  settings.chunk_points = 997;
  settings.keep_labels = true;
  const stream::StreamResult held = stream::stream_fit_cpu(generate(spec), settings);
  const stream::StreamResult made = stream::stream_fit_cpu(generate_on_demand(spec), settings);
  EXPECT_EQ(made.intermediate_points, held.intermediate_points);
  EXPECT_EQ(made.centroids, held.centroids);
  EXPECT_EQ(made.labels, held.labels);
  EXPECT_EQ(made.inertia, held.inertia);
}

TEST(StreamFit, TheCommandSaysWhereThePointsCameFrom) {
  TempFolder folder("stream_source");
  const std::vector<std::string> args{"fit", "--stream", "--dataset", "blobs", "--points", "30000", "--dims", "3",
                                      "--k", "4", "--variant", "cpu-openmp", "--quiet"};
  for (const auto& [extra, source] : std::vector<std::pair<std::string, std::string>>{
           {"", "generator"}, {"--hold-points", "host array"}}) {
    std::vector<std::string> run = args;
    if (!extra.empty()) run.push_back(extra);
    run.insert(run.end(), {"--out", folder.file(source)});
    const auto result = run_mkbench_args(run);
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(read_json(folder.file(source) + "/fit.json").at("points_source"), source);
  }
}

TEST(StreamFitGpu, AGeneratorsRowsMadeOnTheDeviceOrStagedGiveTheCpusCentres) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  for (const char* kind : {"uniform", "blobs"}) {
    const GeneratorSpec spec = testing_support::generator_spec(kind, 200003, 8, 4);
    stream::StreamSettings settings;
    settings.k = 12;
    const stream::StreamResult cpu = stream::stream_fit_cpu(generate(spec), settings);
    const stream::StreamResult gpu = stream::stream_fit_gpu(generate_on_demand(spec), settings, query_device(0));
    EXPECT_EQ(gpu.intermediate_points, cpu.intermediate_points) << kind;
    EXPECT_EQ(gpu.intermediate_weights, cpu.intermediate_weights) << kind;
  }
}

TEST(StreamFit, ChunkCentresAreChunkPointsAndWeightsCountTheirNearestPoints) {
  const Dataset data = seeding_test::blobs(3000, 3, 4, 1.0, 9);
  stream::StreamSettings settings;
  settings.k = 4;
  settings.chunk_points = 1000;
  const stream::StreamResult r = stream::stream_fit_cpu(data, settings);
  const int n = data.n;
  const int64_t slots = int64_t(settings.k) * r.per_round;
  ASSERT_EQ(r.intermediate, 3 * slots);
  for (int64_t chunk = 0; chunk < 3; ++chunk) {
    // Every centre is a point of its chunk; every chunk point counts for its nearest centre.
    std::vector<double> expected(size_t(slots), 0.0);
    for (int64_t i = chunk * 1000; i < (chunk + 1) * 1000; ++i) {
      double best = std::numeric_limits<double>::infinity();
      int64_t at = -1;
      for (int64_t s = 0; s < slots; ++s) {
        double d2 = 0;
        for (int d = 0; d < n; ++d) {
          const double diff = double(data.at(i, d)) - double(r.intermediate_points[size_t(chunk * slots + s) * n + d]);
          d2 += diff * diff;
        }
        if (d2 < best) {
          best = d2;
          at = s;
        }
      }
      expected[size_t(at)] += 1;
    }
    double total = 0;
    for (int64_t s = 0; s < slots; ++s) {
      total += r.intermediate_weights[size_t(chunk * slots + s)];
      bool found = false;
      for (int64_t i = chunk * 1000; i < (chunk + 1) * 1000 && !found; ++i)
        found = std::equal(data.row(i), data.row(i) + n, r.intermediate_points.data() + size_t(chunk * slots + s) * n);
      EXPECT_TRUE(found) << "chunk " << chunk << " slot " << s << " is not a point of its chunk";
    }
    EXPECT_EQ(total, 1000.0);
    // Duplicate draws make equal centres; their points go to the first, so compare by position.
    for (int64_t s = 0; s < slots; ++s)
      if (expected[size_t(s)] > 0) EXPECT_EQ(r.intermediate_weights[size_t(chunk * slots + s)], expected[size_t(s)]);
  }
}

TEST(StreamFit, BadInputExitsTwoWithAMessage) {
  TempFolder folder("stream_bad");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--k", "3..5"}, "fits one K"},
      {{"--k", "3", "--weights", "npy:" + folder.file("w.npy")}, "no --weights"},
      {{"--k", "3", "--init", "random"}, "does not apply"},
      {{"--k", "3", "--empty", "keep"}, "no --empty"},
      {{"--k", "3", "--silhouette-sample", "100"}, "no K-choice metrics"},
      {{"--k", "3", "--variant", "warp-centric"}, "auto"},
      {{"--k", "3", "--chunk-points", "10"}, "too small"},
      {{"--k", "3", "--chunk-points", "lots"}, "cannot parse count"},
  };
  for (const auto& [extra, expected] : cases) {
    std::vector<std::string> args = {"fit", "--stream", "--dataset", "blobs", "--points", "5000", "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto result = run_mkbench_args(args);
    EXPECT_EQ(result.exit_code, 2) << extra.back() << "\n" << result.output;
    EXPECT_NE(result.output.find(expected), std::string::npos) << result.output;
  }
}

// SIGINT in the middle of the chunks: the process ends by the signal and --out holds no
// fit.json (nor the arrays it would vouch for). The data is large enough to keep a 2-core
// machine in the chunk phase for seconds; the signal goes as soon as the data is loaded.
TEST(StreamFit, SigintLeavesNoCompleteLookingOutput) {
  TempFolder folder("stream_sigint");
  const std::string out = folder.file("out");
  const std::string log = folder.file("log");
  const pid_t pid = start_mkbench({"fit", "--stream", "--dataset", "uniform", "--points", "4M", "--k", "64",
                                   "--variant", "cpu-openmp", "--out", out},
                                  log);
  ASSERT_GT(pid, 0);
  int status = 0;
  bool signalled = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (!signalled && read_text(log).find("fit --stream:") != std::string::npos) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // into the chunks
      ::kill(pid, SIGINT);
      signalled = true;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      FAIL() << "the streaming fit neither started nor ended in 120 s: " << read_text(log);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(signalled) << "it ended before the signal: " << read_text(log);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << read_text(log);
  EXPECT_FALSE(fs::exists(fs::path(out) / "fit.json"));
  EXPECT_FALSE(fs::exists(fs::path(out) / "centroids_k64.npy"));
}

TEST(StreamFitGpu, ChoosesTheSameIntermediateCentresAsTheCpu) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  for (const auto& [k, chunk] : std::vector<std::pair<int, int64_t>>{{12, 0}, {5, 997}, {64, 50000}}) {
    const Dataset data = seeding_test::blobs(200003, 8, 16, 1.5, 21);
    stream::StreamSettings settings;
    settings.k = k;
    settings.chunk_points = chunk;
    const stream::StreamResult cpu = stream::stream_fit_cpu(data, settings);
    const stream::StreamResult gpu = stream::stream_fit_gpu(data, settings, query_device(0));
    ASSERT_EQ(gpu.intermediate, cpu.intermediate);
    EXPECT_EQ(gpu.intermediate_points, cpu.intermediate_points) << "K=" << k;
    EXPECT_EQ(gpu.intermediate_weights, cpu.intermediate_weights) << "K=" << k;
    // The Lloyd sums are FP64 in other orders: the centres agree to rounding.
    ASSERT_EQ(gpu.centroids.size(), cpu.centroids.size());
    for (size_t e = 0; e < cpu.centroids.size(); ++e)
      EXPECT_NEAR(gpu.centroids[e], cpu.centroids[e], 1e-4f * (1.0f + std::fabs(cpu.centroids[e]))) << "K=" << k;
    EXPECT_NEAR(gpu.inertia, cpu.inertia, 1e-5 * cpu.inertia) << "K=" << k;
    EXPECT_NEAR(gpu.inertia, inertia_fp64(data, gpu.centroids, k), 1e-5 * gpu.inertia) << "K=" << k;
    std::printf("K=%d: CPU %.6g, GPU %.6g, Lloyd steps %d / %d\n", k, cpu.inertia, gpu.inertia, cpu.lloyd_iterations,
                gpu.lloyd_iterations);
  }
}

}  // namespace
}  // namespace mk
