// Memory planning before any allocation (issue 38, "No OOM kill"): the host's limit read
// from the cgroup (v2 memory.max, v1 memory.limit_in_bytes) before MemTotal, the planner's
// verdicts against faked host and GPU sizes, and the commands refusing before they allocate.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "core/byte_size.hpp"
#include "core/errors.hpp"
#include "core/host_memory.hpp"
#include "harness/memory_plan.hpp"
#include "process_helpers.hpp"
#include "synthetic_devices.hpp"

namespace mk {

// variants/auto_select.cpp (no header: the registry is the variants' interface).
std::pair<std::string, std::string> choose_auto_delegate(const Problem& problem, const DeviceInfo& device,
                                                         double sparse_threshold);

namespace {

using testing_support::h100_like;
namespace fs = std::filesystem;
using testing_support::read_text;
using testing_support::run_mkbench_args;
using testing_support::TempFolder;

constexpr int64_t GiB = int64_t(1) << 30;

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// ------------------------------------------------------------------ reading the host's limit

TEST(HostMemoryLimit, CgroupFilesParseMaxNumbersAndV1Unlimited) {
  EXPECT_FALSE(parse_cgroup_memory_limit("max\n").has_value());
  EXPECT_EQ(parse_cgroup_memory_limit("8589934592\n"), int64_t(8) << 30);
  EXPECT_EQ(parse_cgroup_memory_limit("  137438953472"), int64_t(128) << 30);
  EXPECT_FALSE(parse_cgroup_memory_limit("9223372036854771712\n").has_value());  // v1: no limit
  EXPECT_FALSE(parse_cgroup_memory_limit("").has_value());
  EXPECT_FALSE(parse_cgroup_memory_limit("12G").has_value());
  EXPECT_FALSE(parse_cgroup_memory_limit("-1").has_value());
  EXPECT_FALSE(parse_cgroup_memory_limit("0").has_value());
}

TEST(HostMemoryLimit, MemInfoTotalIsInKibibytes) {
  EXPECT_EQ(parse_meminfo_total("MemFree: 1 kB\nMemTotal:       32505856 kB\n"), int64_t(32505856) * 1024);
  EXPECT_FALSE(parse_meminfo_total("MemFree: 1 kB\n").has_value());
  EXPECT_FALSE(parse_meminfo_total("MemTotal: lots kB\n").has_value());
}

struct FakeHost {
  TempFolder folder{"host_memory"};
  HostMemorySources sources() const {
    return {folder.file("proc_self_cgroup"), folder.file("cgroup"), folder.file("meminfo")};
  }
  void cgroup(const std::string& text) const { write_file(folder.file("proc_self_cgroup"), text); }
  void file(const std::string& relative, const std::string& text) const {
    write_file(folder.path() / "cgroup" / relative, text);
  }
  void meminfo(int64_t bytes) const {
    write_file(folder.file("meminfo"), "MemTotal:       " + std::to_string(bytes / 1024) + " kB\n");
  }
};

TEST(HostMemoryLimit, CgroupV2LimitOfAnAncestorBindsTheProcess) {
  FakeHost host;
  host.cgroup("0::/jobs/job7\n");
  host.file("jobs/job7/memory.max", "max\n");
  host.file("jobs/memory.max", std::to_string(16 * GiB) + "\n");
  host.meminfo(64 * GiB);
  const HostMemoryLimit limit = read_host_memory_limit(host.sources());
  EXPECT_EQ(limit.bytes, 16 * GiB);
  EXPECT_NE(limit.source.find("cgroup v2 memory.max"), std::string::npos) << limit.source;
  EXPECT_NE(limit.source.find("jobs"), std::string::npos) << limit.source;
}

// The lent multi-GPU machines: MemTotal reads 31 GiB at start, the cgroup allows 128 GiB.
TEST(HostMemoryLimit, CgroupLimitWinsOverASmallerMemTotal) {
  FakeHost host;
  host.cgroup("0::/\n");
  host.file("memory.max", std::to_string(128 * GiB) + "\n");
  host.meminfo(31 * GiB);
  EXPECT_EQ(read_host_memory_limit(host.sources()).bytes, 128 * GiB);
}

TEST(HostMemoryLimit, CgroupV1LimitAndItsUnlimitedValue) {
  FakeHost host;
  host.cgroup("5:devices:/\n4:memory:/process_api/abc\n0::/\n");
  host.file("memory/process_api/abc/memory.limit_in_bytes", std::to_string(24 * GiB) + "\n");
  host.file("memory/memory.limit_in_bytes", "9223372036854771712\n");
  host.meminfo(64 * GiB);
  const HostMemoryLimit limit = read_host_memory_limit(host.sources());
  EXPECT_EQ(limit.bytes, 24 * GiB);
  EXPECT_NE(limit.source.find("cgroup v1 memory.limit_in_bytes"), std::string::npos) << limit.source;

  host.file("memory/process_api/abc/memory.limit_in_bytes", "9223372036854771712\n");
  const HostMemoryLimit unlimited = read_host_memory_limit(host.sources());
  EXPECT_EQ(unlimited.bytes, 64 * GiB);
  EXPECT_NE(unlimited.source.find("MemTotal"), std::string::npos) << unlimited.source;
}

TEST(HostMemoryLimit, MissingCgroupFilesFallBackToMemTotalThenToNothing) {
  FakeHost host;
  host.cgroup("0::/user.slice/user-1000.slice/app.scope\n");  // no memory.max anywhere
  host.meminfo(12 * GiB);
  EXPECT_EQ(read_host_memory_limit(host.sources()).bytes, 12 * GiB);

  FakeHost bare;  // not even /proc/self/cgroup or /proc/meminfo
  const HostMemoryLimit nothing = read_host_memory_limit(bare.sources());
  EXPECT_EQ(nothing.bytes, 0);
}

TEST(HostMemoryLimit, ThisMachineHasAReadableLimit) {
  const HostMemoryLimit limit = read_host_memory_limit();
  EXPECT_GT(limit.bytes, int64_t(64) << 20) << limit.source;
  EXPECT_FALSE(limit.source.empty());
}

TEST(ByteSize, BinaryUnitsAndClearErrors) {
  EXPECT_EQ(parse_byte_size("64G"), 64 * GiB);
  EXPECT_EQ(parse_byte_size("64GiB"), 64 * GiB);
  EXPECT_EQ(parse_byte_size("512mb"), int64_t(512) << 20);
  EXPECT_EQ(parse_byte_size("1.5T"), int64_t(1536) * GiB);
  EXPECT_EQ(parse_byte_size("4096"), 4096);
  for (const char* bad : {"", "G", "-1G", "0", "12X", "1GG", " 1G"})
    EXPECT_THROW(parse_byte_size(bad, "--host-memory"), InputError) << bad;
  EXPECT_EQ(format_bytes(double(256 * GiB)), "256.0 GiB");
  EXPECT_EQ(format_bytes(100), "100 B");
}

// ------------------------------------------------------------------ the planner, faked sizes

MemoryLimits host_only(int64_t bytes) {
  MemoryLimits limits;
  limits.host_limit_bytes = bytes;
  limits.host_source = "test";
  return limits;
}

MemoryLimits with_gpu(int64_t host, int64_t gpu_free) {
  MemoryLimits limits = host_only(host);
  limits.gpu = true;
  limits.gpu_free_bytes = gpu_free;
  limits.gpu_total_bytes = 80 * GiB;
  limits.gpu_name = "H100-like (synthetic)";
  limits.gpu_source = "faked";
  return limits;
}

Problem shape(int64_t m, int n, KRange k) {
  Problem problem;
  problem.m = m;
  problem.n = n;
  problem.k = k;
  return problem;
}

// The issue's case: 1G points of 64 dimensions (256 GiB) on a 128 GiB host.
TEST(MemoryPlan, PointsLargerThanTheHostAreRefusedWithExitTwoAndTheWayOut) {
  const DataSource source = describe_data_source("uniform", int64_t(1) << 30, 64);
  EXPECT_EQ(source.host_bytes, 256 * GiB);
  RowWork work;
  work.problem = shape(int64_t(1) << 30, 64, {8, 8});
  const MemoryPlan plan = plan_memory(source, work, DeviceInfo{}, host_only(128 * GiB));
  ASSERT_FALSE(plan.in_core());
  EXPECT_TRUE(plan.host_exceeded);
  EXPECT_FALSE(plan.gpu_exceeded);
  for (const char* text : {"256.0 GiB of host memory", "128.0 GiB limit", "fewer points", "--host-memory"})
    EXPECT_NE(plan.message.find(text), std::string::npos) << text << "\n" << plan.message;
  // 90 % of 128 GiB holds 460.8M points of 64 floats; the message offers a count below that.
  EXPECT_NE(plan.message.find("about 460M of 64 dimensions fit"), std::string::npos) << plan.message;
  try {
    plan.enforce();
    FAIL() << "enforce() accepted a plan over the host's limit";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_code, kExitBadInput);
  }
}

TEST(MemoryPlan, HeadroomIsTenPercentOfTheHostLimit) {
  const DataSource fits = describe_data_source("uniform", 1000, 1000);  // 4,000,000 bytes
  EXPECT_TRUE(plan_memory(fits, RowWork{}, DeviceInfo{}, host_only(4500000)).in_core());
  EXPECT_FALSE(plan_memory(fits, RowWork{}, DeviceInfo{}, host_only(4400000)).in_core());
  EXPECT_TRUE(plan_memory(fits, RowWork{}, DeviceInfo{}, host_only(0)).in_core()) << "an unknown limit is not checked";
}

TEST(MemoryPlan, VerificationAddsTheFp64ReferenceToTheHost) {
  const int64_t m = int64_t(1) << 20;
  const DataSource source = describe_data_source("uniform", m, 8);
  RowWork work;
  work.problem = shape(m, 8, {3, 7});
  const int64_t without = plan_memory(source, work, DeviceInfo{}, host_only(0)).host.total();
  work.verify = work.labels = true;
  const int64_t with = plan_memory(source, work, DeviceInfo{}, host_only(0)).host.total();
  EXPECT_EQ(without, m * 8 * 4);
  EXPECT_EQ(with - without, 5 * m * (20 + 4)) << "labels, best and second per point and K, and the labels read back";
}

TEST(MemoryPlan, CpuVariantsChargeTheirCopyToTheHost) {
  const Variant& cpu = Registry::instance().get("cpu-openmp");
  const int64_t m = int64_t(1) << 20;
  RowWork work{&cpu, shape(m, 8, {3, 7}), Params::object(), false, false};
  const MemoryPlan plan = plan_memory(describe_data_source("uniform", m, 8), work, DeviceInfo{}, host_only(0));
  EXPECT_GE(plan.host.total(), 2 * m * 8 * 4) << plan.host.describe();
  EXPECT_EQ(plan.gpu.total(), 0);
}

TEST(MemoryPlan, GpuFreeMemoryNotTotalDecidesAndRefusesWithExitThree) {
  // gemm-tf32x3 converts the points when it prepares, so it cannot stream them either.
  const Variant& gemm = Registry::instance().get("gemm-tf32x3");
  const int64_t m = int64_t(64) << 20;  // 64M × 8 floats: 2 GiB of points
  RowWork work{&gemm, shape(m, 8, {3, 7}), Params::object(), false, false};
  const DataSource source = describe_data_source("uniform", m, 8);
  const DeviceInfo device = h100_like();  // 80 GiB in total

  const MemoryPlan roomy = plan_memory(source, work, device, with_gpu(64 * GiB, 40 * GiB));
  EXPECT_TRUE(roomy.in_core()) << roomy.message;
  EXPECT_GE(roomy.gpu.total(), 2 * GiB);

  const MemoryPlan tight = plan_memory(source, work, device, with_gpu(64 * GiB, 1 * GiB));
  ASSERT_FALSE(tight.in_core());
  EXPECT_TRUE(tight.gpu_exceeded);
  EXPECT_FALSE(tight.host_exceeded);
  for (const char* text : {"of GPU memory", "1.0 GiB free by faked", "80.0 GiB", "fewer points", "points 2.0 GiB",
                           "gemm-tf32x3 cannot stream its points"})
    EXPECT_NE(tight.message.find(text), std::string::npos) << text << "\n" << tight.message;
  try {
    tight.enforce();
    FAIL() << "enforce() accepted a plan over the GPU's free memory";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_code, kExitUnsupported);
  }
}

