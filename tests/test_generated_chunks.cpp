// A generator's points made on demand (issue 34, docs/out-of-core.md "Generated chunks"): any
// range of rows is the same bits as those rows of the whole generated data set, on the host
// (generate_rows) and on the GPU (generate_chunk_on_device, uniform); an on-demand data set holds
// no points yet names the same data and gives the same initial centroids, fit passes and seeds;
// the memory plan counts no host copy for it out of core unless --verify needs every point.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "apps/fit/data_moments.hpp"
#include "apps/fit/metric_passes.hpp"
#include "apps/seeding/seeding.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "generator_specs.hpp"
#include "harness/memory_plan.hpp"
#include "variants/chunked/generated_chunk.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

GeneratorSpec spec_of(const std::string& kind, int64_t m, int n, double zeros) {
  GeneratorSpec spec = testing_support::generator_spec(kind, m, n, 23, zeros);
  spec.centers = 5;
  return spec;
}

// Bitwise: -0.0f and 0.0f, or two NaNs, must not pass for one another.
// An empty range compares equal without memcmp, whose pointers may then be null.
bool same_bits(const float* a, const float* b, size_t count) {
  return count == 0 || std::memcmp(a, b, count * sizeof(float)) == 0;
}

std::vector<GeneratorSpec> every_kind() {
  // Odd N puts row boundaries inside Box-Muller pairs (blobs draw a pair per two entries).
  return {spec_of("uniform", 10007, 7, 0), spec_of("uniform", 10007, 7, 0.3), spec_of("blobs", 10007, 7, 0),
          spec_of("blobs", 10007, 5, 0.25)};
}

TEST(GenerateRows, AnyRangeIsThoseRowsOfTheWholeDataSet) {
  for (const GeneratorSpec& spec : every_kind()) {
    SCOPED_TRACE(spec.kind + " n=" + std::to_string(spec.n) + " zeros=" + std::to_string(spec.zero_fraction));
    const Dataset whole = generate(spec);
    for (const auto& [begin, end] : std::vector<std::pair<int64_t, int64_t>>{{0, spec.m}, {1, 2}, {4999, 7777},
                                                                              {spec.m - 3, spec.m}, {50, 50}}) {
      std::vector<float> rows(size_t(end - begin) * spec.n);
      generate_rows(spec, begin, end, rows.data());
      EXPECT_TRUE(same_bits(rows.data(), whole.row(begin), rows.size())) << "[" << begin << ", " << end << ")";
    }
  }
}

// The uniform generator's values are SplitMix64's: the value of entry e (row-major) is the top 24
// bits of mix64(key + (e + 1) * 0x9e3779b97f4a7c15) scaled by 2^-24, key = mix64(seed ^
// mix64(1 * 0x9e3779b97f4a7c15)). The constants were computed by an independent Python
// implementation of that definition, so a change to how the values are computed (the device
// generator's counters, its 32-bit conversion) cannot change the data sets that results name.
TEST(GenerateRows, UniformValuesAreSplitMix64sTop24Bits) {
  const int64_t last_entry = (int64_t(1) << 33) + 5;  // past 2^32: the counter's high word is used
  const GeneratorSpec spec = testing_support::generator_spec("uniform", last_entry / 3 + 1, 3, 42);
  const std::vector<std::pair<int64_t, uint32_t>> expected = {
      {0, 0x3f4a6858u}, {1, 0x3d55ec60u}, {2, 0x3e8ba8c4u}, {3, 0x3ea6a09au},
      {4, 0x3f00d8a6u}, {5, 0x3ed21bfeu}, {last_entry, 0x3f342e18u}};
  for (const auto& [entry, bits] : expected) {
    float row[3];
    generate_rows(spec, entry / 3, entry / 3 + 1, row);
    uint32_t made = 0;
    std::memcpy(&made, &row[entry % 3], sizeof(made));
    EXPECT_EQ(made, bits) << "entry " << entry;
  }
}

