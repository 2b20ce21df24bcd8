// quantize on the GPU (skips without one). The byte path (apps/quantize/u8_norm_run.hpp): one
// accumulate's labels are exact nearest centroids (tie-aware: a label's FP64 distance equals the
// minimum) and its sums, counts and inertia equal FP64 sums on the host, on centroids that
// include exact ties and near ties; its bounded steps (kept labels and totals) equal a full
// pass every step; end to end it ends where cpu-openmp ends from the same
// palette (PSNR within 0.05 dB), and planted colours come back losslessly. The float variant
// fit's auto picks is held to the same end-to-end checks.
#include <gtest/gtest.h>

#include <cfloat>
#include <cstdio>

#include "apps/fit/fit_variant.hpp"
#include "apps/fit/lloyd_loop.hpp"
#include "apps/quantize/quantize.hpp"
#include "apps/quantize/u8_norm_run.hpp"
#include "apps/seeding/seeding.hpp"
#include "harness/measure.hpp"
#include "process_helpers.hpp"
#include "quantize_test_support.hpp"

namespace mk {
namespace {

using quantize_test::gradient_image;
using quantize_test::planted_image;

Problem rgb_problem(const Image& image, int k) {
  Problem problem;
  problem.m = image.pixel_count();
  problem.n = 3;
  problem.k = KRange{k, k};
  return problem;
}

QuantizeEngine engine_for(const std::string& name, const Image& image, int k, const DeviceInfo& device) {
  if (name == kU8NormPath) return u8_norm_engine(device);
  const Variant& variant = Registry::instance().get(name);
  return variant_engine(variant, resolve_params(variant, rgb_problem(image, k), device, Params::object()), device);
}

double exact_distance(const float* x, const float* c) {
  double d = 0;
  for (int j = 0; j < 3; ++j) d += (double(x[j]) - double(c[j])) * (double(x[j]) - double(c[j]));
  return d;
}

// Exact ties and near ties: pairs of centroids mirrored about a pixel's colour (the second of
// every other pair nudged by 1e-3), so that pixel and others sit at equal or almost equal
// distance from both.
void plant_ties(std::vector<float>& centroids, const Dataset& rgb, int k) {
  for (int pair = 0; pair + 1 < k && pair < 40; pair += 2) {
    const float* x = rgb.row(int64_t(pair) * 997 % rgb.m);
    const float offset[3] = {3.0f, -2.0f, 0.5f};
    const float nudge = pair % 4 == 0 ? 0.0f : 1e-3f;
    for (int d = 0; d < 3; ++d) {
      centroids[size_t(pair) * 3 + d] = x[d] + offset[d];
      centroids[size_t(pair + 1) * 3 + d] = x[d] - offset[d] + (d == 0 ? nudge : 0.0f);
    }
  }
}

class QuantizeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
    gpu_ = query_device(0);
    select_device(0);
  }
  // The GPU variants the end-to-end checks run: the byte path and fit's auto for N=3.
  std::vector<std::string> engines(const Image& image, int k) const {
    const FitVariantChoice choice = choose_fit_variant("auto", rgb_problem(image, k), gpu_);
    EXPECT_FALSE(choice.name.empty()) << choice.reason;
    std::vector<std::string> names = {kU8NormPath};
    if (!choice.name.empty()) names.push_back(choice.name);
    return names;
  }
  DeviceInfo gpu_;
};

