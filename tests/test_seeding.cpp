// Seeding (apps/seeding): the draws, the integer weights, greedy k-means++ against an FP64
// reference written here from scikit-learn's algorithm, the K-range prefix property,
// reproducibility, the file and fallback methods, bad input, `mkbench seed`, and on a GPU the
// GPU path against the CPU path (the same centres, by design). Quality against scikit-learn
// itself is test_seeding_quality.cpp.
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include "apps/seeding/kmeanspp.hpp"
#include "apps/seeding/kmeanspp_math.hpp"
#include "apps/seeding/seeding.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "datasets/counter_rng.hpp"
#include "datasets/dataset.hpp"
#include "seeding_test_support.hpp"

namespace mk {
namespace {

namespace fs = std::filesystem;
using seeding_test::blobs;
using seeding_test::uniform;

Dataset from_rows(const std::vector<std::vector<float>>& rows) {
  Dataset d;
  d.n = int(rows[0].size());
  for (const auto& row : rows) d.values.insert(d.values.end(), row.begin(), row.end());
  d.m = int64_t(rows.size());
  d.identity = {{"kind", "test"}};
  return d;
}

SeedingOptions kmeanspp(uint64_t seed, int candidates = 0) {
  SeedingOptions options;
  options.method = "k-means++";
  options.seed = seed;
  options.candidates = candidates;
  return options;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "mkbench-seeding-XXXXXX").string();
    if (mkdtemp(pattern.data())) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  bool ok() const { return !path_.empty(); }