TEST(MemoryPlan, TheReserveStaysFreeOnTheGpu) {
  const Variant& naive = Registry::instance().get("naive-atomics");
  RowWork work{&naive, shape(1 << 20, 8, {3, 7}), Params::object(), false, false};
  const DataSource source = describe_data_source("uniform", 1 << 20, 8);
  const int64_t need = plan_memory(source, work, h100_like(), with_gpu(0, 80 * GiB)).gpu.total();
  EXPECT_TRUE(plan_memory(source, work, h100_like(), with_gpu(0, need + kGpuReserveBytes)).in_core());
  EXPECT_FALSE(plan_memory(source, work, h100_like(), with_gpu(0, need + kGpuReserveBytes - 1)).in_core());
}

// ------------------------------------------------------------------ out of core (issue 34)

TEST(MemoryPlanOutOfCore, PointsLargerThanTheGpuStreamInTheLargestChunksThatFit) {
  const Variant& naive = Registry::instance().get("naive-atomics");
  const int64_t m = int64_t(64) << 20;  // 2 GiB of points against 1 GiB free
  RowWork work{&naive, shape(m, 8, {3, 7}), Params::object(), false, false};
  const DataSource source = describe_data_source("uniform", m, 8);
  const MemoryLimits limits = with_gpu(64 * GiB, 1 * GiB);
  const MemoryPlan plan = plan_memory(source, work, h100_like(), limits);
  ASSERT_TRUE(plan.out_of_core()) << plan.message;
  EXPECT_TRUE(plan.runs());
  EXPECT_NO_THROW(plan.enforce());
  EXPECT_FALSE(plan.gpu_exceeded);
  EXPECT_LE(plan.gpu.total(), plan.gpu_usable) << plan.gpu.describe();
  EXPECT_GE(plan.chunks, 5) << "two chunk slots in 1 GiB less the reserve hold under 2 GiB / 5";
  EXPECT_EQ(plan.chunk_points % 1024, 0);
  EXPECT_EQ(plan.chunks, (m + plan.chunk_points - 1) / plan.chunk_points);
  EXPECT_NE(plan.gpu.describe().find("chunk slot 1"), std::string::npos) << plan.gpu.describe();
  EXPECT_NE(plan.host.describe().find("pinned staging"), std::string::npos) << plan.host.describe();
  EXPECT_NE(plan.summary().find("out of core"), std::string::npos);
  // Twice as large chunks would not have fitted: the planner took (nearly) the largest.
  const int64_t doubled = 2 * plan.chunk_points;
  RowWork forced = work;
  forced.chunk_points = doubled;
  EXPECT_FALSE(plan_memory(source, forced, h100_like(), limits).runs()) << "chunks of " << doubled << " fitted";
}