TEST_F(QuantizeGpu, BytePathLabelsAndSumsAreExact) {
  const Image image = gradient_image(256, 192, 4, 10, 17);
  const Dataset rgb = rgb_points(image);
  for (int k : {1, 37, 255, 256}) {
    SeedingOptions seeding;
    seeding.seed = uint64_t(k);
    std::vector<float> centroids = seed_centroids(rgb, KRange{k, k}, seeding, query_host_cpu()).packed;
    plant_ties(centroids, rgb, k);
    const Problem problem = rgb_problem(image, k);
    auto run = prepare_u8_norm_run(problem, rgb, image, gpu_);
    run->set_centroids(centroids);
    run->accumulate(AccumulateOptions{true});
    run->synchronize();
    const IterationResult pass = run->read_back();
    const HostAccumulators acc = copy_accumulators(*run);
    const LabelValues& labels = pass.per_k.at(0).labels;
    ASSERT_EQ(labels.size(), size_t(rgb.m));
    std::vector<double> sums(size_t(k) * 3, 0.0);
    std::vector<unsigned long long> counts(size_t(k), 0);
    double inertia = 0;
    int64_t lowest_index_differs = 0;
    for (int64_t i = 0; i < rgb.m; ++i) {
      double best = DBL_MAX;
      int lowest = 0;
      for (int c = 0; c < k; ++c) {
        const double d = exact_distance(rgb.row(i), &centroids[size_t(c) * 3]);
        if (d < best) best = d, lowest = c;
      }
      const int label = labels[size_t(i)];
      ASSERT_TRUE(label >= 0 && label < k) << "pixel " << i;
      // Tie-aware: FP64 orders distances equal to within a few 2^-53 either way.
      const double chosen = exact_distance(rgb.row(i), &centroids[size_t(label) * 3]);
      ASSERT_LE(chosen, best * (1 + 1e-15))
          << "K=" << k << " pixel " << i << ": label " << label << " is not a nearest centroid (" << lowest << " is)";
      lowest_index_differs += chosen == best && label != lowest;
      for (int d = 0; d < 3; ++d) sums[size_t(label) * 3 + d] += rgb.at(i, d);
      ++counts[size_t(label)];
      inertia += best;
    }
    // The mirrored pairs are exact ties with the same three terms, so both sides' FP64 agrees.
    EXPECT_EQ(lowest_index_differs, 0) << "K=" << k << ": an exact tie went to a higher index";
    EXPECT_EQ(acc.sums, sums) << "K=" << k;
    EXPECT_EQ(acc.counts, counts) << "K=" << k;
    EXPECT_NEAR(acc.inertia.at(0), inertia, 1e-12 * inertia) << "K=" << k;
  }
}

// The bounded steps (apps/quantize/u8_norm_bounds.cuh) keep labels and totals from step to step;
// each step's sums and counts must equal a full pass's over the same centroids (the full pass is
// held to FP64 on the host above), through Lloyd's small moves, a centroid jumping across the
// image, planted exact and near ties, and a step whose centroids did not move.
TEST_F(QuantizeGpu, BoundedStepsMatchAFullPassEveryStep) {
  const Image image = gradient_image(256, 192, 4, 10, 17);
  const Dataset rgb = rgb_points(image);
  for (int k : {1, 37, 255, 256}) {
    SeedingOptions seeding;
    seeding.seed = uint64_t(k) + 5;
    std::vector<float> centroids = seed_centroids(rgb, KRange{k, k}, seeding, query_host_cpu()).packed;
    const Problem problem = rgb_problem(image, k);
    auto bounded = prepare_u8_norm_run(problem, rgb, image, gpu_);
    auto full = prepare_u8_norm_run(problem, rgb, image, gpu_);
    for (int step = 0; step < 12; ++step) {
      if (step == 6) {  // one centroid jumps far: every bound must widen by its move
        centroids[0] = 250.0f;
        centroids[1] = 3.0f;
        centroids[2] = 128.5f;
      }
      if (step == 8) plant_ties(centroids, rgb, k);
      bounded->set_centroids(centroids);
      bounded->accumulate(AccumulateOptions{false});
      bounded->synchronize();
      const HostAccumulators mine = copy_accumulators(*bounded);
      full->set_centroids(centroids);
      full->accumulate(AccumulateOptions{true});
      full->synchronize();
      const HostAccumulators reference = copy_accumulators(*full);
      ASSERT_EQ(mine.counts, reference.counts) << "K=" << k << " step " << step;
      ASSERT_EQ(mine.sums, reference.sums) << "K=" << k << " step " << step;
      EXPECT_NEAR(mine.inertia.at(0), reference.inertia.at(0), 1e-9 * reference.inertia.at(0))
          << "K=" << k << " step " << step;
      if (step == 9) continue;  // step 10 repeats step 9's centroids: nothing moved
      for (int c = 0; c < k; ++c) {  // Lloyd's update from the reference's sums
        const unsigned long long n = reference.counts[size_t(c)];
        if (n == 0) continue;
        for (int d = 0; d < 3; ++d)
          centroids[size_t(c) * 3 + d] = float(reference.sums[size_t(c) * 3 + d] / double(n));
      }
    }
  }
}

