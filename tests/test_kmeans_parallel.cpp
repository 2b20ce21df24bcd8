// k-means|| (apps/seeding/kmeans_parallel.hpp) on the CPU: its candidates' weights against an
// FP64 nearest-candidate count computed here, determinism across thread counts, the size of its
// oversampling, the K-range prefixes, coinciding points and bad input. Its quality against
// scikit-learn's k-means++ is in tests/test_seeding_quality.cpp.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/seeding/kmeans_parallel.hpp"
#include "apps/seeding/seeding.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "seeding_test_support.hpp"
#include "process_helpers.hpp"

namespace mk {
namespace {

using seeding_test::blobs;
using seeding_test::uniform;

SeedingOptions parallel(uint64_t seed, int rounds = 5, double oversampling = 0) {
  SeedingOptions options;
  options.method = "k-means||";
  options.seed = seed;
  options.parallel_rounds = rounds;
  options.oversampling = oversampling;
  return options;
}

TEST(KmeansParallel, WeightsCountThePointsNearestEachCandidate) {
  const Dataset data = blobs(3000, 3, 7, 1.0, 11);
  const seeding::KmeansParallelRun run = seeding::kmeans_parallel_cpu(data, 7, 5);
  ASSERT_EQ(run.candidate_weights.size(), run.candidates.size());
  std::vector<int64_t> expected(run.candidates.size(), 0);
  for (int64_t i = 0; i < data.m; ++i) {
    double best = std::numeric_limits<double>::infinity();
    size_t nearest = 0;
    for (size_t c = 0; c < run.candidates.size(); ++c) {
      double d2 = 0;
      for (int d = 0; d < data.n; ++d) {
        const double diff = double(data.at(i, d)) - double(data.at(run.candidates[c], d));
        d2 += diff * diff;
      }
      if (d2 < best) best = d2, nearest = c;
    }
    ++expected[nearest];
  }
  EXPECT_EQ(run.candidate_weights, expected);
  // The centres are candidates, distinct (the points are), kmax of them.
  ASSERT_EQ(run.chosen.size(), 7u);
  const std::set<int64_t> candidates(run.candidates.begin(), run.candidates.end());
  EXPECT_EQ(candidates.size(), run.candidates.size()) << "a point is drawn once at most";
  for (int64_t c : run.chosen) EXPECT_TRUE(candidates.count(c)) << c;
  EXPECT_EQ(std::set<int64_t>(run.chosen.begin(), run.chosen.end()).size(), run.chosen.size());
  EXPECT_EQ(run.rounds, 5);
}

TEST(KmeansParallel, SameSeedSameCentresWhateverTheThreadCount) {
  const Dataset data = blobs(20000, 4, 9, 1.5, 3);
  const seeding::KmeansParallelRun many = seeding::kmeans_parallel_cpu(data, 12, 77);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const seeding::KmeansParallelRun one = seeding::kmeans_parallel_cpu(data, 12, 77);
  omp_set_num_threads(threads);
  EXPECT_EQ(one.candidates, many.candidates);
  EXPECT_EQ(one.candidate_weights, many.candidate_weights);
  EXPECT_EQ(one.chosen, many.chosen);
  EXPECT_NE(seeding::kmeans_parallel_cpu(data, 12, 78).candidates, many.candidates);
}

// Each round draws point x with probability min(1, ℓ·D²(x)/Σ D²), so at most ℓ candidates are
// expected a round; with ℓ far above the few clusters, most rounds draw close to ℓ.
TEST(KmeansParallel, EachRoundDrawsAboutEllCandidates) {
  const Dataset data = blobs(20000, 2, 5, 3.0, 9);
  seeding::KmeansParallelOptions options;
  options.rounds = 4;
  options.oversampling = 50;
  const seeding::KmeansParallelRun run = seeding::kmeans_parallel_cpu(data, 5, 21, options);
  const double most = 1 + options.rounds * options.oversampling;
  EXPECT_LE(double(run.candidates.size()), most + 4 * std::sqrt(most)) << run.candidates.size();
  EXPECT_GE(double(run.candidates.size()), 0.5 * most) << run.candidates.size();
  // The default ℓ is 2·kmax: about 2·kmax·rounds candidates.
  const seeding::KmeansParallelRun defaults = seeding::kmeans_parallel_cpu(data, 5, 21);
  EXPECT_LE(double(defaults.candidates.size()), 1 + 5 * 10 + 4 * std::sqrt(51.0));
  EXPECT_GE(defaults.candidates.size(), 5u);
}

// An ℓ far above the rows draws every row in the first round, once: the candidates are the rows.
TEST(KmeansParallel, AnOversamplingAboveTheRowsDrawsEveryRowOnce) {
  const Dataset data = blobs(500, 3, 4, 1.0, 5);
  seeding::KmeansParallelOptions options;
  options.rounds = 2;
  options.oversampling = 1e300;
  const seeding::KmeansParallelRun run = seeding::kmeans_parallel_cpu(data, 6, 3, options);
  EXPECT_EQ(run.candidates.size(), size_t(data.m));
  EXPECT_EQ(std::set<int64_t>(run.candidates.begin(), run.candidates.end()).size(), size_t(data.m));
  for (int64_t w : run.candidate_weights) EXPECT_EQ(w, 1);
  EXPECT_EQ(run.chosen.size(), 6u);
}

TEST(KmeansParallel, KRangeBlocksArePrefixesOfOneSequence) {
  const Dataset data = blobs(4000, 4, 9, 1.5, 21);
  const DeviceInfo host = query_host_cpu();
  const KRange range{3, 9};
  const SeedingResult all = seed_centroids(data, range, parallel(5), host);
  ASSERT_EQ(all.packed.size(), size_t(range.sum()) * 4);
  const float* longest = all.packed.data() + size_t(range.slot_offset(9)) * 4;
  for (int k = range.kmin; k <= range.kmax; ++k) {
    const float* block = all.packed.data() + size_t(range.slot_offset(k)) * 4;
    for (int v = 0; v < k * 4; ++v) ASSERT_EQ(block[v], longest[v]) << "K=" << k;
  }
  EXPECT_EQ(all.method, "k-means||");
  EXPECT_EQ(all.path, "cpu-openmp");
  EXPECT_EQ(all.rows_seen, data.m);
  // Every centre is a row of the data.
  for (int c = 0; c < 9; ++c) {
    bool found = false;
    for (int64_t i = 0; i < data.m && !found; ++i)
      found = std::equal(longest + c * 4, longest + c * 4 + 4, data.row(i));
    EXPECT_TRUE(found) << "centre " << c;
  }
}

TEST(KmeansParallel, CoincidingPointsStillGiveKCentres) {
  // Three distinct points, ten copies each, K=5: the rounds find the three (a copy of a
  // candidate is never drawn), the first other rows fill in, and the centres are data rows.
  Dataset three;
  three.n = 2;
  for (int copy = 0; copy < 10; ++copy)
    for (float x : {0.0f, 4.0f, 9.0f}) three.values.insert(three.values.end(), {x, 1.0f});
  three.m = 30;
  three.identity = {{"kind", "test"}};
  const seeding::KmeansParallelRun run = seeding::kmeans_parallel_cpu(three, 5, 2);
  ASSERT_EQ(run.chosen.size(), 5u);
  std::set<float> seen;
  for (int64_t c : run.chosen) seen.insert(three.at(c, 0));
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_GE(run.candidates.size(), 5u);
  int64_t total = 0;
  for (int64_t w : run.candidate_weights) total += w;
  EXPECT_EQ(total, three.m);
}

TEST(KmeansParallel, BadRequestsAreInputErrors) {
  const Dataset data = blobs(500, 2, 3, 1.0, 1);
  const DeviceInfo host = query_host_cpu();
  EXPECT_THROW(seed_centroids(data, KRange{3, 3}, parallel(1, 0), host), InputError);
  EXPECT_THROW(seed_centroids(data, KRange{3, 3}, parallel(1, 5, -1), host), InputError);
  EXPECT_THROW(seed_centroids(data, KRange{3, 3}, parallel(1, 5, std::nan("")), host), InputError);
  EXPECT_THROW(seed_centroids(data, KRange{501, 501}, parallel(1), host), InputError);
  Dataset huge = data;  // squared distances beyond float32, as k-means++ refuses them
  for (float& v : huge.values) v *= 1e20f;
  EXPECT_THROW(seed_centroids(huge, KRange{3, 3}, parallel(1), host), InputError);
  SeedingOptions weighted = parallel(1);
  const std::vector<float> weights(size_t(data.m), 1.0f);
  weighted.weights = &weights;
  try {
    seed_centroids(data, KRange{3, 3}, weighted, host);
    ADD_FAILURE() << "k-means|| took sample weights";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no sample weights"), std::string::npos) << e.what();
  }
}

TEST(KmeansParallel, FitAndSeedCommandsTakeIt) {
  testing_support::TempFolder folder("kmeans_parallel");
  const auto fit = testing_support::run_mkbench_args(
      {"fit", "--dataset", "blobs:centers=4", "--dims", "3", "--points", "4000", "--k", "2..6", "--init", "k-means||",
       "--variant", "cpu-openmp", "--quiet", "--silhouette-sample", "500", "--out", folder.file("fit")});
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  const nlohmann::json document = nlohmann::json::parse(testing_support::read_text(folder.file("fit/fit.json")));
  EXPECT_EQ(document.at("seeding").at("method"), "k-means||");
  EXPECT_EQ(document.at("seeding").at("path"), "cpu-openmp");

  const auto seed = testing_support::run_mkbench_args({"seed", "--init", "k-means||", "--k", "8", "--dims", "4",
                                                       "--points", "20000", "--runs", "1", "--rounds", "3",
                                                       "--cpu", "--out", folder.file("seed.json")});
  ASSERT_EQ(seed.exit_code, 0) << seed.output;
  EXPECT_NE(seed.output.find("(cpu-openmp"), std::string::npos) << seed.output;
  const nlohmann::json record = nlohmann::json::parse(testing_support::read_text(folder.file("seed.json")));
  EXPECT_EQ(record.at("rounds"), 3);

  Dataset ones;  // 4000 weights of 1, a (4000, 1) float32 file
  ones.m = 4000;
  ones.n = 1;
  ones.values.assign(4000, 1.0f);
  save_npy(folder.file("ones.npy"), ones);
  const auto weighted = testing_support::run_mkbench_args(
      {"fit", "--dataset", "blobs:centers=4", "--dims", "3", "--points", "4000", "--k", "4", "--init", "k-means||",
       "--variant", "cpu-openmp", "--quiet", "--weights", "npy:" + folder.file("ones.npy")});
  EXPECT_EQ(weighted.exit_code, kExitBadInput) << weighted.output;
  EXPECT_NE(weighted.output.find("no sample weights"), std::string::npos) << weighted.output;
}

// ------------------------------------------------------------ GPU path == CPU path

class KmeansParallelGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
    device_ = query_device(0);
  }
  DeviceInfo device_;
};