TEST(MemoryPlanOutOfCore, ChunkPointsForceStreamingWhereTheDataWouldFit) {
  const Variant& naive = Registry::instance().get("naive-atomics");
  RowWork work{&naive, shape(100000, 8, {3, 3}), Params::object(), false, false};
  const DataSource source = describe_data_source("uniform", 100000, 8);
  EXPECT_TRUE(plan_memory(source, work, h100_like(), with_gpu(0, 40 * GiB)).in_core());
  work.chunk_points = 30001;
  const MemoryPlan plan = plan_memory(source, work, h100_like(), with_gpu(0, 40 * GiB));
  ASSERT_TRUE(plan.out_of_core()) << plan.message;
  EXPECT_EQ(plan.chunk_points, 30001);
  EXPECT_EQ(plan.chunks, 4);
  work.chunk_points = 0;
  work.out_of_core = true;
  const MemoryPlan largest = plan_memory(source, work, h100_like(), with_gpu(0, 40 * GiB));
  ASSERT_TRUE(largest.out_of_core()) << largest.message;
  EXPECT_EQ(largest.chunks, 1) << "all 100000 points fit one chunk";
}

TEST(MemoryPlanOutOfCore, VariantsThatCannotStreamAreRefusedWithTheReason) {
  const Variant& tensor = Registry::instance().get("tensor-multik");
  RowWork work{&tensor, shape(100000, 8, {3, 7}), Params::object(), false, false};
  work.chunk_points = 30000;
  const MemoryPlan plan = plan_memory(describe_data_source("uniform", 100000, 8), work, h100_like(), with_gpu(0, 40 * GiB));
  ASSERT_EQ(plan.mode, PlanMode::Refused);
  EXPECT_NE(plan.message.find("out of core was asked for"), std::string::npos) << plan.message;
  EXPECT_NE(plan.message.find("tensor-multik cannot stream its points"), std::string::npos) << plan.message;
  EXPECT_THROW(plan.enforce(), UnsupportedError);
}

