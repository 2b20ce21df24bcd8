// Exact out-of-core Lloyd (issue 34, docs/out-of-core.md): a ChunkedRun over chunks that do
// not divide M gives, step for step, what the FP64 reference gives and what the in-core run
// of the same variant gives (the same labels and counts; centroids and inertia to rounding,
// since only the order of the FP64 additions differs). The CPU path (cpu-openmp through the
// same chunk driver) runs everywhere; the GPU path (two slots on their own streams) needs a
// GPU and skips with the driver's reason without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "generator_specs.hpp"
#include "harness/reference.hpp"
#include "process_helpers.hpp"
#include "synthetic_devices.hpp"
#include "variants/chunked/chunked_run.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

using testing_support::generator_spec;
using testing_support::read_text;
using testing_support::run_mkbench_args;
using testing_support::TempFolder;

Dataset blobs(int64_t m, int n, uint64_t seed) { return generate(generator_spec("blobs", m, n, seed)); }

Problem problem_of(const Dataset& data, KRange k) {
  Problem problem;
  problem.m = data.m;
  problem.n = data.n;
  problem.k = k;
  problem.sparsity = data.sparsity;
  return problem;
}

std::vector<float> packed(const IterationResult& result) {
  std::vector<float> out;
  for (const auto& k : result.per_k) out.insert(out.end(), k.centroids.begin(), k.centroids.end());
  return out;
}

// One step of `chunked` and of `in_core` from the same centroids, each against the FP64
// reference, then against each other.
void expect_same_step(PreparedRun& chunked, PreparedRun& in_core, const Dataset& data, const KRange& k,
                      const std::vector<float>& before, int step) {
  SCOPED_TRACE("step " + std::to_string(step));
  chunked.set_centroids(before);
  in_core.set_centroids(before);
  chunked.iterate(true);
  in_core.iterate(true);
  chunked.synchronize();
  in_core.synchronize();
  const IterationResult got = chunked.read_back();
  const IterationResult want = in_core.read_back();
  const VerifyReport report = compare_with_reference(data, k, before, got);
  EXPECT_TRUE(report.passed) << report.summary();
  ASSERT_EQ(got.per_k.size(), want.per_k.size());
  for (size_t i = 0; i < got.per_k.size(); ++i) {
    const KResult& a = got.per_k[i];
    const KResult& b = want.per_k[i];
    SCOPED_TRACE("K=" + std::to_string(a.k));
    EXPECT_EQ(a.labels, b.labels);
    EXPECT_EQ(a.counts, b.counts);
    EXPECT_NEAR(a.inertia, b.inertia, 1e-9 * std::max(1.0, std::fabs(b.inertia)));
    ASSERT_EQ(a.centroids.size(), b.centroids.size());
    for (size_t j = 0; j < a.centroids.size(); ++j)
      EXPECT_NEAR(a.centroids[j], b.centroids[j], 1e-5f * std::max(1.0f, std::fabs(b.centroids[j]))) << j;
  }
}

// Four steps out of core against four in core, for each chunk size.
void check_variant_out_of_core(const Variant& variant, const DeviceInfo& device, int n, KRange k,
                               const std::vector<int64_t>& chunk_sizes) {
  const Dataset data = blobs(100003, n, 7 + uint64_t(n));
  const Problem problem = problem_of(data, k);
  const std::vector<float> init = initial_centroids(data, k, InitMethod::FirstK, 0);
  const Params in_core_params = resolve_params(variant, problem, device, Params::object());
  std::unique_ptr<PreparedRun> in_core = variant.prepare(problem, data, in_core_params, device);
  for (const int64_t chunk : chunk_sizes) {
    SCOPED_TRACE(variant.name() + " chunks of " + std::to_string(chunk));
    const Params params = resolve_params(variant, chunk_problem(problem, chunk), device, Params::object());
    std::unique_ptr<ChunkedRun> chunked = prepare_chunked(variant, problem, chunk_source_of(data), chunk, params, device);
    const ChunkedRunInfo info = chunked->info();
    EXPECT_EQ(info.chunks, (data.m + std::min(chunk, data.m) - 1) / std::min(chunk, data.m));
    std::vector<float> centroids = init;
    for (int step = 1; step <= 4; ++step) {
      expect_same_step(*chunked, *in_core, data, k, centroids, step);
      centroids = packed(chunked->read_back());
    }
  }
}