 private:
  std::string path_;
};

// ------------------------------------------------------------ draws and weights

TEST(SeedingMath, DeviceCopyOfTheCounterRngEqualsCounterRng) {
  for (uint64_t seed : {uint64_t(0), uint64_t(42), uint64_t(0x8000000000000005ULL)}) {
    const CounterRng reference(seed, RandomStream::Seeding);
    const seeding::Draws draws = seeding::make_draws(seed);
    for (uint64_t index = 0; index < 2000; ++index) {
      ASSERT_EQ(draws.bits(index), reference.bits(index)) << "seed " << seed << " index " << index;
      const uint64_t bound = (index * 0x9e3779b97f4a7c15ULL) >> (index % 64);
      if (bound > 0) ASSERT_EQ(draws.below(index, bound), reference.below(index, bound));
    }
  }
}

TEST(SeedingMath, WeightIsTheFloorOfTheScaledDistanceAndMWeightsSumBelow2To63) {
  const float largest_values[] = {std::numeric_limits<float>::denorm_min(), 1e-30f, 0.5f, 1.0f, 3.0f, 12345.6f,
                                  1e30f, FLT_MAX};
  for (int64_t m : {int64_t(1), int64_t(2), int64_t(1000), int64_t(1) << 21, int64_t(3000000000)}) {
    for (float largest : largest_values) {
      const seeding::Quantizer q = seeding::make_quantizer(largest, m);
      int log2_m = 0;
      while ((int64_t(1) << log2_m) < m) ++log2_m;
      const unsigned __int128 top = q(largest);
      EXPECT_LT(top * unsigned(m), (unsigned __int128)1 << 63) << "m " << m << " largest " << largest;
      // The range is used: the largest weight is at least half the bound.
      EXPECT_GE(top, (unsigned __int128)1 << (62 - log2_m)) << "m " << m << " largest " << largest;
      for (float fraction : {1.0f, 0.75f, 1.0f / 3.0f, 1e-6f, 1e-12f, 0.0f}) {
        const float d2 = largest * fraction;
        const long double exact = std::floor((long double)d2 * (long double)q.scale_hi * (long double)q.scale_lo);
        EXPECT_EQ(q(d2), uint64_t(exact)) << "d2 " << d2 << " m " << m;
      }
    }
  }
  const seeding::Quantizer zero = seeding::make_quantizer(0.0f, 10);
  EXPECT_EQ(zero(0.0f), 0u);
}

TEST(SeedingMath, CandidateCountFollowsScikitLearn) {
  // scikit-learn: n_local_trials = 2 + int(np.log(n_clusters)).
  EXPECT_EQ(seeding::candidate_count(1, 0), 2);
  EXPECT_EQ(seeding::candidate_count(2, 0), 2);
  EXPECT_EQ(seeding::candidate_count(3, 0), 3);
  EXPECT_EQ(seeding::candidate_count(64, 0), 6);
  EXPECT_EQ(seeding::candidate_count(1024, 0), 8);
  EXPECT_EQ(seeding::candidate_count(1097, 0), 9);
  EXPECT_EQ(seeding::candidate_count(1024, 1), 1);
  EXPECT_THROW(seeding::candidate_count(10, seeding::kMaxCandidates + 1), InputError);
  EXPECT_THROW(seeding::candidate_count(10, -1), InputError);
}

// ------------------------------------------------------------ k-means++ against a reference

// scikit-learn's _kmeans_plusplus in FP64, fed the same draws: candidate b of step j is the
// first point whose FP64 prefix of D² exceeds u·ΣD², u = bits/2^64 of draw j·L+b; the candidate
// with the lowest FP64 potential wins (the lowest number on a tie).
std::vector<int64_t> reference_kmeanspp(const Dataset& data, int kmax, int candidates, uint64_t seed) {
  const CounterRng rng(seed, RandomStream::Seeding);
  auto d2_to = [&](int64_t i, int64_t c) {
    double sum = 0;
    for (int d = 0; d < data.n; ++d) {
      const double diff = double(data.at(i, d)) - double(data.at(c, d));
      sum += diff * diff;
    }
    return sum;
  };
  std::vector<int64_t> chosen = {int64_t(rng.below(0, uint64_t(data.m)))};
  std::vector<double> d2(size_t(data.m));
  for (int64_t i = 0; i < data.m; ++i) d2[size_t(i)] = d2_to(i, chosen[0]);
  for (int step = 1; step < kmax; ++step) {
    std::vector<double> prefix(size_t(data.m));
    double total = 0;
    for (int64_t i = 0; i < data.m; ++i) prefix[size_t(i)] = total += d2[size_t(i)];
    int64_t best = -1;
    double best_potential = 0;
    for (int b = 0; b < candidates; ++b) {
      const uint64_t index = 1 + uint64_t(step - 1) * uint64_t(candidates) + uint64_t(b);
      const double target = std::ldexp(double(rng.bits(index)), -64) * total;
      const int64_t candidate = std::upper_bound(prefix.begin(), prefix.end(), target) - prefix.begin();
      double potential = 0;
      for (int64_t i = 0; i < data.m; ++i) potential += std::min(d2[size_t(i)], d2_to(i, candidate));
      if (best < 0 || potential < best_potential) {
        best = candidate;
        best_potential = potential;
      }
    }
    chosen.push_back(best);
    for (int64_t i = 0; i < data.m; ++i) d2[size_t(i)] = std::min(d2[size_t(i)], d2_to(i, best));
  }
  return chosen;
}

TEST(KmeansppCpu, ChoosesWhatAnFp64ReferenceOfTheSameDrawsChooses) {
  struct Case {
    Dataset data;
    int kmax;
    int candidates;
    uint64_t seed;
  };
  const Case cases[] = {{blobs(3000, 5, 10, 1.0, 3), 25, seeding::candidate_count(25, 0), 11},
                        {uniform(2000, 3, 4), 40, 1, 12},
                        {uniform(2000, 3, 4), 40, 5, 13},
                        {blobs(9000, 2, 6, 2.5, 5), 12, seeding::candidate_count(12, 0), 14}};
  for (const Case& c : cases) {
    const std::vector<int64_t> expected = reference_kmeanspp(c.data, c.kmax, c.candidates, c.seed);
    EXPECT_EQ(seeding::kmeanspp_cpu(c.data, c.kmax, c.candidates, c.seed).chosen, expected)
        << c.data.m << " x " << c.data.n << " K=" << c.kmax << " L=" << c.candidates;
  }
}

TEST(KmeansppCpu, PlainKmeansppDrawsTheSecondCentreWithProbabilityProportionalToD2) {
  // Five points on a line; the first centre is uniform, the second has P(b | a) = d²(a,b)/Σ.
  const std::vector<float> line = {0.0f, 1.0f, 3.0f, 6.0f, 10.0f};
  Dataset data;
  data.n = 1;
  data.m = 5;
  data.values.assign(line.begin(), line.end());
  const int trials = 20000;
  double observed[5][5] = {};
  for (int seed = 0; seed < trials; ++seed) {
    const std::vector<int64_t> chosen = seeding::kmeanspp_cpu(data, 2, 1, uint64_t(seed)).chosen;
    observed[chosen[0]][chosen[1]] += 1;
  }
  double chi2 = 0;
  for (int a = 0; a < 5; ++a) {
    double total = 0;
    for (int b = 0; b < 5; ++b) total += double(line[b] - line[a]) * double(line[b] - line[a]);
    for (int b = 0; b < 5; ++b) {
      const double p = 0.2 * double(line[b] - line[a]) * double(line[b] - line[a]) / total;
      if (p == 0) {
        EXPECT_EQ(observed[a][b], 0) << "drew the first centre again";
        continue;
      }
      const double expected = p * trials;
      chi2 += (observed[a][b] - expected) * (observed[a][b] - expected) / expected;
    }
  }
  // 20 cells, 19 degrees of freedom: P(chi2 > 63.7) = 1e-6 for a correct sampler.
  EXPECT_LT(chi2, 63.7);
}

TEST(KmeansppCpu, SameSeedSameCentresWhateverTheThreadCount) {
  const Dataset data = blobs(20000, 3, 8, 1.0, 7);
  const std::vector<int64_t> two = seeding::kmeanspp_cpu(data, 16, 4, 123).chosen;
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const std::vector<int64_t> one = seeding::kmeanspp_cpu(data, 16, 4, 123).chosen;
  omp_set_num_threads(threads);
  EXPECT_EQ(one, two);
  EXPECT_EQ(seeding::kmeanspp_cpu(data, 16, 4, 123).chosen, two);
  EXPECT_NE(seeding::kmeanspp_cpu(data, 16, 4, 124).chosen, two);
  // Distinct points: D² sampling never draws a chosen point again.
  EXPECT_EQ(std::set<int64_t>(two.begin(), two.end()).size(), two.size());
}

// ------------------------------------------------------------ seed_centroids

TEST(SeedCentroids, KRangeBlocksArePrefixesOfOneKmeansppSequence) {
  const Dataset data = blobs(4000, 4, 9, 1.5, 21);
  const DeviceInfo host = query_host_cpu();
  const KRange range{3, 9};
  const SeedingResult all = seed_centroids(data, range, kmeanspp(5), host);
  ASSERT_EQ(all.packed.size(), size_t(range.sum()) * 4);
  const float* longest = all.packed.data() + size_t(range.slot_offset(9)) * 4;
  for (int k = range.kmin; k <= range.kmax; ++k) {
    const float* block = all.packed.data() + size_t(range.slot_offset(k)) * 4;
    for (int v = 0; v < k * 4; ++v) ASSERT_EQ(block[v], longest[v]) << "K=" << k;
  }
  // Seeding K=9 alone is the same sequence (same seed, same candidates a step) ...
  const SeedingResult nine = seed_centroids(data, KRange{9, 9}, kmeanspp(5), host);
  EXPECT_EQ(nine.packed, std::vector<float>(longest, longest + 9 * 4));
  // ... and with the candidates fixed, the first k centres of the range are k-means++ for k.
  const SeedingResult fixed = seed_centroids(data, range, kmeanspp(5, 3), host);
  const SeedingResult five = seed_centroids(data, KRange{5, 5}, kmeanspp(5, 3), host);
  const float* block5 = fixed.packed.data() + size_t(range.slot_offset(5)) * 4;
  EXPECT_EQ(five.packed, std::vector<float>(block5, block5 + 5 * 4));
  EXPECT_EQ(all.method, "k-means++");
}

TEST(SeedCentroids, FirstAndRandomAreTheDatasetsInitialCentroids) {
  const Dataset data = uniform(500, 3, 2);
  const DeviceInfo host = query_host_cpu();
  SeedingOptions options;
  options.seed = 9;
  for (const std::string method : {"first", "random"}) {
    options.method = method;
    EXPECT_EQ(seed_centroids(data, KRange{2, 6}, options, host).packed,
              initial_centroids(data, KRange{2, 6}, parse_init(method), 9))
        << method;
  }
}

TEST(SeedCentroids, NpyFileSeedsEachKWithItsFirstRows) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const Dataset data = uniform(300, 4, 3);
  Dataset file;
  file.m = 7;
  file.n = 4;
  for (int v = 0; v < 28; ++v) file.values.push_back(float(v) * 0.25f);
  save_npy(dir.file("init.npy"), file);
  SeedingOptions options;
  options.method = "npy:" + dir.file("init.npy");
  const SeedingResult result = seed_centroids(data, KRange{3, 7}, options, query_host_cpu());
  EXPECT_EQ(result.method, options.method);
  for (int k = 3; k <= 7; ++k) {
    const float* block = result.packed.data() + size_t(KRange{3, 7}.slot_offset(k)) * 4;
    EXPECT_EQ(std::vector<float>(block, block + k * 4), std::vector<float>(file.values.begin(), file.values.begin() + k * 4));
  }
}