TEST(MemoryPlanOutOfCore, CpuVariantStreamsWhenItsCopyWouldNotFitTheHost) {
  // cpu-openmp copies the points in core (2 × 38.4 MB with the caller's); out of core it
  // holds one chunk. 80 MB (72 MB usable) lies between the two.
  const Variant& cpu = Registry::instance().get("cpu-openmp");
  const int64_t m = 300000;
  RowWork work{&cpu, shape(m, 32, {3, 4}), Params::object(), false, false};
  const DataSource source = held_whole(describe_data_source("uniform", m, 32));  // run --hold-points
  const MemoryPlan plan = plan_memory(source, work, DeviceInfo{}, host_only(80000000));
  ASSERT_TRUE(plan.out_of_core()) << plan.message;
  EXPECT_GE(plan.chunks, 2);
  EXPECT_LE(plan.host.total(), plan.host_usable) << plan.host.describe();
  EXPECT_EQ(plan.gpu.total(), 0);
  // Below the points themselves nothing streams: they stay whole in host memory.
  const MemoryPlan refused = plan_memory(source, work, DeviceInfo{}, host_only(40000000));
  EXPECT_EQ(refused.mode, PlanMode::Refused);
  EXPECT_TRUE(refused.host_exceeded);
  // Unless nothing holds them: a generator's chunks generated where they are read.
  const MemoryPlan generated =
      plan_memory(describe_data_source("uniform", m, 32), work, DeviceInfo{}, host_only(40000000));
  EXPECT_TRUE(generated.out_of_core()) << generated.message;
}