// A generator's chunks made on demand (no host copy of the data) against the in-core run on the
// same data generated whole, three steps.
void check_generated_out_of_core(const Variant& variant, const DeviceInfo& device, const GeneratorSpec& spec,
                                 KRange k, int64_t chunk, const std::string& transfer,
                                 const Params& requested = Params::object()) {
  SCOPED_TRACE(variant.name() + " on " + spec.kind + " made on demand, chunks of " + std::to_string(chunk));
  const Dataset held = generate(spec);
  const Dataset on_demand = generate_on_demand(spec);
  const Problem problem = problem_of(held, k);
  std::unique_ptr<PreparedRun> in_core =
      variant.prepare(problem, held, resolve_params(variant, problem, device, requested), device);
  std::unique_ptr<ChunkedRun> chunked =
      prepare_chunked(variant, problem, chunk_source_of(on_demand), chunk,
                      resolve_params(variant, chunk_problem(problem, chunk), device, requested), device);
  EXPECT_EQ(chunked->info().source, "generator");
  EXPECT_EQ(chunked->info().transfer, transfer);
  std::vector<float> centroids = initial_centroids(on_demand, k, InitMethod::FirstK, 0);
  for (int step = 1; step <= 3; ++step) {
    expect_same_step(*chunked, *in_core, held, k, centroids, step);
    centroids = packed(chunked->read_back());
  }
}

GeneratorSpec generator(const std::string& kind, int64_t m, int n, double zeros) {
  return generator_spec(kind, m, n, 11, zeros);
}

// ------------------------------------------------------------------ CPU (cpu-openmp)

TEST(OutOfCoreCpu, ChunksThatDoNotDivideMGiveTheInCoreStepsAndTheReference) {
  const Variant& cpu = Registry::instance().get("cpu-openmp");
  // 100003 points: one chunk, chunks of 30001 (the last 10000), and of 4099 (25 chunks).
  check_variant_out_of_core(cpu, query_host_cpu(), 5, {3, 5}, {200000, 30001, 4099});
}

TEST(OutOfCoreCpu, ChunksStraightFromAMappedNpyGiveTheInCoreSteps) {
  // The in-core run reads the loader's copy; the chunked run reads the file where it lies.
  const Variant& cpu = Registry::instance().get("cpu-openmp");
  const DeviceInfo device = query_host_cpu();
  TempFolder folder("ooc_mapped");
  const std::string file = folder.file("points.npy");
  save_npy(file, blobs(100003, 6, 5));
  const Dataset copied = load_npy(file);
  const Dataset mapped = load_npy_mapped(file);
  ASSERT_TRUE(mapped.is_mapped());
  const KRange k{3, 4};
  const Problem problem = problem_of(copied, k);
  std::unique_ptr<PreparedRun> in_core =
      cpu.prepare(problem, copied, resolve_params(cpu, problem, device, Params::object()), device);
  const ChunkSource source = chunk_source_of(mapped);
  EXPECT_TRUE(source.mapped_file);
  EXPECT_EQ(source.rows, mapped.mapped_rows);
  std::unique_ptr<ChunkedRun> chunked = prepare_chunked(
      cpu, problem, source, 30001, resolve_params(cpu, chunk_problem(problem, 30001), device, Params::object()), device);
  EXPECT_EQ(chunked->info().source, "memory-mapped file");
  std::vector<float> centroids = initial_centroids(mapped, k, InitMethod::FirstK, 0);
  EXPECT_EQ(centroids, initial_centroids(copied, k, InitMethod::FirstK, 0));
  for (int step = 1; step <= 3; ++step) {
    expect_same_step(*chunked, *in_core, mapped, k, centroids, step);
    centroids = packed(chunked->read_back());
  }
}

TEST(OutOfCoreCpu, AGeneratorsChunksMadeOnDemandGiveTheInCoreSteps) {
  const Variant& cpu = Registry::instance().get("cpu-openmp");
  const DeviceInfo device = query_host_cpu();
  check_generated_out_of_core(cpu, device, generator("blobs", 100003, 5, 0.1), {3, 5}, 30001, "host");
  check_generated_out_of_core(cpu, device, generator("uniform", 100003, 6, 0), {4, 4}, 4099, "host");
}