void expect_input_error(const std::function<void()>& call, const std::vector<std::string>& fragments) {
  try {
    call();
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& error) {
    for (const auto& fragment : fragments)
      EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what() << " lacks " << fragment;
  }
}

TEST(SeedCentroids, NpyFileOfTheWrongShapeNamesBothShapes) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const Dataset data = uniform(300, 4, 3);
  const DeviceInfo host = query_host_cpu();
  Dataset rows6;
  rows6.m = 6;
  rows6.n = 4;
  rows6.values.assign(24, 1.0f);
  save_npy(dir.file("six.npy"), rows6);
  Dataset cols5;
  cols5.m = 7;
  cols5.n = 5;
  cols5.values.assign(35, 1.0f);
  save_npy(dir.file("wide.npy"), cols5);
  SeedingOptions options;
  options.method = "npy:" + dir.file("six.npy");
  expect_input_error([&] { seed_centroids(data, KRange{3, 7}, options, host); }, {"expected a 7 x 4", "is 6 x 4"});
  options.method = "npy:" + dir.file("wide.npy");
  expect_input_error([&] { seed_centroids(data, KRange{3, 7}, options, host); }, {"expected a 7 x 4", "is 7 x 5"});
  Dataset bad = rows6;
  bad.m = 7;
  bad.values.assign(28, 1.0f);
  bad.values[9] = std::nanf("");
  save_npy(dir.file("nan.npy"), bad);
  options.method = "npy:" + dir.file("nan.npy");
  expect_input_error([&] { seed_centroids(data, KRange{3, 7}, options, host); }, {"NaN", "row 2"});
  options.method = "npy:" + dir.file("missing.npy");
  EXPECT_THROW(seed_centroids(data, KRange{3, 7}, options, host), InputError);
  options.method = "npy:";
  EXPECT_THROW(seed_centroids(data, KRange{3, 7}, options, host), InputError);
}

