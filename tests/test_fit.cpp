// `mkbench fit` (apps/fit/): bad input exits 2 with a message; --variant auto is the variant
// `run`'s auto takes (tensor-multik included); the elbow, the silhouette sample and the npy writer; on a GPU, the metric passes equal their CPU
// paths. The comparison with scikit-learn (centroids, labels, steps, metrics) is
// tests/fit_vs_sklearn.py (ctest FitVsSklearn.*); the best_k recovery is test_fit_best_k.cpp.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "apps/fit/fit_output.hpp"
#include "apps/fit/fit_variant.hpp"
#include "apps/fit/k_metrics.hpp"
#include "apps/fit/metric_passes.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "reports/fit_report.hpp"
#include "tests/synthetic_devices.hpp"

namespace mk {

// Defined in variants/auto_select.cpp.
std::pair<std::string, std::string> choose_auto_delegate(const Problem& problem, const DeviceInfo& device,
                                                         double sparse_threshold);

namespace {

namespace fs = std::filesystem;
using testing_support::cpu_only;
using testing_support::h100_like;
using testing_support::make_problem;

struct Outcome {
  int status = -1;
  std::string output;
};

Outcome run_mkbench(const std::string& args) {
  Outcome outcome;
  FILE* pipe = popen((std::string(MKBENCH_BINARY) + " " + args + " 2>&1").c_str(), "r");
  if (!pipe) return outcome;
  char buffer[4096];
  while (size_t got = fread(buffer, 1, sizeof buffer, pipe)) outcome.output.append(buffer, got);
  const int raw = pclose(pipe);
  outcome.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return outcome;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

fs::path scratch_folder(const std::string& name) {
  const fs::path folder = fs::temp_directory_path() / ("mkbench-test-fit-" + name);
  fs::remove_all(folder);
  fs::create_directories(folder);
  return folder;
}

const char kSmallFit[] = "fit --dataset blobs:centers=3 --dims 2 --points 500 --k 2..4 --quiet --variant cpu-openmp ";

TEST(FitBadInput, NegativeTolExitsTwo) {
  const Outcome out = run_mkbench(std::string(kSmallFit) + "--tol -1");
  EXPECT_EQ(out.status, 2) << out.output;
  EXPECT_TRUE(contains(out.output, "--tol must be a finite number >= 0")) << out.output;
}

// --dims 0 was taken for "not given" and fitted N=8 data (a bad-input audit at 04dfbaa).
TEST(FitBadInput, ZeroDimsExitsTwo) {
  const Outcome out = run_mkbench("fit --dataset blobs:centers=3 --dims 0 --points 500 --k 2..4 --quiet --variant cpu-openmp");
  EXPECT_EQ(out.status, 2) << out.output;
  EXPECT_TRUE(contains(out.output, "--dims")) << out.output;
}

TEST(FitBadInput, ZeroMaxIterExitsTwo) {
  const Outcome out = run_mkbench(std::string(kSmallFit) + "--max-iter 0");
  EXPECT_EQ(out.status, 2) << out.output;
  EXPECT_TRUE(contains(out.output, "--max-iter must be at least 1")) << out.output;
}

TEST(FitBadInput, ZeroNInitExitsTwo) {
  const Outcome out = run_mkbench(std::string(kSmallFit) + "--n-init 0");
  EXPECT_EQ(out.status, 2) << out.output;
  EXPECT_TRUE(contains(out.output, "--n-init must be at least 1")) << out.output;
}

TEST(FitBadInput, KAboveMExitsTwo) {
  const Outcome out = run_mkbench("fit --dataset blobs --dims 2 --points 5 --k 3..8 --quiet --variant cpu-openmp");
  EXPECT_EQ(out.status, 2) << out.output;
  EXPECT_TRUE(contains(out.output, "K")) << out.output;
}

TEST(FitBadInput, UnknownEmptyPolicyExitsTwo) {
  const Outcome out = run_mkbench(std::string(kSmallFit) + "--empty nowhere");
  EXPECT_EQ(out.status, 2) << out.output;
  EXPECT_TRUE(contains(out.output, "--empty must be keep, farthest or random")) << out.output;
}

TEST(FitBadInput, UnknownInitExitsTwo) {
  const Outcome out = run_mkbench(std::string(kSmallFit) + "--init kmeans");
  EXPECT_EQ(out.status, 2) << out.output;
  EXPECT_TRUE(contains(out.output, "--init must be first, random, k-means++, k-means|| or npy:PATH")) << out.output;
}

TEST(FitBadInput, InitFileOfTheWrongShapeExitsTwo) {
  const fs::path folder = scratch_folder("init-shape");
  Dataset wrong;  // 3 x 5 where the fit needs kmax x N = 4 x 2
  wrong.m = 3;
  wrong.n = 5;
  wrong.values.assign(15, 1.0f);
  const std::string path = (folder / "init.npy").string();
  save_npy(path, wrong);
  const Outcome out = run_mkbench(std::string(kSmallFit) + "--init npy:" + path);
  EXPECT_EQ(out.status, 2) << out.output;
  EXPECT_TRUE(contains(out.output, "--init npy:" + path)) << out.output;
  fs::remove_all(folder);
}

TEST(FitBadInput, MissingInitFileExitsTwo) {
  const Outcome out = run_mkbench(std::string(kSmallFit) + "--init npy:/nonexistent/init.npy");
  EXPECT_EQ(out.status, 2) << out.output;
  EXPECT_TRUE(contains(out.output, "/nonexistent/init.npy")) << out.output;
}

TEST(FitBadInput, PointsDisagreeingWithTheFileExitTwo) {
  const fs::path folder = scratch_folder("points");
  GeneratorSpec spec;
  spec.m = 100;
  spec.n = 3;
  const std::string path = (folder / "x.npy").string();
  save_npy(path, generate(spec));
  const Outcome out = run_mkbench("fit --dataset npy:" + path + " --points 200 --k 2 --quiet --variant cpu-openmp");
  EXPECT_EQ(out.status, 2) << out.output;
  EXPECT_TRUE(contains(out.output, "--points 200 does not match dataset")) << out.output;
  EXPECT_TRUE(contains(out.output, "which has 100 points")) << out.output;
  fs::remove_all(folder);
}

TEST(FitOutputs, AFileGivesItsShapeAndTheSetIsComplete) {
  const fs::path folder = scratch_folder("outputs");
  GeneratorSpec spec;
  spec.kind = "blobs";
  spec.centers = 3;
  spec.m = 300;
  spec.n = 3;
  save_npy((folder / "x.npy").string(), generate(spec));
  // A stale fit.json must not survive a new fit into the same folder.
  fs::create_directories(folder / "out");
  std::ofstream(folder / "out" / "fit.json") << "stale";
  const Outcome out = run_mkbench("fit --dataset npy:" + (folder / "x.npy").string() + " --k 2..3 --quiet --variant "
                                  "cpu-openmp --out " + (folder / "out").string());
  ASSERT_EQ(out.status, 0) << out.output;
  std::ifstream in(folder / "out" / "fit.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc.at("schema"), kFitSchema);
  EXPECT_EQ(doc.at("m"), 300);
  EXPECT_EQ(doc.at("n"), 3);
  for (const auto& entry : doc.at("per_k")) {
    const Dataset centroids = load_npy((folder / "out" / entry.at("centroids_file").get<std::string>()).string());
    EXPECT_EQ(centroids.m, entry.at("k").get<int>());
    EXPECT_EQ(centroids.n, 3);
    EXPECT_TRUE(fs::exists(folder / "out" / entry.at("labels_file").get<std::string>()));
  }
  fs::remove_all(folder);
}

TEST(FitOutputs, EveryStepHasItsTimeAndTheyAddUpToTheLoop) {
  const fs::path folder = scratch_folder("step_times");
  const Outcome out = run_mkbench("fit --dataset uniform --dims 4 --points 20000 --k 3..5 --max-iter 7 --tol 0 "
                                  "--n-init 2 --init random --quiet --variant cpu-openmp --device cpu --out " +
                                  (folder / "out").string());
  ASSERT_EQ(out.status, 0) << out.output;
  std::ifstream in(folder / "out" / "fit.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  const nlohmann::json& steps = doc.at("step_ms");
  // Two restarts of 7 steps at tol 0 on uniform data (no K stops early).
  ASSERT_EQ(doc.at("steps").get<int>(), 14);
  ASSERT_EQ(steps.size(), 14u);
  double sum_ms = 0;
  for (const auto& step : steps) {
    EXPECT_GT(step.get<double>(), 0.0);
    sum_ms += step.get<double>();
  }
  // The loop's clock also covers the progress callback between steps: never less than the steps.
  const nlohmann::json& t = doc.at("time_s");
  EXPECT_LE(sum_ms, t.at("iterations").get<double>() * 1e3 * (1 + 1e-9));
  EXPECT_GT(t.at("load").get<double>(), 0.0);
  EXPECT_GE(t.at("upload").get<double>(), 0.0);
  EXPECT_NE(out.output.find("time: load "), std::string::npos) << out.output;
  fs::remove_all(folder);
}

TEST(FitOutputs, AnIdxFileGivesItsShapeWithoutDims) {
  // An IDX image file as MNIST ships it: magic 0x00000803 (unsigned bytes, three dimensions),
  // the sizes big-endian, then the pixels. 120 images of 4 x 5 are 120 points of N = 20.
  const fs::path folder = scratch_folder("idx");
  const int images = 120, rows = 4, cols = 5;
  std::string bytes = {0, 0, 8, 3};
  for (int size : {images, rows, cols})
    for (int shift = 24; shift >= 0; shift -= 8) bytes += char((size >> shift) & 0xff);
  for (int i = 0; i < images * rows * cols; ++i) bytes += char((i * 37 + (i / (rows * cols)) % 3 * 80) % 251);
  std::ofstream((folder / "images.idx").string(), std::ios::binary) << bytes;
  const Outcome out = run_mkbench("fit --dataset idx:" + (folder / "images.idx").string() +
                                  " --k 3 --quiet --variant cpu-openmp --out " + (folder / "out").string());
  ASSERT_EQ(out.status, 0) << out.output;
  std::ifstream in(folder / "out" / "fit.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc.at("m"), images);
  EXPECT_EQ(doc.at("n"), rows * cols);
  fs::remove_all(folder);
}

TEST(FitReport, MarkdownTableHtmlCurvesAndNoMixingWithResults) {
  const fs::path folder = scratch_folder("report");
  const Outcome fit = run_mkbench(std::string(kSmallFit) + "--out " + (folder / "fit").string());
  ASSERT_EQ(fit.status, 0) << fit.output;
  const std::string fit_json = (folder / "fit" / "fit.json").string();
  ASSERT_TRUE(reports::is_fit_file(fit_json));
  const Outcome md = run_mkbench("report " + fit_json);
  ASSERT_EQ(md.status, 0) << md.output;
  EXPECT_TRUE(contains(md.output, "| K | iterations | converged | inertia | Calinski-Harabasz")) << md.output;
  EXPECT_TRUE(contains(md.output, "by the rule calinski-harabasz-max")) << md.output;
  const Outcome mixed = run_mkbench("report " + fit_json + " " + std::string(MKBENCH_TEST_DATA) +
                                    "/results_table1_fixture.json");
  EXPECT_EQ(mixed.status, 2) << mixed.output;
  EXPECT_TRUE(contains(mixed.output, "cannot be reported together")) << mixed.output;
  const std::string html_path = (folder / "fit.html").string();
  const Outcome html = run_mkbench("report " + fit_json + " --format html --out " + html_path);
  ASSERT_EQ(html.status, 0) << html.output;
  std::ifstream in(html_path);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(page, "<table>")) << page.substr(0, 400);
  if (reports::find_python_with_matplotlib().empty())
    GTEST_SKIP() << "no python3 with matplotlib: the table was checked, the per-K curves are skipped";
  // iVBORw0KGgo is the base64 of the PNG signature.
  EXPECT_TRUE(contains(page, "data:image/png;base64,iVBORw0KGgo")) << html.output;
  EXPECT_TRUE(contains(page, "per-K curves")) << html.output;
  fs::remove_all(folder);
}

TEST(FitVariant, AutoIsRunsChoiceTensorMultikIncluded) {
  // Every variant splits its step (tensor-multik since commit 6f30fdd), so fit takes `run`'s
  // delegate as it is, at N=8 K=3..7 too, where that delegate is tensor-multik.
  const Problem goal = make_problem(1 << 21, 8, 3, 7);
  ASSERT_EQ(choose_auto_delegate(goal, h100_like(), 0.7).first, "tensor-multik");
  const FitVariantChoice choice = choose_fit_variant("auto", goal, h100_like());
  EXPECT_EQ(choice.name, "tensor-multik");
  EXPECT_TRUE(contains(choice.reason, "auto's choice")) << choice.reason;
  for (const Problem& problem : {make_problem(1 << 21, 4, 3, 5), make_problem(1 << 21, 128, 16, 16),
                                 make_problem(1 << 20, 32, 1024, 1024), make_problem(1 << 20, 16, 2, 20)}) {
    const std::string delegate = choose_auto_delegate(problem, h100_like(), 0.7).first;
    ASSERT_FALSE(delegate.empty()) << problem.str();
    EXPECT_EQ(choose_fit_variant("auto", problem, h100_like()).name, delegate) << problem.str();
  }
}

TEST(FitVariant, AutoWithoutAGpuIsTheCpuBaseline) {
  EXPECT_EQ(choose_fit_variant("auto", make_problem(1000, 8, 3, 7), cpu_only()).name, "cpu-openmp");
}

TEST(FitVariant, ANamedVariantIsTakenAsNamedAndAnUnknownOneIsBadInput) {
  const FitVariantChoice named = choose_fit_variant("tensor-multik", make_problem(1 << 21, 8, 3, 7), h100_like());
  EXPECT_EQ(named.name, "tensor-multik");
  EXPECT_EQ(named.reason, "requested with --variant");
  EXPECT_THROW(choose_fit_variant("no-such-variant", make_problem(1000, 8, 3, 7), h100_like()), InputError);
}

TEST(FitElbow, KneedleFindsTheCornerOfAPiecewiseLinearCurve) {
  // Steep down to K=5, then nearly flat: the corner is the point farthest below the chord.
  std::vector<int> ks;
  std::vector<double> inertia;
  for (int k = 1; k <= 10; ++k) {
    ks.push_back(k);
    inertia.push_back(k <= 5 ? 100.0 - 20.0 * (k - 1) : 20.0 - 2.0 * (k - 5));
  }
  EXPECT_EQ(kneedle_elbow(ks, inertia), 5);
  // A straight line has no point below its chord; two Ks have no interior point.
  EXPECT_EQ(kneedle_elbow({1, 2, 3, 4}, {4, 3, 2, 1}), std::nullopt);
  EXPECT_EQ(kneedle_elbow({2, 3}, {10, 1}), std::nullopt);
}

TEST(FitSilhouetteSample, DistinctSortedAndEveryPointWhenSmall) {
  const std::vector<int64_t> sample = silhouette_sample(1000000, 10000, 7);
  ASSERT_EQ(sample.size(), 10000u);
  EXPECT_TRUE(std::is_sorted(sample.begin(), sample.end()));
  EXPECT_EQ(std::adjacent_find(sample.begin(), sample.end()), sample.end());
  EXPECT_GE(sample.front(), 0);
  EXPECT_LT(sample.back(), 1000000);
  EXPECT_EQ(sample, silhouette_sample(1000000, 10000, 7));  // a function of the seed
  EXPECT_NE(sample, silhouette_sample(1000000, 10000, 8));
  const std::vector<int64_t> all = silhouette_sample(50, 100, 7);
  ASSERT_EQ(all.size(), 50u);
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(all[size_t(i)], i);
}

TEST(FitNpy, CentroidsReadBackThroughTheDatasetLoader) {
  const fs::path folder = scratch_folder("npy");
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f};
  const std::string path = (folder / "c.npy").string();
  {
    std::ofstream out(path, std::ios::binary);
    const std::string bytes = npy_bytes("<f4", {3, 2}, values.data(), values.size() * sizeof(float));
    out.write(bytes.data(), std::streamsize(bytes.size()));
  }
  const Dataset back = load_npy(path);
  EXPECT_EQ(back.m, 3);
  EXPECT_EQ(back.n, 2);
  EXPECT_EQ(back.values, values);
  fs::remove_all(folder);
}

// Random points with labels that are not the nearest centroid's: the passes must follow the
// labels they are given.
struct LabelledPoints {
  Dataset data;
  KRange k{2, 20};
  std::vector<std::vector<int32_t>> labels;
  std::vector<double> means;
};

LabelledPoints labelled_points(int64_t m, int n) {
  LabelledPoints out;
  GeneratorSpec spec;
  spec.kind = "blobs";
  spec.centers = 6;
  spec.m = m;
  spec.n = n;
  spec.seed = 11;
  out.data = generate(spec);
  for (int k = out.k.kmin; k <= out.k.kmax; ++k) {
    std::vector<int32_t> labels(static_cast<size_t>(m));
    // i·7 + i/3, not i·7 alone: that gives k = 7 and 14 a single label, where a silhouette is undefined.
    for (int64_t i = 0; i < m; ++i) labels[size_t(i)] = int32_t((i * 7 + i / 3) % k);
    out.labels.push_back(labels);
    for (int c = 0; c < k; ++c)
      for (int d = 0; d < n; ++d) out.means.push_back(0.1 * c - 0.05 * d);
  }
  return out;
}

std::vector<const int32_t*> pointers(const std::vector<std::vector<int32_t>>& labels) {
  std::vector<const int32_t*> out;
  for (const auto& l : labels) out.push_back(l.data());
  return out;
}

class FitMetricPassesOnGpu : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  }
};

TEST_P(FitMetricPassesOnGpu, ClusterDistanceSumsEqualTheCpuPath) {
  const LabelledPoints p = labelled_points(20011, GetParam());
  const auto labels = pointers(p.labels);
  const std::vector<double> cpu = cluster_distance_sums_cpu(p.data, p.k, labels, p.means);
  const std::vector<double> gpu = cluster_distance_sums_gpu(p.data, p.k, labels, p.means);
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t s = 0; s < cpu.size(); ++s) EXPECT_NEAR(gpu[s], cpu[s], 1e-5 * std::abs(cpu[s])) << "slot " << s;
}

TEST_P(FitMetricPassesOnGpu, SampleSilhouettesEqualTheCpuPath) {
  const LabelledPoints p = labelled_points(3001, GetParam());
  const SampleLabels sample = gather_sample(p.data, silhouette_sample(p.data.m, 2500, 3), p.k, pointers(p.labels));
  const auto cpu = sample_silhouettes_cpu(sample);
  const auto gpu = sample_silhouettes_gpu(sample);
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t index = 0; index < cpu.size(); ++index) {
    ASSERT_TRUE(cpu[index].has_value());
    ASSERT_TRUE(gpu[index].has_value());
    EXPECT_NEAR(*gpu[index], *cpu[index], 1e-5) << "k=" << p.k.kmin + int(index);
  }
}

// N = 3 takes the thread-per-point pass, N = 40 the warp-per-point one.
INSTANTIATE_TEST_SUITE_P(Dims, FitMetricPassesOnGpu, ::testing::Values(3, 40));

}  // namespace
}  // namespace mk
