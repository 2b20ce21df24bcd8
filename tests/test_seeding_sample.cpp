// k-means++ from a sample of the rows (apps/seeding/seeding.hpp): the stratified rows, seeding
// from them against seeding a Dataset of just those rows, `fit --init-sample`, and on a GPU
// the automatic sample when the data exceed what the GPU holds (its free memory faked by
// MKBENCH_FAKE_GPU_FREE_BYTES), and the metric pass that then stays on the host.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/fit/metric_passes.hpp"
#include "apps/seeding/kmeanspp.hpp"
#include "apps/seeding/seeding.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "harness/memory_plan.hpp"
#include "process_helpers.hpp"
#include "seeding_test_support.hpp"

namespace mk {
namespace {

namespace fs = std::filesystem;
using seeding_test::blobs;
using testing_support::ProcessResult;
using testing_support::run_mkbench_args;

SeedingOptions kmeanspp(uint64_t seed, int64_t sample_rows = 0) {
  SeedingOptions options;
  options.method = "k-means++";
  options.seed = seed;
  options.sample_rows = sample_rows;
  return options;
}

// The rows `rows` of `data` as a Dataset, copied here row by row.
Dataset rows_of(const Dataset& data, const std::vector<int64_t>& rows) {
  Dataset out;
  out.n = data.n;
  out.m = int64_t(rows.size());
  for (int64_t row : rows) out.values.insert(out.values.end(), data.row(row), data.row(row) + data.n);
  return out;
}

// ------------------------------------------------------------ the stratified rows

TEST(StratifiedRows, OneDistinctRowFromEachEqualStratumInAscendingOrder) {
  for (int64_t m : {10, 1000, 1003, 99991}) {
    for (int64_t count : {int64_t(1), int64_t(7), m / 3, m - 1}) {
      const std::vector<int64_t> rows = stratified_rows(m, count, 5);
      ASSERT_EQ(int64_t(rows.size()), count) << m;
      for (int64_t j = 0; j < count; ++j) {
        // Stratum j by the definition, computed here in FP64 (exact for these sizes).
        const auto first = int64_t(double(j) * double(m) / double(count));
        const auto end = int64_t(double(j + 1) * double(m) / double(count));
        EXPECT_GE(rows[size_t(j)], first) << m << " " << count << " " << j;
        EXPECT_LT(rows[size_t(j)], end) << m << " " << count << " " << j;
      }
    }
  }
}

TEST(StratifiedRows, EveryRowWhenTheSampleIsAsLargeAsTheData) {
  EXPECT_EQ(stratified_rows(4, 4, 1), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(stratified_rows(3, 10, 1), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_TRUE(stratified_rows(0, 10, 1).empty());
}

TEST(StratifiedRows, SameSeedSameRowsAndEveryRowEquallyLikely) {
  EXPECT_EQ(stratified_rows(5000, 300, 9), stratified_rows(5000, 300, 9));
  EXPECT_NE(stratified_rows(5000, 300, 9), stratified_rows(5000, 300, 10));
  // 100 rows in 10 strata of 10: over 4000 seeds each row is drawn 400 times on average, with
  // a binomial standard deviation of 19; 6 of them bound every row's count (p < 1e-7 each).
  std::vector<int> drawn(100, 0);
  for (uint64_t seed = 0; seed < 4000; ++seed)
    for (int64_t row : stratified_rows(100, 10, seed)) ++drawn[size_t(row)];
  for (int row = 0; row < 100; ++row) EXPECT_NEAR(drawn[size_t(row)], 400, 6 * 19) << "row " << row;
}

// ------------------------------------------------------------ seeding from the sample

TEST(SeedCentroidsSample, IsKmeansppOnADatasetOfJustTheSampledRows) {
  const Dataset data = blobs(20000, 6, 9, 1.0, 3);
  const KRange range{3, 9};
  const SeedingResult sampled = seed_centroids(data, range, kmeanspp(21, 700), query_host_cpu());
  const Dataset just = rows_of(data, stratified_rows(data.m, 700, 21));
  const SeedingResult reference = seed_centroids(just, range, kmeanspp(21), query_host_cpu());
  EXPECT_EQ(sampled.packed, reference.packed);
  EXPECT_EQ(sampled.rows_seen, 700);
  EXPECT_EQ(sampled.sample_reason, "asked for");
  EXPECT_TRUE(reference.sample_reason.empty());
}

TEST(SeedCentroidsSample, ASampleAsLargeAsTheDataIsNoSample) {
  const Dataset data = blobs(3000, 4, 5, 1.0, 4);
  const SeedingResult whole = seed_centroids(data, KRange{5, 5}, kmeanspp(2), query_host_cpu());
  const SeedingResult asked = seed_centroids(data, KRange{5, 5}, kmeanspp(2, 3000), query_host_cpu());
  EXPECT_EQ(whole.packed, asked.packed);
  EXPECT_TRUE(asked.sample_reason.empty());
  EXPECT_EQ(asked.rows_seen, 3000);
}

TEST(SeedCentroidsSample, ASampleSmallerThanKIsAnInputError) {
  const Dataset data = blobs(3000, 4, 5, 1.0, 4);
  EXPECT_THROW(seed_centroids(data, KRange{2, 8}, kmeanspp(2, 7), query_host_cpu()), InputError);
  EXPECT_THROW(seed_centroids(data, KRange{2, 8}, kmeanspp(2, -1), query_host_cpu()), InputError);
}

// ------------------------------------------------------------ fit --init-sample

class FitInitSample : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mkbench_init_sample_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FitInitSample, RecordsTheSampleAndSeedsAsTheLibraryDoes) {
  const ProcessResult result =
      run_mkbench_args({"fit", "--dataset", "blobs:centers=4", "--dims", "4", "--points", "20000", "--k", "4",
                        "--variant", "cpu-openmp", "--device", "cpu", "--init-sample", "500", "--max-iter", "1",
                        "--seed", "42", "--out", dir_.string(), "--quiet"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("seeding: k-means++ from a stratified sample of 500 rows (asked for)"),
            std::string::npos)
      << result.output;
  std::ifstream in(dir_ / "fit.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["seeding"]["sample"]["rows"], 500);
  EXPECT_EQ(doc["seeding"]["sample"]["reason"], "asked for");
}

TEST_F(FitInitSample, BadValuesExitWithCodeTwo) {
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--init-sample", "0"}, {"--init-sample", "many"},
        {"--init", "random", "--init-sample", "100"}}) {
    std::vector<std::string> arguments{"fit",     "--dataset", "blobs:centers=4", "--dims", "4", "--points",
                                       "2000",    "--k",       "4",               "--variant", "cpu-openmp",
                                       "--device", "cpu",      "--quiet"};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    const ProcessResult result = run_mkbench_args(arguments);
    EXPECT_EQ(result.exit_code, 2) << extra.back() << ": " << result.output;
    EXPECT_NE(result.output.find("--init-sample"), std::string::npos) << result.output;
  }
}

// ------------------------------------------------------------ on a GPU: the automatic sample

// Sets MKBENCH_FAKE_GPU_FREE_BYTES for one scope (the planner's reading of the free memory).
class FakeFreeMemory {
 public:
  explicit FakeFreeMemory(int64_t bytes) { ::setenv("MKBENCH_FAKE_GPU_FREE_BYTES", std::to_string(bytes).c_str(), 1); }
  ~FakeFreeMemory() { ::unsetenv("MKBENCH_FAKE_GPU_FREE_BYTES"); }
};

class SeedingSampleGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
    device_ = query_device(0);
  }
  DeviceInfo device_;
};

TEST_F(SeedingSampleGpu, DataBeyondTheGpuSeedFromTheLargestSampleItHolds) {
  const Dataset data = blobs(50000, 8, 12, 1.0, 6);
  const KRange range{4, 12};
  // Room for 1000 rows of 8 floats and their D² above the planner's reserve.
  const FakeFreeMemory fake(kGpuReserveBytes + 1000 * 9 * 4);
  EXPECT_EQ(seeding_rows_that_fit(8, device_), 1000);
  const SeedingResult gpu = seed_centroids(data, range, kmeanspp(13), device_);
  EXPECT_EQ(gpu.rows_seen, 1000);
  EXPECT_NE(gpu.sample_reason.find("exceed"), std::string::npos) << gpu.sample_reason;
  // The CPU path seeds the same rows to the same centres (the paths agree by design).
  const Dataset just = rows_of(data, stratified_rows(data.m, 1000, 13));
  EXPECT_EQ(gpu.packed, seed_centroids(just, range, kmeanspp(13), query_host_cpu()).packed);
}

TEST_F(SeedingSampleGpu, DataTheGpuHoldsSeedFromEveryRow) {
  const Dataset data = blobs(50000, 8, 12, 1.0, 6);
  const SeedingResult gpu = seed_centroids(data, KRange{4, 12}, kmeanspp(13), device_);
  EXPECT_EQ(gpu.rows_seen, data.m);
  EXPECT_TRUE(gpu.sample_reason.empty());
  EXPECT_EQ(gpu.packed, seed_centroids(data, KRange{4, 12}, kmeanspp(13), query_host_cpu()).packed);
}

TEST_F(SeedingSampleGpu, TheDistanceSumsPassStaysOnTheHostWhenItsCopyDoesNotFit) {
  // The pass runs on the current CUDA device, 0 in this process.
  // 1000 rows of 8 floats and 2 label arrays: 40 000 bytes over the reserve.
  {
    const FakeFreeMemory fake(kGpuReserveBytes + 40000);
    EXPECT_TRUE(distance_sums_fit_gpu(1000, 8, 2));
    EXPECT_FALSE(distance_sums_fit_gpu(1001, 8, 2));
  }
  EXPECT_TRUE(distance_sums_fit_gpu(1000000, 8, 2));
}

}  // namespace
}  // namespace mk
