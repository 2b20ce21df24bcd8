// Batches of independent problems (Problem::batch, variants/batched/, `run --batch`): each problem
// solved on its own rows from its own centroids, judged per problem against the FP64 reference.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "harness/measure.hpp"
#include "harness/reference.hpp"
#include "harness/results.hpp"
#include "harness/suite.hpp"
#include "variants/batched/batched_variant.hpp"
#include "variants/variant.hpp"
#include "tests/process_helpers.hpp"

namespace mk {
namespace {

using testing_support::TempFolder;
using testing_support::read_text;
using testing_support::run_mkbench_args;

// `batch` problems of m rows each; problem b's values are uniform in [100·b, 100·b + 1), so a
// centroid of problem b lies there and nowhere else.
Dataset offset_batch(int batch, int64_t m, int n) {
  GeneratorSpec spec;
  spec.kind = "uniform";
  spec.m = m * batch;
  spec.n = n;
  spec.seed = 7;
  Dataset data = generate(spec);
  for (int64_t i = 0; i < data.m; ++i)
    for (int d = 0; d < n; ++d) data.values[size_t(i) * n + d] += 100.0f * float(i / m);
  return data;
}

Problem batch_problem(int batch, int64_t m, int n, KRange k) {
  Problem problem;
  problem.m = m;
  problem.n = n;
  problem.k = k;
  problem.batch = batch;
  return problem;
}

TEST(Batched, EachProblemIsSolvedOnItsOwnRowsAsTheReferenceSolvesIt) {
  const Problem problem = batch_problem(3, 500, 3, KRange{3, 5});
  const Dataset data = offset_batch(3, 500, 3);
  const DeviceInfo host = query_host_cpu();
  const auto variant = variant_for_batch(Registry::instance().get("cpu-openmp"));
  ASSERT_EQ(variant->can_implement(problem, host), std::nullopt);
  const Params params = resolve_params(*variant, problem, host, Params::object());
  auto run = variant->prepare(problem, data, params, host);
  const std::vector<float> before = batch_initial_centroids(data, problem, InitMethod::RandomSample, 11);
  ASSERT_EQ(before.size(), size_t(3 * problem.k.sum() * 3));
  run->set_centroids(before);
  run->iterate(true);
  run->synchronize();
  const IterationResult got = run->read_back();
  ASSERT_EQ(got.per_k.size(), size_t(3 * problem.k.count()));
  const VerifyReport report = compare_batch_with_reference(data, problem, before, got);
  EXPECT_TRUE(report.passed) << report.summary();
  ASSERT_EQ(report.per_k.size(), got.per_k.size());
  for (size_t i = 0; i < got.per_k.size(); ++i) {
    const int b = int(i) / problem.k.count();
    EXPECT_EQ(report.per_k[i].problem, b);
    for (float value : got.per_k[i].centroids) {
      EXPECT_GE(value, 100.0f * b) << "problem " << b << " has a centroid outside its own rows' range";
      EXPECT_LT(value, 100.0f * b + 1.0f) << "problem " << b << " has a centroid outside its own rows' range";
    }
    EXPECT_EQ(got.per_k[i].labels.size(), size_t(problem.m));
  }
}

TEST(Batched, AnotherProblemsResultFailsVerificationNamingTheProblem) {
  const Problem problem = batch_problem(2, 300, 2, KRange{4, 4});
  const Dataset data = offset_batch(2, 300, 2);
  const DeviceInfo host = query_host_cpu();
  const auto variant = variant_for_batch(Registry::instance().get("cpu-openmp"));
  auto run = variant->prepare(problem, data, resolve_params(*variant, problem, host, Params::object()), host);
  const std::vector<float> before = batch_initial_centroids(data, problem, InitMethod::FirstK, 0);
  run->set_centroids(before);
  run->iterate(true);
  run->synchronize();
  IterationResult got = run->read_back();
  ASSERT_TRUE(compare_batch_with_reference(data, problem, before, got).passed);
  std::swap(got.per_k[0], got.per_k[1]);
  const VerifyReport swapped = compare_batch_with_reference(data, problem, before, got);
  EXPECT_FALSE(swapped.passed);
  ASSERT_EQ(swapped.per_k.size(), 2u);
  EXPECT_FALSE(swapped.per_k[0].passed);
  EXPECT_NE(swapped.summary().find("problem 0 K=4"), std::string::npos) << swapped.summary();
  EXPECT_EQ(swapped.to_json().at("per_k").at(1).at("problem"), 1);
}

TEST(Batched, SeedsComeFromEachProblemsOwnRows) {
  const Problem problem = batch_problem(3, 50, 2, KRange{2, 3});
  const Dataset data = offset_batch(3, 50, 2);
  const std::vector<float> seeds = batch_initial_centroids(data, problem, InitMethod::FirstK, 0);
  const size_t one = size_t(problem.k.sum()) * 2;
  ASSERT_EQ(seeds.size(), 3 * one);
  for (int b = 0; b < 3; ++b) {
    // First-K: K=2 takes the problem's rows 0 and 1, K=3 its rows 0, 1 and 2.
    const std::vector<int> rows{0, 1, 0, 1, 2};
    for (size_t slot = 0; slot < rows.size(); ++slot)
      for (int d = 0; d < 2; ++d)
        EXPECT_EQ(seeds[b * one + slot * 2 + d], data.at(int64_t(b) * 50 + rows[slot], d));
  }
  const Problem one_problem = batch_problem(1, 150, 2, KRange{2, 3});
  EXPECT_EQ(batch_initial_centroids(data, one_problem, InitMethod::RandomSample, 5),
            initial_centroids(data, one_problem.k, InitMethod::RandomSample, 5));
  EXPECT_THROW(batch_initial_centroids(data, batch_problem(4, 50, 2, KRange{2, 3}), InitMethod::FirstK, 0),
               InputError);
}

TEST(Batched, FootprintIsThatOfEveryProblemsRun) {
  const Problem problem = batch_problem(8, 4096, 16, KRange{3, 7});
  const DeviceInfo host = query_host_cpu();
  const Variant& inner = Registry::instance().get("cpu-openmp");
  const auto variant = variant_for_batch(inner);
  const Params params = resolve_params(*variant, problem, host, Params::object());
  const int64_t one = inner.device_footprint(problem_of_one(problem), params, host, true).total();
  EXPECT_GT(one, 0);
  EXPECT_EQ(variant->device_footprint(problem, params, host, true).total(), 8 * one);
}

TEST(Batched, StreamedProblemsAreRefused) {
  Problem problem = batch_problem(2, 1000, 4, KRange{3, 3});
  problem.streamed = true;
  const auto variant = variant_for_batch(Registry::instance().get("cpu-openmp"));
  const auto refusal = variant->can_implement(problem, query_host_cpu());
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(*refusal, kRefuseBatchedOutOfCore);
}

TEST(BatchedRow, MeasureRowVerifiesEveryProblemAndCountsItsWork) {
  const Problem problem = batch_problem(4, 400, 3, KRange{3, 4});
  const Dataset data = offset_batch(4, 400, 3);
  RowSpec spec;
  spec.variant = &Registry::instance().get("cpu-openmp");
  spec.problem = problem;
  spec.dataset = &data;
  spec.init_centroids = batch_initial_centroids(data, problem, InitMethod::FirstK, 0);
  spec.warmup = 0;
  spec.samples = 2;
  spec.verify = true;
  const ResultRow row = measure_row(spec, query_host_cpu());
  ASSERT_EQ(row.status, "ok") << row.reason;
  EXPECT_TRUE(row.verify_passed()) << row.verify.dump();
  EXPECT_EQ(row.verify.at("per_k").size(), size_t(4 * problem.k.count()));
  EXPECT_EQ(row.verify.at("final_step").at("per_k").back().at("problem"), 3);
  EXPECT_NE(row.name.find("/400x4/"), std::string::npos) << row.name;
  // Gops counts every problem: 3 · ΣK · N · M · B over the step's median time.
  EXPECT_DOUBLE_EQ(problem.paper_ops(), 3.0 * 7 * 3 * 400 * 4);
  ASSERT_GT(row.summary.median_ms, 0.0);
  EXPECT_NEAR(row.metrics.gops, 3.0 * 7 * 3 * 400 * 4 / (row.summary.median_ms * 1e-3) / 1e9, 1e-9 * row.metrics.gops);
  const ResultRow back = row_from_json(row_to_json(row), "row");
  EXPECT_EQ(back.problem.batch, 4);
  EXPECT_EQ(back.problem.m, 400);
}

TEST(BatchedCli, RunBatchWritesOneVerifiedRowOfEveryProblem) {
  TempFolder folder("batch_cli");
  const std::string out = folder.file("batch.json");
  const auto result = run_mkbench_args({"run", "--variant", "cpu-openmp", "--batch", "3", "--dims", "4", "--k", "2..3",
                                        "--points", "1000", "--iters", "2", "--warmup", "0", "--verify", "--out", out},
                                       {"MKBENCH_CACHE_DIR=" + folder.file("cache")});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const nlohmann::json file = nlohmann::json::parse(read_text(out));
  const nlohmann::json& row = file.at("rows").at(0);
  EXPECT_EQ(row.at("problem").at("batch"), 3);
  EXPECT_EQ(row.at("problem").at("m"), 1000);
  EXPECT_EQ(row.at("dataset").at("params").at("m"), 3000) << "every problem's rows are generated";
  EXPECT_EQ(row.at("verify").at("per_k").size(), 6u);
  EXPECT_TRUE(row.at("verify").at("passed").get<bool>());
}

TEST(BatchedCli, BadBatchesExitTwoWithTheReason) {
  TempFolder folder("batch_bad");
  const std::vector<std::string> env{"MKBENCH_CACHE_DIR=" + folder.file("cache")};
  const std::vector<std::string> base{"run", "--variant", "cpu-openmp", "--dims", "2", "--k", "3", "--points", "100",
                                      "--iters", "1", "--warmup", "0"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_mkbench_args(args, env);
  };
  const auto zero = with({"--batch", "0"});
  EXPECT_EQ(zero.exit_code, kExitBadInput) << zero.output;
  EXPECT_NE(zero.output.find("--batch must be 1 to"), std::string::npos) << zero.output;
  const auto too_many = with({"--batch", "4097"});
  EXPECT_EQ(too_many.exit_code, kExitBadInput) << too_many.output;
  const auto sharded = with({"--batch", "2", "--device", "cpu:2"});
  EXPECT_EQ(sharded.exit_code, kExitBadInput) << sharded.output;
  EXPECT_NE(sharded.output.find("one device"), std::string::npos) << sharded.output;
  const auto streamed = with({"--batch", "2", "--out-of-core"});
  EXPECT_EQ(streamed.exit_code, kExitBadInput) << streamed.output;
  EXPECT_NE(streamed.output.find("do not combine with --batch"), std::string::npos) << streamed.output;
  // A file's rows must divide into the batch.
  const std::string csv = folder.file("ten.csv");
  {
    std::string text;
    for (int i = 0; i < 10; ++i) text += std::to_string(i) + "," + std::to_string(i * 2) + "\n";
    FILE* f = std::fopen(csv.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  const auto uneven = run_mkbench_args({"run", "--variant", "cpu-openmp", "--dataset", "csv:" + csv, "--k", "2",
                                        "--batch", "3", "--iters", "1", "--warmup", "0"},
                                       env);
  EXPECT_EQ(uneven.exit_code, kExitBadInput) << uneven.output;
  EXPECT_NE(uneven.output.find("does not divide"), std::string::npos) << uneven.output;
  const auto even = run_mkbench_args({"run", "--variant", "cpu-openmp", "--dataset", "csv:" + csv, "--k", "2",
                                      "--batch", "2", "--iters", "1", "--warmup", "0", "--verify"},
                                     env);
  EXPECT_EQ(even.exit_code, 0) << even.output;
}

TEST(BatchedSuite, ACaseBatchPlansAndRunsRowsOfItsProblems) {
  const char* text = R"({"name": "b", "verify": true, "iters": 2, "warmup": 0, "cases": [
      {"dims": [3], "k": ["2..3"], "points": ["500"], "batch": 3, "variants": ["cpu-openmp"]}]})";
  const SuiteDefinition suite = parse_suite_text(text, "b");
  const SuitePlan plan = plan_suite(suite, query_host_cpu(), {}, false);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].batch, 3);
  ASSERT_EQ(plan.groups[0].rows.size(), 1u);
  EXPECT_EQ(plan.groups[0].rows[0].problem.batch, 3);
  EXPECT_EQ(plan.groups[0].rows[0].problem.m, 500);

  TempFolder folder("batch_suite");
  const std::string path = folder.file("b.json"), out = folder.file("out.json");
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text, f);
    std::fclose(f);
  }
  const auto result = run_mkbench_args({"suite", path, "--out", out}, {"MKBENCH_CACHE_DIR=" + folder.file("cache")});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const nlohmann::json row = nlohmann::json::parse(read_text(out)).at("rows").at(0);
  EXPECT_EQ(row.at("problem").at("batch"), 3);
  EXPECT_EQ(row.at("dataset").at("params").at("m"), 1500) << "every problem's rows are generated";
  EXPECT_TRUE(row.at("verify").at("passed").get<bool>());
  EXPECT_EQ(row.at("verify").at("per_k").size(), 6u);

  // Without a GPU a batched GPU case runs the CPU baseline at the fallback's size for the whole
  // row: 8K points over 32 problems, each keeping at least K of them.
  const SuitePlan fallback = plan_suite(parse_suite_text(R"({"cases": [{"dims": [128], "k": ["1024"],
      "points": ["64K"], "batch": 32, "variants": ["gemm-window"]}], "cpu_fallback": {"points": ["8K"]}})",
                                                         "fallback"),
                                        query_host_cpu(), {}, false);
  ASSERT_EQ(fallback.groups.size(), 1u);
  EXPECT_TRUE(fallback.groups[0].cpu_fallback);
  EXPECT_EQ(fallback.groups[0].batch, 32);
  EXPECT_EQ(fallback.groups[0].points, 1024);

  EXPECT_THROW(parse_suite_text(R"({"cases": [{"dims": [3], "k": ["2"], "points": ["500"], "batch": 0,
      "variants": ["cpu-openmp"]}]})", "zero"), InputError);
}