TEST(SeedCentroids, BadRequestsAreInputErrors) {
  const Dataset data = uniform(20, 3, 1);
  const DeviceInfo host = query_host_cpu();
  expect_input_error([&] { seed_centroids(data, KRange{3, 21}, kmeanspp(1), host); }, {"K=21", "M=20"});
  SeedingOptions unknown;
  unknown.method = "kmeans+++";
  expect_input_error([&] { seed_centroids(data, KRange{3, 3}, unknown, host); }, {"kmeans+++", "k-means++"});
  expect_input_error([&] { seed_centroids(data, KRange{3, 3}, kmeanspp(1, 99), host); }, {"99"});
  Dataset nan = data;
  nan.values[7] = std::nanf("");
  expect_input_error([&] { seed_centroids(nan, KRange{3, 3}, kmeanspp(1), host); }, {"NaN"});
  // Finite coordinates whose squared distances do not fit a float: check_finite's scale check
  // refuses them before k-means++'s own overflow check would.
  Dataset huge = data;
  for (float& v : huge.values) v *= 1e20f;
  expect_input_error([&] { seed_centroids(huge, KRange{3, 3}, kmeanspp(1), host); }, {"beyond float32"});
}

TEST(SeedCentroids, IdenticalPointsFallBackToUniformDraws) {
  // All points equal: every D² is 0, so every later centre is drawn uniformly (all equal).
  const Dataset same = from_rows(std::vector<std::vector<float>>(50, {1.5f, -2.0f, 3.0f}));
  const SeedingResult result = seed_centroids(same, KRange{5, 5}, kmeanspp(3), query_host_cpu());
  for (int v = 0; v < 5 * 3; ++v) EXPECT_EQ(result.packed[size_t(v)], same.values[size_t(v % 3)]);
  const std::vector<int64_t> chosen = seeding::kmeanspp_cpu(same, 5, 3, 3).chosen;
  EXPECT_GT(std::set<int64_t>(chosen.begin(), chosen.end()).size(), 1u) << "uniform draws, not point 0 each time";

  // Three distinct points, ten copies each: D² sampling finds all three first (a copy of a
  // chosen point weighs 0), then the fallback draws uniformly.
  std::vector<std::vector<float>> rows;
  for (int copy = 0; copy < 10; ++copy)
    for (float x : {0.0f, 4.0f, 9.0f}) rows.push_back({x, 1.0f});
  const Dataset three = from_rows(rows);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const std::vector<int64_t> picks = seeding::kmeanspp_cpu(three, 6, 2, seed).chosen;
    std::set<float> first_three;
    for (int c = 0; c < 3; ++c) first_three.insert(three.at(picks[size_t(c)], 0));
    EXPECT_EQ(first_three.size(), 3u) << "seed " << seed;
  }
}