TEST(DeviceFootprint, LayoutLabelsAndPreparedOperandsAreCounted) {
  const int64_t m = int64_t(1) << 20;
  const Problem problem = shape(m, 8, {3, 7});
  const double points = double(m) * 8 * 4;
  const DeviceFootprint aos = lloyd_state_footprint(problem, Layout::AoS, false);
  const DeviceFootprint soa = lloyd_state_footprint(problem, Layout::SoA, false);
  const DeviceFootprint labelled = lloyd_state_footprint(problem, Layout::AoS, true);
  EXPECT_EQ(soa.total() - aos.total(), int64_t(points)) << "the SoA transpose's staging copy";
  EXPECT_EQ(labelled.total() - aos.total(), 5 * m * 4) << "one int32 label per point and K";

  const Variant& tensor = Registry::instance().get("tensor-multik");
  const DeviceInfo device = h100_like();
  Params params = tensor.default_params(problem, device);
  params["operands"] = "prepared";
  params["fetch"] = "registers";
  const DeviceFootprint prepared = tensor.device_footprint(problem, params, device, false);
  params["operands"] = "rows";
  const DeviceFootprint rows = tensor.device_footprint(problem, params, device, false);
  EXPECT_EQ(prepared.total() - rows.total(), int64_t(points) + m * 4) << prepared.describe();
  EXPECT_NE(prepared.describe().find("prepared operands"), std::string::npos) << prepared.describe();
}

TEST(DeviceFootprint, AutoPlansWithItsDelegate) {
  const Variant& automatic = Registry::instance().get("auto");
  const Problem problem = shape(1 << 20, 8, {3, 7});
  const DeviceInfo device = h100_like();
  const auto [delegate, reason] = choose_auto_delegate(problem, device, 0.7);
  ASSERT_FALSE(delegate.empty()) << reason;
  const Variant& chosen = Registry::instance().get(delegate);
  EXPECT_EQ(automatic.device_footprint(problem, automatic.default_params(problem, device), device, true).total(),
            chosen.device_footprint(problem, resolve_params(chosen, problem, device, Params::object()), device, true)
                .total());
}