TEST(GenerateRows, ARangeOutsideTheDataSetIsAnInputError) {
  const GeneratorSpec spec = spec_of("uniform", 100, 3, 0);
  std::vector<float> rows(300);
  EXPECT_THROW(generate_rows(spec, -1, 5, rows.data()), InputError);
  EXPECT_THROW(generate_rows(spec, 90, 101, rows.data()), InputError);
  EXPECT_THROW(generate_rows(spec, 7, 6, rows.data()), InputError);
}

// An on-demand data set is never scanned for Inf: a spec whose values could leave float32's range
// is refused before anything is made, held or not.
TEST(GenerateRows, BlobsBeyondFloatRangeAreRefusedBeforeAnythingIsMade) {
  GeneratorSpec spec = spec_of("blobs", 100, 3, 0);
  spec.spread = 1e38;
  EXPECT_THROW(generate_on_demand(spec), InputError);
  EXPECT_THROW(generate(spec), InputError);
  spec.spread = 1.0;
  spec.box = 3.5e38;  // past float32's largest, 3.4028e38
  EXPECT_THROW(generate_on_demand(spec), InputError);
  spec.box = 1e30;
  EXPECT_NO_THROW(generate_on_demand(spec));
}

TEST(GenerateOnDemand, HoldsNoPointsButNamesTheSameDataAndSeedsTheSame) {
  for (const GeneratorSpec& spec : every_kind()) {
    SCOPED_TRACE(spec.kind);
    const Dataset whole = generate(spec);
    const Dataset on_demand = generate_on_demand(spec);
    EXPECT_TRUE(on_demand.is_on_demand());
    EXPECT_TRUE(on_demand.values.empty());
    EXPECT_FALSE(on_demand.holds_rows());
    EXPECT_EQ(on_demand.identity, whole.identity) << "results pair rows by the data's identity";
    EXPECT_EQ(on_demand.m, whole.m);
    EXPECT_EQ(on_demand.n, whole.n);
    std::vector<float> rows(size_t(spec.n) * 33);
    copy_rows(on_demand, 1000, 1033, rows.data());
    EXPECT_TRUE(same_bits(rows.data(), whole.row(1000), rows.size()));
    const KRange k{3, 6};
    EXPECT_EQ(initial_centroids(on_demand, k, InitMethod::FirstK, 4), initial_centroids(whole, k, InitMethod::FirstK, 4));
    EXPECT_EQ(initial_centroids(on_demand, k, InitMethod::RandomSample, 4),
              initial_centroids(whole, k, InitMethod::RandomSample, 4));
  }
}

TEST(GenerateOnDemand, OutOfCorePlansCountNoHostCopyUnlessVerifying) {
  const Dataset on_demand = generate_on_demand(spec_of("uniform", 1 << 20, 16, 0));
  const DataSource loaded = describe_loaded_data(on_demand);
  EXPECT_TRUE(loaded.generable);
  EXPECT_EQ(loaded.host_bytes, int64_t(1 << 20) * 16 * 4) << "what an in-core run would have to hold";
  const DataSource spec = describe_data_source("uniform", 1 << 20, 16);
  EXPECT_TRUE(spec.generable);
  EXPECT_FALSE(held_whole(spec).generable);
  EXPECT_FALSE(describe_data_source("npy:/nonexistent.npy", 0, 0).generable);

  RowWork work{&Registry::instance().get("cpu-openmp"), Problem{}, Params::object(), false, false};
  work.problem.m = 1 << 20;
  work.problem.n = 16;
  work.problem.k = {3, 3};
  work.chunk_points = 1 << 16;
  MemoryLimits limits;
  limits.host_limit_bytes = int64_t(1) << 40;
  const DeviceInfo host = query_host_cpu();
  auto points_bytes = [](const MemoryPlan& plan) {  // a part of 0 bytes is left out
    for (const auto& part : plan.host.parts)
      if (part.what.rfind("points:", 0) == 0) return part.bytes;
    return int64_t(0);
  };
  const MemoryPlan streamed = plan_memory(spec, work, host, limits);
  ASSERT_TRUE(streamed.out_of_core()) << streamed.summary();
  EXPECT_EQ(points_bytes(streamed), 0) << streamed.summary();
  work.verify = work.labels = true;  // the FP64 reference reads every point: they are made whole
  const MemoryPlan verified = plan_memory(spec, work, host, limits);
  ASSERT_TRUE(verified.out_of_core()) << verified.summary();
  EXPECT_EQ(points_bytes(verified), spec.host_bytes) << verified.summary();
}