// ------------------------------------------------------------ GPU path == CPU path

class KmeansppGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
    device_ = query_device(0);
  }
  DeviceInfo device_;
};

TEST_F(KmeansppGpu, ChoosesTheSameCentresAsTheCpuPath) {
  struct Case {
    Dataset data;
    int kmax;
    int candidates;
  };
  std::vector<std::vector<float>> duplicates;
  for (int copy = 0; copy < 40; ++copy)
    for (float x : {0.0f, 4.0f, 9.0f}) duplicates.push_back({x, 1.0f, -x, 2.0f});
  const Case cases[] = {
      {blobs(5000, 8, 12, 1.0, 1), 64, seeding::candidate_count(64, 0)},       // float4 rows
      {blobs(3000, 5, 7, 2.0, 2), 20, seeding::candidate_count(20, 0)},        // scalar rows (n % 4 != 0)
      {uniform(777, 4, 3), 30, 3},                                              // fewer points than a tile
      {uniform(20000, 12, 4), 100, 12},                                         // 16-candidate kernels
      {uniform(4000, 3, 5), 10, 1},                                             // plain k-means++
      {uniform(6000, 2, 6), 40, 20},                                            // 32-candidate kernels
      {from_rows(std::vector<std::vector<float>>(100, {1.0f, 2.0f, 3.0f, 4.0f})), 8, 2},  // all D² zero
      {from_rows(duplicates), 6, 2},                                            // D² zero after three
      {uniform(10007, 32, 8), 40, 8},     // staged rows of 8 chunks (padded), a last unit cut short
      {uniform(600001, 8, 10), 20, 4},    // staged: blocks of several units and tiles, tiles split between blocks
      {uniform(5000, 8, 12), 30, 14},     // staged, 16 candidate rows (two of them copies)
      {uniform(5000, 4, 13), 30, 20},     // staged, 32 candidate rows
  };
  for (const Case& c : cases) {
    const std::vector<int64_t> cpu = seeding::kmeanspp_cpu(c.data, c.kmax, c.candidates, 77).chosen;
    const seeding::KmeansppRun gpu = seeding::kmeanspp_gpu(c.data, c.kmax, c.candidates, 77, device_);
    EXPECT_EQ(gpu.chosen, cpu) << c.data.m << " x " << c.data.n << " K=" << c.kmax << " L=" << c.candidates;
  }
}