TEST(DataSource, FilesAreSizedFromTheNpyHeaderAndTheCsvText) {
  TempFolder folder("data_source");
  Dataset data;
  data.m = 1000;
  data.n = 3;
  data.values.assign(3000, 1.5f);
  save_npy(folder.file("x.npy"), data);
  const DataSource npy = describe_data_source("npy:" + folder.file("x.npy"), 0, 0);
  EXPECT_EQ(npy.m, 1000);
  EXPECT_EQ(npy.n, 3);
  EXPECT_EQ(npy.host_bytes, 12000);

  write_file(folder.file("x.csv"), std::string(1000, '1'));
  const DataSource csv = describe_data_source("csv:" + folder.file("x.csv") + ":header:label=0", 0, 0);
  EXPECT_EQ(csv.m, 0) << "a CSV's shape is known once parsed";
  EXPECT_EQ(csv.host_bytes, 3000) << "the text and at most one float per two bytes of it";
}

// ------------------------------------------------------------------ the commands

// Under --verify the FP64 reference reads every point, so a generator's are made whole (without
// it they would be generated chunk by chunk: tests/test_out_of_core.cpp).
TEST(MemoryPlanCommand, RunRefusesPointsLargerThanTheHostBeforeMakingThem) {
  const auto start = std::chrono::steady_clock::now();
  const auto result = run_mkbench_args({"run", "--variant", "cpu-openmp", "--dims", "64", "--points", "1G", "--k", "8",
                                        "--verify", "--host-memory", "128G"},
                                       {}, 60);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(result.exit_code, kExitBadInput) << result.output;
  EXPECT_EQ(result.signal, 0) << result.output;
  EXPECT_NE(result.output.find("of host memory"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("128.0 GiB limit (--host-memory"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("fewer points"), std::string::npos) << result.output;
  EXPECT_LT(seconds, 30) << "256 GiB of points were being generated";
}

TEST(MemoryPlanCommand, HostMemoryIsAGlobalOptionAndItsSizeIsChecked) {
  const auto before = run_mkbench_args({"--host-memory", "1G", "run", "--variant", "cpu-openmp", "--dims", "64",
                                        "--points", "16M", "--k", "8", "--verify"},
                                       {}, 60);
  EXPECT_EQ(before.exit_code, kExitBadInput) << before.output;
  EXPECT_NE(before.output.find("1.0 GiB limit (--host-memory"), std::string::npos) << before.output;

  const auto fits = run_mkbench_args({"run", "--variant", "cpu-openmp", "--dims", "4", "--points", "1K", "--k", "3",
                                      "--iters", "2", "--warmup", "0", "--host-memory", "1G"},
                                     {}, 60);
  EXPECT_EQ(fits.exit_code, kExitOk) << fits.output;

  const auto bad = run_mkbench_args({"run", "--variant", "cpu-openmp", "--points", "1K", "--host-memory", "lots"});
  EXPECT_EQ(bad.exit_code, kExitBadInput) << bad.output;
  EXPECT_NE(bad.output.find("--host-memory must be a size"), std::string::npos) << bad.output;
}

TEST(MemoryPlanCommand, SuiteAndTuneRefuseBeforeTheFirstRow) {
  TempFolder folder("plan_suite");
  write_file(folder.file("big.json"), R"({"name": "big", "dataset": "uniform", "iters": 2, "warmup": 0,
    "cases": [{"dims": [4], "k": ["3"], "points": ["1K"], "variants": ["cpu-openmp"]},
              {"dims": [64], "k": ["8"], "points": ["1G"], "variants": ["cpu-openmp"], "verify": true}]})");
  const auto suite = run_mkbench_args(
      {"suite", folder.file("big.json"), "--out", folder.file("r.json"), "--host-memory", "64G"}, {}, 60);
  EXPECT_EQ(suite.exit_code, kExitBadInput) << suite.output;
  EXPECT_NE(suite.output.find("of host memory"), std::string::npos) << suite.output;
  EXPECT_FALSE(fs::exists(folder.file("r.json"))) << "a row was measured before the plan was checked";

  const auto tune = run_mkbench_args({"tune", "--dims", "64", "--k", "8", "--points", "1G", "--variants",
                                      "cpu-openmp", "--cache", folder.file("c.jsonl"), "--config-out",
                                      folder.file("cfg.json"), "--host-memory", "64G"},
                                     {}, 60);
  EXPECT_EQ(tune.exit_code, kExitBadInput) << tune.output;
  EXPECT_NE(tune.output.find("of host memory"), std::string::npos) << tune.output;
}

// ------------------------------------------------------------------ on a GPU

TEST(MemoryPlanGpu, FreeMemoryIsReadAndAProblemLargerThanItStreamsOrIsRefused) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  const DeviceInfo device = query_device(0);
  MemoryLimits limits = current_memory_limits(device);
  ASSERT_TRUE(limits.gpu);
  EXPECT_GT(limits.gpu_free_bytes, 0);
  EXPECT_LE(limits.gpu_free_bytes, limits.gpu_total_bytes);
  // The GPU's free memory is what this test checks: the host's limit is left unchecked, since a
  // host may hold less than its GPU (the H200 machine: 128 GiB of host memory, 139.8 GiB GPU).
  limits.host_limit_bytes = 0;
  const int64_t m = (limits.gpu_free_bytes + GiB) / (8 * 4);
  const DataSource source = describe_data_source("uniform", m, 8);
  // naive-atomics streams the points (out of core); gemm-tf32x3 converts them when it
  // prepares, so it cannot, and is refused.
  RowWork naive{&Registry::instance().get("naive-atomics"), shape(m, 8, {3, 7}), Params::object(), false, false};
  const MemoryPlan streamed = plan_memory(source, naive, device, limits);
  EXPECT_TRUE(streamed.out_of_core()) << streamed.message;
  EXPECT_LE(streamed.gpu.total(), streamed.gpu_usable) << streamed.gpu.describe();
  RowWork gemm{&Registry::instance().get("gemm-tf32x3"), shape(m, 8, {3, 7}), Params::object(), false, false};
  const MemoryPlan refused = plan_memory(source, gemm, device, limits);
  EXPECT_EQ(refused.mode, PlanMode::Refused);
  EXPECT_TRUE(refused.gpu_exceeded) << refused.gpu.describe();
}