TEST_F(QuantizeGpu, EndsWhereTheCpuEndsFromTheSamePalette) {
  testing_support::TempFolder folder("quantize_gpu");
  for (int k : {64, 255}) {
    const Image image = gradient_image(320, 240, 3, 10, 41);
    SeedingOptions seeding;
    seeding.seed = 9;
    Dataset initial;
    initial.m = k;
    initial.n = 3;
    const std::vector<float> palette = seed_centroids(rgb_points(image), KRange{k, k}, seeding, query_host_cpu()).packed;
    initial.values.assign(palette.begin(), palette.end());
    const std::string npy = folder.file("init" + std::to_string(k) + ".npy");
    save_npy(npy, initial);
    QuantizeSettings settings;
    settings.k = k;
    settings.init = "npy:" + npy;
    settings.max_iter = 30;
    settings.tol = 0;
    const QuantizeResult cpu = quantize_image(image, settings, engine_for("cpu-openmp", image, k, query_host_cpu()));
    ASSERT_TRUE(cpu.psnr_db.has_value());
    for (const std::string& name : engines(image, k)) {
      const QuantizeResult gpu = quantize_image(image, settings, engine_for(name, image, k, gpu_));
      ASSERT_TRUE(gpu.psnr_db.has_value());
      std::printf("K=%d: %s PSNR %.4f dB (%d steps), cpu-openmp %.4f dB (%d steps)\n", k, name.c_str(),
                  *gpu.psnr_db, gpu.iterations, *cpu.psnr_db, cpu.iterations);
      EXPECT_NEAR(*gpu.psnr_db, *cpu.psnr_db, 0.05) << name << " K=" << k;
      EXPECT_NEAR(gpu.inertia, cpu.inertia, 1e-3 * cpu.inertia) << name << " K=" << k;
    }
  }
}

TEST_F(QuantizeGpu, PlantedColoursComeBackLosslessly) {
  for (int k : {16, 255, 256}) {
    const Image image = planted_image(128, 96, 4, k, 13);
    for (const std::string& name : engines(image, k)) {
      QuantizeSettings settings;
      settings.k = k;  // k-means++ on the GPU
      const QuantizeResult result = quantize_image(image, settings, engine_for(name, image, k, gpu_));
      EXPECT_FALSE(result.psnr_db.has_value()) << name << " K=" << k << ": PSNR " << *result.psnr_db;
      EXPECT_EQ(result.image.pixels, image.pixels) << name << " K=" << k;
    }
  }
}

TEST_F(QuantizeGpu, EveryEmptyPolicyRefillsOnTheBytePath) {
  // More colours than the image has: clusters empty on the first step and every policy acts.
  const Image image = planted_image(64, 64, 3, 40, 3);
  for (const char* policy : {"keep", "farthest", "random"}) {
    QuantizeSettings settings;
    settings.k = 48;
    settings.init = "random";
    settings.empty = parse_empty_policy(policy);
    settings.max_iter = 20;
    const QuantizeResult gpu = quantize_image(image, settings, u8_norm_engine(gpu_));
    const QuantizeResult cpu = quantize_image(image, settings, engine_for("cpu-openmp", image, 48, query_host_cpu()));
    EXPECT_EQ(gpu.psnr_db.has_value(), cpu.psnr_db.has_value()) << policy;
    if (gpu.psnr_db && cpu.psnr_db) {
      EXPECT_NEAR(*gpu.psnr_db, *cpu.psnr_db, 0.05) << policy;
    }
  }
}

}  // namespace
}  // namespace mk