// Device points that are not 16-byte aligned (a view into a torch or CuPy array) with N % 4 == 0
// take the scalar rows; the answer is the same.
TEST_F(KmeansppGpu, UnalignedDevicePointsChooseTheSameCentres) {
  const Dataset data = uniform(5000, 8, 11);
  float* buffer = nullptr;
  ASSERT_EQ(cudaMalloc(&buffer, (data.values.size() + 1) * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(buffer + 1, data.values.data(), data.values.size() * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  const std::vector<int64_t> gpu =
      seeding::kmeanspp_gpu_on_device(buffer + 1, data.m, data.n, 30, 5, 21, device_).chosen;
  cudaFree(buffer);
  EXPECT_EQ(gpu, seeding::kmeanspp_cpu(data, 30, 5, 21).chosen);
}

// Weights (k-means||'s reclustering passes its candidates' counts): the per-thread pass and the
// select phase sample w·D², the first centre w; the same centres as the CPU path's weighted run.
TEST_F(KmeansppGpu, WeightedRunChoosesTheSameCentresAsTheCpuPath) {
  struct Case {
    Dataset data;
    int kmax;
    int candidates;
  };
  const Case cases[] = {
      {blobs(6000, 8, 10, 1.0, 3), 40, seeding::candidate_count(40, 0)},  // float4 rows
      {blobs(3000, 5, 7, 2.0, 4), 20, 3},                                 // scalar rows
      {uniform(9000, 32, 5), 64, 8},                                      // a K=1024 pool's width
      {uniform(2000, 4, 6), 30, 1},                                       // plain k-means++
  };
  for (const Case& c : cases) {
    std::vector<float> weights(size_t(c.data.m));
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = float(1 + (i * 7919) % 13);  // 1..13, counts-like
    weights[5] = 0.0f;  // a candidate nearest to no point
    float* points = nullptr;
    float* device_weights = nullptr;
    ASSERT_EQ(cudaMalloc(&points, c.data.values.size() * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&device_weights, weights.size() * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(points, c.data.values.data(), c.data.values.size() * sizeof(float), cudaMemcpyHostToDevice),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpy(device_weights, weights.data(), weights.size() * sizeof(float), cudaMemcpyHostToDevice),
              cudaSuccess);
    const std::vector<int64_t> gpu = seeding::kmeanspp_gpu_on_device(points, c.data.m, c.data.n, c.kmax, c.candidates,
                                                                     31, device_, device_weights)
                                         .chosen;
    cudaFree(points);
    cudaFree(device_weights);
    const std::vector<int64_t> cpu = seeding::kmeanspp_cpu(c.data, c.kmax, c.candidates, 31, weights.data()).chosen;
    EXPECT_EQ(gpu, cpu) << c.data.m << " x " << c.data.n << " K=" << c.kmax << " L=" << c.candidates;
    EXPECT_NE(cpu, seeding::kmeanspp_cpu(c.data, c.kmax, c.candidates, 31).chosen) << "the weights changed nothing";
  }
}

TEST_F(KmeansppGpu, SeedCentroidsOnTheGpuEqualsTheCpu) {
  const Dataset data = blobs(50000, 16, 20, 1.0, 9);
  const KRange range{5, 25};
  const SeedingResult gpu = seed_centroids(data, range, kmeanspp(8), device_);
  const SeedingResult cpu = seed_centroids(data, range, kmeanspp(8), query_host_cpu());
  EXPECT_EQ(gpu.packed, cpu.packed);
  EXPECT_GT(gpu.seconds, 0.0);
  EXPECT_GT(gpu.upload_seconds, 0.0);
}

TEST_F(KmeansppGpu, OverflowingDistancesAreInputErrors) {
  Dataset huge = uniform(100, 4, 1);
  for (float& v : huge.values) v *= 1e20f;
  EXPECT_THROW(seed_centroids(huge, KRange{3, 3}, kmeanspp(1), device_), InputError);
}

// ------------------------------------------------------------ mkbench seed

struct Outcome {
  int code = -1;
  std::string output;
};

Outcome run_mkbench(const std::string& arguments) {
  Outcome outcome;
  FILE* pipe = popen((std::string(MKBENCH_BINARY) + " " + arguments + " 2>&1").c_str(), "r");
  if (!pipe) return outcome;
  char buffer[4096];
  size_t got = 0;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) outcome.output.append(buffer, got);
  const int status = pclose(pipe);
  outcome.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

TEST(SeedCommand, TimesKmeansppAndWritesItsRecordAndCentres) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const Outcome outcome = run_mkbench("seed --cpu --init k-means++ --k 4..8 --dims 4 --points 3000 --runs 2 --out " +
                                      dir.file("seed.json") + " --centroids-out " + dir.file("centres.npy"));
  ASSERT_EQ(outcome.code, 0) << outcome.output;
  EXPECT_NE(outcome.output.find("k-means++ K=4..8 on 3000 x 4 (cpu-openmp"), std::string::npos) << outcome.output;
  std::ifstream in(dir.file("seed.json"));
  const nlohmann::json record = nlohmann::json::parse(in);
  EXPECT_EQ(record.at("seconds").size(), 2u);
  EXPECT_EQ(record.at("candidates"), seeding::candidate_count(8, 0));
  EXPECT_EQ(record.at("path"), "cpu-openmp");
  const Dataset centres = load_npy(dir.file("centres.npy"));
  EXPECT_EQ(centres.m, 8);
  EXPECT_EQ(centres.n, 4);
  // The saved centres are the k-means++ sequence: they seed every K of the range as npy:PATH.
  const Dataset data = load_dataset_spec("uniform", 3000, 4, 42);
  SeedingOptions from_file;
  from_file.method = "npy:" + dir.file("centres.npy");
  EXPECT_EQ(seed_centroids(data, KRange{4, 8}, from_file, query_host_cpu()).packed,
            seed_centroids(data, KRange{4, 8}, kmeanspp(42), query_host_cpu()).packed);
}

TEST(SeedCommand, BadInputExitsWithCodeTwo) {
  for (const std::string arguments : {"seed --cpu --init nonsense --k 3 --dims 2 --points 100",
                                      "seed --cpu --k 200 --dims 2 --points 100",
                                      "seed --cpu --runs 0 --k 3 --dims 2 --points 100",
                                      "seed --cpu --candidates 40 --k 3 --dims 2 --points 100"}) {
    const Outcome outcome = run_mkbench(arguments);
    EXPECT_EQ(outcome.code, 2) << arguments << "\n" << outcome.output;
  }
}

}  // namespace
}  // namespace mk