TEST(MemoryPlanGpu, RunStreamsOrRefusesWhatTheFreeMemoryCannotHold) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  const auto result = run_mkbench_args({"run", "--variant", "gemm-tf32x3", "--dims", "8", "--points", "64M", "--k",
                                        "3..7", "--iters", "2", "--no-peak-measure"},
                                       {"MKBENCH_FAKE_GPU_FREE_BYTES=1G"}, 120);
  EXPECT_EQ(result.exit_code, kExitUnsupported) << result.output;
  EXPECT_NE(result.output.find("1.0 GiB free by MKBENCH_FAKE_GPU_FREE_BYTES"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("gemm-tf32x3 cannot stream its points"), std::string::npos) << result.output;

  // The planner chooses out of core on its own for a variant that streams.
  const auto streamed = run_mkbench_args({"run", "--variant", "naive-atomics", "--dims", "8", "--points", "64M", "--k",
                                          "3..7", "--iters", "2", "--no-peak-measure", "--format", "json"},
                                         {"MKBENCH_FAKE_GPU_FREE_BYTES=1G"}, 120);
  EXPECT_EQ(streamed.exit_code, kExitOk) << streamed.output;
  EXPECT_NE(streamed.output.find("\"out_of_core\""), std::string::npos) << streamed.output;
  EXPECT_NE(streamed.output.find("\"generated on the device\""), std::string::npos) << streamed.output;

  // The issue's command under --verify (the reference holds every point), with the host's limit
  // pinned to the single-GPU machines' 128 GiB.
  const auto issue = run_mkbench_args({"run", "--variant", "auto", "--dims", "64", "--points", "1G", "--k", "8",
                                       "--verify", "--no-peak-measure", "--host-memory", "128G"},
                                      {}, 120);
  EXPECT_EQ(issue.exit_code, kExitBadInput) << issue.output;
  EXPECT_NE(issue.output.find("of host memory"), std::string::npos) << issue.output;
}

}  // namespace
}  // namespace mk