// On a GPU: a GPU variant's batch, its runs forked and joined on their streams, passes the
// per-problem check before and after the timed loop, and times the whole batch.
TEST(BatchedGpu, GpuVariantsBatchesPassVerificationPerProblem) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  const DeviceInfo device = query_device(0);
  const Problem problem = batch_problem(6, 20000, 16, KRange{8, 8});
  const Dataset data = offset_batch(6, 20000, 16);
  const std::vector<float> init = batch_initial_centroids(data, problem, InitMethod::RandomSample, 3);
  int ran = 0;
  for (const char* name : {"registers-multik", "warp-centric", "gemm-window", "tf32-window"}) {
    const Variant& variant = Registry::instance().get(name);
    if (variant.can_implement(problem_of_one(problem), device)) continue;
    RowSpec spec;
    spec.variant = &variant;
    spec.problem = problem;
    spec.dataset = &data;
    spec.init_centroids = init;
    spec.warmup = 1;
    spec.samples = 3;
    spec.verify = true;
    const ResultRow row = measure_row(spec, device);
    ASSERT_EQ(row.status, "ok") << name << ": " << row.reason;
    EXPECT_TRUE(row.verify_passed()) << name << ": " << row.verify.dump();
    EXPECT_EQ(row.verify.at("per_k").size(), 6u) << name;
    EXPECT_GT(row.summary.median_ms, 0.0) << name;
    ++ran;
  }
  EXPECT_GT(ran, 0) << "no GPU variant accepted " << problem.str() << " on " << device.name;
}

}  // namespace
}  // namespace mk