TEST(OutOfCoreCpu, TheSplitStepLeavesHostTotalsOverEveryChunkAndUpdateFreezesKs) {
  const Variant& cpu = Registry::instance().get("cpu-openmp");
  const DeviceInfo device = query_host_cpu();
  const Dataset data = blobs(20011, 3, 3);
  const KRange k{2, 4};
  const Problem problem = problem_of(data, k);
  const Params params = resolve_params(cpu, chunk_problem(problem, 3000), device, Params::object());
  auto run = prepare_chunked(cpu, problem, chunk_source_of(data), 3000, params, device);
  const std::vector<float> init = initial_centroids(data, k, InitMethod::FirstK, 0);
  run->set_centroids(init);
  EXPECT_THROW(run->update(UpdateOptions{}), UnsupportedError) << "update before accumulate";
  run->accumulate(AccumulateOptions{});
  const AccumulatorRefs refs = run->accumulators();
  EXPECT_FALSE(refs.on_device);
  ASSERT_EQ(refs.slots, k.sum());
  for (int kk = k.kmin; kk <= k.kmax; ++kk) {
    unsigned long long total = 0;
    for (int c = 0; c < kk; ++c) total += refs.counts[k.slot_offset(kk) + c];
    EXPECT_EQ(total, 20011ull) << "K=" << kk << ": every point of every chunk counted once";
  }
  UpdateOptions freeze_k3;
  freeze_k3.active = {1, 0, 1};
  const StepSummary summary = run->update(freeze_k3);
  ASSERT_EQ(summary.per_k.size(), 3u);
  EXPECT_FALSE(summary.per_k[1].active);
  EXPECT_EQ(summary.per_k[1].shift, 0.0);
  EXPECT_GT(summary.per_k[0].shift, 0.0);
  const IterationResult after = run->read_back();
  const std::vector<float> k3_before(init.begin() + k.slot_offset(3) * 3, init.begin() + (k.slot_offset(3) + 3) * 3);
  EXPECT_EQ(after.per_k[1].centroids, k3_before) << "a frozen K keeps its centroids";

  run->accumulate(AccumulateOptions{});
  UpdateOptions farthest;
  farthest.empty = EmptyPolicy::Farthest;
  EXPECT_THROW(run->update(farthest), UnsupportedError) << "relocation needs every point at hand";
}

TEST(OutOfCoreCpu, BadChunkSizesAndMismatchedSourcesAreInputErrors) {
  const Variant& cpu = Registry::instance().get("cpu-openmp");
  const DeviceInfo device = query_host_cpu();
  const Dataset data = blobs(1000, 2, 1);
  const Problem problem = problem_of(data, {3, 3});
  const Params params = resolve_params(cpu, chunk_problem(problem, 100), device, Params::object());
  EXPECT_THROW(prepare_chunked(cpu, problem, chunk_source_of(data), 0, params, device), InputError);
  Problem other = problem;
  other.m = 999;
  EXPECT_THROW(prepare_chunked(cpu, other, chunk_source_of(data), 100, params, device), InputError);
}

TEST(OutOfCoreVariants, VariantsThatDeriveStateFromThePointsRefuseStreamedChunks) {
  const DeviceInfo device = testing_support::h100_like();
  Problem problem;
  problem.m = 1 << 20;
  problem.n = 16;
  problem.k = {8, 8};
  const Problem chunk = chunk_problem(problem, 1 << 18);
  EXPECT_TRUE(chunk.streamed);
  EXPECT_EQ(chunk.m, 1 << 18);
  for (const char* name : {"csr-sparse", "gemm-tf32x3", "tensor-multik", "tf32-window"}) {
    const auto why = Registry::instance().get(name).can_implement(chunk, device);
    ASSERT_TRUE(why.has_value()) << name << " accepted streamed chunks";
    EXPECT_NE(why->find("cannot take them in chunks"), std::string::npos) << name << ": " << *why;
  }
  for (const char* name : {"naive-atomics", "shared-atomics", "warp-centric", "gemm-cublas", "registers-multik"}) {
    const Variant& variant = Registry::instance().get(name);
    EXPECT_EQ(variant.can_implement(chunk, device), variant.can_implement(problem, device))
        << name << " should take streamed chunks where it takes the whole problem";
  }
  // shared-atomics' default layout is SoA in core; streamed chunks arrive as rows.
  EXPECT_EQ(Registry::instance().get("shared-atomics").default_params(chunk, device).at("layout"), "aos");
}