// fit's host passes over every row (moments, Davies-Bouldin distance sums), its samples and its
// k-means++ seeding read the same rows, in the same order, from an on-demand data set.
TEST(GenerateOnDemand, FitsHostPassesAndSeedingGiveWhatTheyGiveOnHeldPoints) {
  const GeneratorSpec spec = spec_of("blobs", 20011, 6, 0.05);
  const Dataset held = generate(spec);
  const Dataset on_demand = generate_on_demand(spec);
  const DataMoments a = data_moments(held), b = data_moments(on_demand);
  EXPECT_EQ(a.mean, b.mean);
  EXPECT_EQ(a.variance, b.variance);
  EXPECT_EQ(a.max_abs, b.max_abs);

  const KRange k{3, 3};
  std::vector<int32_t> labels(size_t(spec.m));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = int32_t(i % 3);
  const std::vector<double> means(size_t(3) * spec.n, 0.5);
  const std::vector<const int32_t*> per_k{labels.data()};
  EXPECT_EQ(cluster_distance_sums_cpu(on_demand, k, per_k, means), cluster_distance_sums_cpu(held, k, per_k, means));
  const std::vector<int64_t> sample{0, 7, 1023, 1024, 20010};
  const SampleLabels from_held = gather_sample(held, sample, k, per_k);
  const SampleLabels made = gather_sample(on_demand, sample, k, per_k);
  EXPECT_EQ(made.points, from_held.points);
  EXPECT_EQ(made.labels, from_held.labels);

  SeedingOptions seeding;
  seeding.seed = 9;
  const DeviceInfo host = query_host_cpu();
  const SeedingResult seeded = seed_centroids(on_demand, {2, 5}, seeding, host);
  EXPECT_EQ(seeded.packed, seed_centroids(held, {2, 5}, seeding, host).packed) << "k-means++ over every row, gathered";
  EXPECT_EQ(seeded.rows_seen, spec.m);
}

TEST(GeneratedChunkOnDevice, IsTheHostsRowsBitForBit) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  for (const GeneratorSpec& spec : {spec_of("uniform", 100003, 7, 0), spec_of("uniform", 100003, 7, 0.3)}) {
    SCOPED_TRACE("zeros=" + std::to_string(spec.zero_fraction));
    ASSERT_TRUE(chunked::generated_on_device(spec));
    // 54321 x 7 entries leave 3 after the float4 stores; one row leaves 3 of 7; a buffer one
    // float past an aligned one takes the one-entry path throughout.
    for (const auto& [first, rows, offset] : {std::tuple<int64_t, int64_t, int>{12345, 54321, 0},
                                               std::tuple<int64_t, int64_t, int>{99, 1, 0},
                                               std::tuple<int64_t, int64_t, int>{12345, 54321, 1}}) {
      SCOPED_TRACE("rows " + std::to_string(first) + "+" + std::to_string(rows) + ", offset " + std::to_string(offset));
      std::vector<float> host(size_t(rows) * spec.n), device(host.size());
      generate_rows(spec, first, first + rows, host.data());
      float* out = nullptr;
      ASSERT_EQ(cudaMalloc(&out, (device.size() + 1) * sizeof(float)), cudaSuccess);
      chunked::generate_chunk_on_device(spec, first, rows, out + offset, nullptr);
      ASSERT_EQ(cudaMemcpy(device.data(), out + offset, device.size() * sizeof(float), cudaMemcpyDeviceToHost),
                cudaSuccess);
      cudaFree(out);
      EXPECT_TRUE(same_bits(device.data(), host.data(), host.size()));
    }
  }
  EXPECT_FALSE(chunked::generated_on_device(spec_of("blobs", 100, 4, 0)))
      << "blobs' double log/sin/cos may differ from the host library's in the last bit";
}

}  // namespace
}  // namespace mk