// The same float D², FP64 potentials in the same blocks, the same draws: the same candidates in
// the same order, the same weights, the same centres.
TEST_F(KmeansParallelGpu, SameCandidatesWeightsAndCentresAsTheCpuPath) {
  struct Case {
    Dataset data;
    int kmax;
    seeding::KmeansParallelOptions options;
  };
  seeding::KmeansParallelOptions defaults;
  seeding::KmeansParallelOptions three_rounds;
  three_rounds.rounds = 3;
  three_rounds.oversampling = 300;  // several candidate tiles a round, and a grown buffer
  seeding::KmeansParallelOptions every_row;
  every_row.rounds = 2;
  every_row.oversampling = 1e300;  // the first round draws every row: a buffer of all of them
  Dataset three;  // three distinct points, ten copies each: the fill-in
  three.n = 2;
  for (int copy = 0; copy < 10; ++copy)
    for (float x : {0.0f, 4.0f, 9.0f}) three.values.insert(three.values.end(), {x, 1.0f});
  three.m = 30;
  three.identity = {{"kind", "test"}};
  const Case cases[] = {
      {blobs(5000, 8, 12, 1.0, 1), 20, defaults},        // float4 rows, two points a thread
      {blobs(3000, 5, 7, 2.0, 2), 10, defaults},         // any-N pass
      {uniform(20000, 32, 3), 50, defaults},             // K=1024's width
      {uniform(30001, 4, 4), 16, three_rounds},          // four points a thread, a last block cut short
      {uniform(4000, 100, 5), 12, defaults},             // wider than the float4 pass
      {uniform(9000, 64, 6), 24, defaults},              // the widest float4 pass
      {three, 5, defaults},                              // coinciding points, filled in
      {blobs(2000, 4, 3, 1.0, 8), 7, every_row},         // every row a candidate
  };
  for (const Case& c : cases) {
    const seeding::KmeansParallelRun cpu = seeding::kmeans_parallel_cpu(c.data, c.kmax, 41, c.options);
    const seeding::KmeansParallelRun gpu = seeding::kmeans_parallel_gpu(c.data, c.kmax, 41, c.options, device_);
    const std::string shape = std::to_string(c.data.m) + " x " + std::to_string(c.data.n) + " K=" +
                              std::to_string(c.kmax);
    EXPECT_EQ(gpu.path, "gpu");
    EXPECT_EQ(gpu.rounds, cpu.rounds) << shape;
    EXPECT_EQ(gpu.candidates, cpu.candidates) << shape;
    EXPECT_EQ(gpu.candidate_weights, cpu.candidate_weights) << shape;
    EXPECT_EQ(gpu.chosen, cpu.chosen) << shape;
  }
}

TEST_F(KmeansParallelGpu, SeedCentroidsRunsItOnTheGpu) {
  const Dataset data = blobs(40000, 16, 20, 1.0, 7);
  const KRange range{5, 25};
  const SeedingResult gpu = seed_centroids(data, range, parallel(3), device_);
  const SeedingResult cpu = seed_centroids(data, range, parallel(3), query_host_cpu());
  EXPECT_EQ(gpu.path, "gpu");
  EXPECT_EQ(cpu.path, "cpu-openmp");
  EXPECT_EQ(gpu.packed, cpu.packed);
  EXPECT_GT(gpu.upload_seconds, 0.0);
  Dataset huge = blobs(1000, 4, 3, 1.0, 1);
  for (float& v : huge.values) v *= 1e20f;
  EXPECT_THROW(seed_centroids(huge, KRange{3, 3}, parallel(1), device_), InputError);
}

}  // namespace
}  // namespace mk