// ------------------------------------------------------------------ the command

TEST(OutOfCoreCommand, RunWithChunkPointsVerifiesAndRecordsTheChunking) {
  TempFolder folder("ooc_run");
  const std::string out = folder.file("ooc.json");
  const auto result = run_mkbench_args({"run", "--variant", "cpu-openmp", "--dims", "4", "--points", "50007", "--k",
                                        "3..4", "--iters", "2", "--warmup", "1", "--verify", "--chunk-points", "7001",
                                        "--dataset", "blobs", "--out", out},
                                       {}, 120);
  ASSERT_EQ(result.exit_code, kExitOk) << result.output;
  EXPECT_NE(result.output.find("verify cpu-openmp"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find(": PASS"), std::string::npos) << result.output;
  const auto file = nlohmann::json::parse(read_text(out));
  const auto& row = file.at("rows").at(0);
  ASSERT_TRUE(row.contains("out_of_core")) << row.dump(1);
  EXPECT_EQ(row.at("out_of_core").at("chunk_points"), 7001);
  EXPECT_EQ(row.at("out_of_core").at("chunks"), 8);
  EXPECT_EQ(row.at("out_of_core").at("transfer"), "host");
  EXPECT_EQ(row.at("problem").at("m"), 50007) << "the row is the whole problem, not a chunk";
}

TEST(OutOfCoreCommand, ThePlannerStreamsOnItsOwnWhenTheCopyWouldNotFit) {
  // 300000 × 32 floats (38.4 MB) held in host memory (--hold-points) and cpu-openmp's copy of
  // them exceed 80 MB × 0.9; one chunk's copy does not (tests/test_memory_plan.cpp has the
  // arithmetic).
  TempFolder folder("ooc_auto");
  const std::string out = folder.file("auto.json");
  const auto result = run_mkbench_args({"run", "--variant", "cpu-openmp", "--dims", "32", "--points", "300000", "--k",
                                        "3", "--iters", "2", "--warmup", "0", "--host-memory", "80M", "--hold-points",
                                        "--out", out},
                                       {}, 120);
  ASSERT_EQ(result.exit_code, kExitOk) << result.output;
  const auto row = nlohmann::json::parse(read_text(out)).at("rows").at(0);
  ASSERT_TRUE(row.contains("out_of_core")) << row.dump(1);
  EXPECT_GE(row.at("out_of_core").at("chunks").get<int>(), 2);
  EXPECT_EQ(row.at("out_of_core").at("source"), "host array");
}

TEST(OutOfCoreCommand, AnNpyLargerThanTheHostLimitIsStreamedFromItsMappedFile) {
  // 100003 × 32 float32 is a 12.8 MB file; --host-memory 10M plans 9 MB. In core (the file
  // copied, cpu-openmp's copy, the reference) cannot fit; out of core the file's chunks are
  // read from its mapping, which the plan does not count, and --verify checks the run
  // against the FP64 reference of the whole file.
  TempFolder folder("ooc_npy");
  const std::string file = folder.file("big.npy");
  save_npy(file, blobs(100003, 32, 9));
  const std::string out = folder.file("npy.json");
  const std::vector<std::string> run = {"run", "--variant", "cpu-openmp", "--dataset", "npy:" + file, "--k", "3",
                                        "--iters", "2", "--warmup", "0", "--verify", "--host-memory", "10M"};
  std::vector<std::string> chunked = run;
  for (const char* arg : {"--chunk-points", "30001", "--out"}) chunked.push_back(arg);
  chunked.push_back(out);
  const auto result = run_mkbench_args(chunked, {}, 120);
  ASSERT_EQ(result.exit_code, kExitOk) << result.output;
  EXPECT_NE(result.output.find(": PASS"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("in its memory-mapped file"), std::string::npos) << result.output;
  const auto row = nlohmann::json::parse(read_text(out)).at("rows").at(0);
  ASSERT_TRUE(row.contains("out_of_core")) << row.dump(1);
  EXPECT_EQ(row.at("out_of_core").at("source"), "memory-mapped file");
  EXPECT_EQ(row.at("out_of_core").at("chunks"), 4);
  EXPECT_EQ(row.at("dataset").at("format"), "npy");
  // Without --chunk-points the planner picks out of core itself, from the mapped file too.
  const std::string auto_out = folder.file("auto.json");
  std::vector<std::string> automatic = run;
  automatic.push_back("--out");
  automatic.push_back(auto_out);
  const auto planned = run_mkbench_args(automatic, {}, 120);
  ASSERT_EQ(planned.exit_code, kExitOk) << planned.output;
  EXPECT_NE(planned.output.find(": PASS"), std::string::npos) << planned.output;
  EXPECT_EQ(nlohmann::json::parse(read_text(auto_out)).at("rows").at(0).at("out_of_core").at("source"),
            "memory-mapped file");
  // The same limit with the data from a generator is refused under --verify: the FP64 reference
  // needs every point, so the generator makes them whole, and they do not fit.
  const auto generated = run_mkbench_args({"run", "--variant", "cpu-openmp", "--dataset", "blobs", "--points", "100003",
                                           "--dims", "32", "--k", "3", "--iters", "2", "--verify", "--host-memory",
                                           "10M"},
                                          {}, 120);
  EXPECT_EQ(generated.exit_code, kExitBadInput) << generated.output;
}

TEST(OutOfCoreCommand, AGeneratorLargerThanTheHostLimitIsMadeChunkByChunk) {
  // The data of the test above, 12.8 MB, from the generator under a 10M host limit and without
  // --verify: out of core, each chunk is generated where it is read and nothing holds the data.
  TempFolder folder("ooc_generated");
  const std::string out = folder.file("generated.json");
  const auto result = run_mkbench_args({"run", "--variant", "cpu-openmp", "--dataset", "blobs", "--points", "100003",
                                        "--dims", "32", "--k", "3", "--iters", "2", "--warmup", "0", "--host-memory",
                                        "10M", "--out", out},
                                       {}, 120);
  ASSERT_EQ(result.exit_code, kExitOk) << result.output;
  EXPECT_NE(result.output.find("generated chunk by chunk"), std::string::npos) << result.output;
  const auto row = nlohmann::json::parse(read_text(out)).at("rows").at(0);
  ASSERT_TRUE(row.contains("out_of_core")) << row.dump(1);
  EXPECT_EQ(row.at("out_of_core").at("source"), "generator");
  EXPECT_EQ(row.at("dataset").at("kind"), "generator") << row.at("dataset").dump();
}

TEST(OutOfCoreCommand, ASuiteGroupLargerThanTheHostLimitIsMadeChunkByChunk) {
  // The same data as a suite's group: its check of the host's memory passes it, and its rows run
  // out of core on chunks generated where they are read.
  TempFolder folder("ooc_suite");
  const std::string suite = folder.file("ooc.json");
  std::ofstream(suite) << R"({"name": "ooc", "dataset": "blobs", "iters": 2, "warmup": 0,
    "cases": [{"dims": [32], "k": ["3"], "points": ["100003"], "variants": ["cpu-openmp"]}]})";
  const std::string out = folder.file("suite.json");
  const auto result = run_mkbench_args({"suite", suite, "--out", out, "--host-memory", "10M"}, {}, 120);
  ASSERT_EQ(result.exit_code, kExitOk) << result.output;
  const auto row = nlohmann::json::parse(read_text(out)).at("rows").at(0);
  ASSERT_TRUE(row.contains("out_of_core")) << row.dump(1);
  EXPECT_EQ(row.at("out_of_core").at("source"), "generator");
}

TEST(OutOfCoreCommand, AnEmptyOrUnreadableChunkSizeIsBadInput) {
  const auto zero = run_mkbench_args({"run", "--variant", "cpu-openmp", "--points", "1K", "--chunk-points", "0"});
  EXPECT_EQ(zero.exit_code, kExitBadInput) << zero.output;
  EXPECT_NE(zero.output.find("--chunk-points must be at least 1"), std::string::npos) << zero.output;
  const auto words = run_mkbench_args({"run", "--variant", "cpu-openmp", "--points", "1K", "--chunk-points", "lots"});
  EXPECT_EQ(words.exit_code, kExitBadInput) << words.output;
  EXPECT_NE(words.output.find("cannot parse count 'lots'"), std::string::npos) << words.output;
}

// ------------------------------------------------------------------ GPU (two slots)

TEST(OutOfCoreGpu, EveryStreamingVariantGivesTheInCoreStepsAndTheReference) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  const DeviceInfo device = query_device(0);
  // 100003 points in chunks of 30001 (4 chunks, both slots twice, the last short) and of
  // 4099 (25 chunks, an odd count: slot 0 takes one more).
  for (const char* name : {"naive-atomics", "shared-atomics", "registers-multik", "gemm-cublas"})
    check_variant_out_of_core(Registry::instance().get(name), device, 8, {3, 5}, {30001, 4099});
  check_variant_out_of_core(Registry::instance().get("warp-centric"), device, 16, {4, 4}, {30001});
}

TEST(OutOfCoreGpu, AUniformGeneratorsChunksAreMadeOnTheDeviceAndBlobsStaged) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  const DeviceInfo device = query_device(0);
  // registers-multik makes uniform rows in its own kernel (row-major; the MMA and the register
  // accumulations; N not a multiple of 4 or 8); with zeros, or another variant, a kernel of
  // their own makes the chunks.
  check_generated_out_of_core(Registry::instance().get("registers-multik"), device,
                              generator("uniform", 100003, 8, 0), {3, 5}, 30001, "generated in the variant's kernel");
  check_generated_out_of_core(Registry::instance().get("registers-multik"), device,
                              generator("uniform", 100003, 5, 0), {2, 4}, 4099, "generated in the variant's kernel");
  check_generated_out_of_core(Registry::instance().get("registers-multik"), device,
                              generator("uniform", 100003, 8, 0), {3, 5}, 30001, "generated in the variant's kernel",
                              Params{{"accumulate", "registers"}});
  check_generated_out_of_core(Registry::instance().get("registers-multik"), device,
                              generator("uniform", 100003, 8, 0.3), {3, 5}, 30001, "generated on the device");
  check_generated_out_of_core(Registry::instance().get("naive-atomics"), device,
                              generator("uniform", 100003, 8, 0.4), {3, 3}, 4099, "generated on the device");
  check_generated_out_of_core(Registry::instance().get("naive-atomics"), device, generator("blobs", 100003, 7, 0),
                              {3, 5}, 30001, "staged");
}

TEST(OutOfCoreGpu, AMappedNpyIsStagedNotPageLockedAndGivesTheInCoreSteps) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  const DeviceInfo device = query_device(0);
  const Variant& variant = Registry::instance().get("naive-atomics");
  TempFolder folder("ooc_mapped_gpu");
  const std::string file = folder.file("points.npy");
  save_npy(file, blobs(100003, 8, 4));
  const Dataset copied = load_npy(file);
  const Dataset mapped = load_npy_mapped(file);
  const KRange k{3, 5};
  const Problem problem = problem_of(copied, k);
  std::unique_ptr<PreparedRun> in_core =
      variant.prepare(problem, copied, resolve_params(variant, problem, device, Params::object()), device);
  std::unique_ptr<ChunkedRun> chunked =
      prepare_chunked(variant, problem, chunk_source_of(mapped), 30001,
                      resolve_params(variant, chunk_problem(problem, 30001), device, Params::object()), device);
  EXPECT_EQ(chunked->info().transfer, "staged");
  std::vector<float> centroids = initial_centroids(mapped, k, InitMethod::FirstK, 0);
  for (int step = 1; step <= 3; ++step) {
    expect_same_step(*chunked, *in_core, mapped, k, centroids, step);
    centroids = packed(chunked->read_back());
  }
}

}  // namespace
}  // namespace mk
