// Data-parallel Lloyd through the communicator interface (harness/parallel/, docs/multi-gpu.md),
// on the host: the rows split into contiguous shards, the in-process group sums in rank order
// and stops waiting when a peer fails, and a ShardedRun of cpu-openmp over 1, 2, 3 and 7
// shards (M not divisible by 7) gives the labels and centroids of the unsharded run. The
// expectations come from the unsharded run and the FP64 reference, never from the code under test.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <future>
#include <thread>

#include "datasets/dataset.hpp"
#include "harness/metrics.hpp"
#include "harness/parallel/in_process_communicator.hpp"
#include "harness/parallel/placement.hpp"
#include "harness/parallel/sharded_run.hpp"
#include "harness/parallel/sharded_variant.hpp"
#include "harness/reference.hpp"
#include "harness/results.hpp"

namespace mk {
namespace {

// Sets an environment variable for one test and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) unsetenv(name_);
    else setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

Dataset blobs(int64_t m, int n, uint64_t seed) {
  GeneratorSpec spec;
  spec.kind = "blobs";
  spec.m = m;
  spec.n = n;
  spec.centers = 6;
  spec.seed = seed;
  return generate(spec);
}

Problem problem_of(const Dataset& data, KRange k) {
  Problem p;
  p.m = data.m;
  p.n = data.n;
  p.k = k;
  return p;
}

std::vector<LocalShard> host_shards(int count) {
  std::vector<LocalShard> shards;
  for (auto& endpoint : make_in_process_group(count)) {
    LocalShard shard;
    shard.comm = std::move(endpoint);
    shard.device = query_host_cpu();
    shards.push_back(std::move(shard));
  }
  return shards;
}

std::vector<float> pack(const IterationResult& result) {
  std::vector<float> packed;
  for (const auto& k : result.per_k) packed.insert(packed.end(), k.centroids.begin(), k.centroids.end());
  return packed;
}

// Equal, or neighbours: the closest floats on either side.
bool within_one_ulp(float a, float b) { return a == b || std::nextafter(a, b) == b; }

TEST(SplitRows, CoversEveryRowOnceInContiguousNearlyEqualRanges) {
  for (int64_t m : {1, 7, 10, 2003, 1000000}) {
    for (int shards : {1, 2, 3, 7}) {
      if (shards > m) continue;
      const auto ranges = split_rows(m, shards);
      ASSERT_EQ(ranges.size(), size_t(shards));
      int64_t next = 0, smallest = m, largest = 0;
      for (const auto& r : ranges) {
        EXPECT_EQ(r.begin, next) << "m=" << m << " shards=" << shards;
        next = r.end;
        smallest = std::min(smallest, r.size());
        largest = std::max(largest, r.size());
      }
      EXPECT_EQ(next, m);
      EXPECT_LE(largest - smallest, 1);
    }
  }
  EXPECT_THROW(split_rows(3, 4), UnsupportedError);
  EXPECT_THROW(split_rows(10, 0), InputError);
}

TEST(InProcessGroup, SumsInRankOrderAndBroadcastsFromTheRoot) {
  auto group = make_in_process_group(3);
  std::vector<std::vector<double>> values = {{1, 2}, {10, 20}, {100, 200}};
  std::vector<std::vector<unsigned long long>> counts = {{1}, {2}, {3}};
  std::vector<std::vector<int>> bytes = {{0, 0}, {7, 8}, {0, 0}};
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      group[r]->all_reduce_sum(values[r].data(), 2, nullptr);
      group[r]->all_reduce_sum(counts[r].data(), 1, nullptr);
      group[r]->broadcast(bytes[r].data(), 2 * sizeof(int), 1);
      group[r]->barrier();
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(values[r], (std::vector<double>{111, 222}));
    EXPECT_EQ(counts[r], (std::vector<unsigned long long>{6}));
    EXPECT_EQ(bytes[r], (std::vector<int>{7, 8}));
    EXPECT_EQ(group[r]->rank(), r);
    EXPECT_EQ(group[r]->size(), 3);
  }
}

TEST(InProcessGroup, AbortReleasesARankWaitingForItsPeers) {
  auto group = make_in_process_group(2);
  auto waiting = std::async(std::launch::async, [&] {
    double value = 1;
    group[0]->all_reduce_sum(&value, 1, nullptr);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  group[1]->abort("rank 1 failed: test");
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "rank 0 still waits";
  try {
    waiting.get();
    FAIL() << "the waiting rank returned as if its peers had arrived";
  } catch (const CollectiveAborted& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 failed: test"), std::string::npos) << e.what();
  }
}

TEST(InProcessGroup, ARankStopsWaitingAfterTheTimeout) {
  ScopedEnv timeout("MKBENCH_COLLECTIVE_TIMEOUT_S", "0.3");
  auto group = make_in_process_group(2);
  const auto start = std::chrono::steady_clock::now();
  double value = 1;
  EXPECT_THROW(group[0]->all_reduce_sum(&value, 1, nullptr), CollectiveAborted);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  // The group is aborted for the late peer too: it does not wait for a rank that gave up.
  EXPECT_THROW(group[1]->barrier(), CollectiveAborted);
}

TEST(CollectiveTimeout, RejectsAMalformedValue) {
  ScopedEnv timeout("MKBENCH_COLLECTIVE_TIMEOUT_S", "soon");
  EXPECT_THROW(collective_timeout(), InputError);
}

// The claim of the sharded run: over any shard count, each step from the same centroids
// assigns every point the same label and gives the same counts as one shard, and centroids
// equal to within one float ulp. Why not bit-equal: the FP64 sums of a shard count add the
// points in another order (cpu-openmp's threads already do, run to run), which can move a
// sum by an FP64 ulp; the division then rounds to float, which once in a while lands that
// change on the other side of a float rounding boundary. Each step also passes the FP64
// reference. The steps start from the unsharded run's centroids so a 1-ulp difference
// cannot grow into a different trajectory.
TEST(ShardedRun, AnyShardCountGivesTheLabelsAndCentroidsOfOneShard) {
  const Dataset data = blobs(2003, 4, 11);  // 2003 = 7 * 286 + 1: no shard count divides it
  const KRange k{3, 6};
  const Problem problem = problem_of(data, k);
  const Variant& variant = Registry::instance().get("cpu-openmp");
  const DeviceInfo host = query_host_cpu();
  const Params params = resolve_params(variant, problem, host, Params::object());
  auto single = variant.prepare(problem, data, params, host);
  std::vector<float> centroids = initial_centroids(data, k, InitMethod::FirstK, 1);

  for (int shards : {1, 2, 3, 7}) {
    SCOPED_TRACE("shards=" + std::to_string(shards));
    ShardedRun sharded(variant, problem, data, params, host_shards(shards));
    EXPECT_EQ(sharded.total_shards(), shards);
    std::vector<float> start = centroids;
    for (int step = 0; step < 6; ++step) {
      single->set_centroids(start);
      single->iterate(true);
      const IterationResult want = single->read_back();
      sharded.set_centroids(start);
      sharded.iterate(true);
      const IterationResult got = sharded.read_back();
      ASSERT_EQ(got.per_k.size(), want.per_k.size());
      for (size_t i = 0; i < want.per_k.size(); ++i) {
        const KResult& w = want.per_k[i];
        const KResult& g = got.per_k[i];
        ASSERT_EQ(g.labels, w.labels) << "step " << step << " K=" << w.k;
        EXPECT_EQ(g.counts, w.counts) << "step " << step << " K=" << w.k;
        ASSERT_EQ(g.centroids.size(), w.centroids.size());
        for (size_t j = 0; j < w.centroids.size(); ++j)
          EXPECT_TRUE(within_one_ulp(g.centroids[j], w.centroids[j]))
              << "step " << step << " K=" << w.k << " value " << j << ": " << g.centroids[j] << " vs "
              << w.centroids[j];
        EXPECT_NEAR(g.inertia, w.inertia, 1e-12 * w.inertia) << "step " << step << " K=" << w.k;
      }
      const VerifyReport report = compare_with_reference(data, k, start, got);
      EXPECT_TRUE(report.passed) << report.summary();
      start = pack(want);
    }
  }
}

TEST(ShardedRun, AccumulateLeavesTheWholeDatasSumsOnEveryShard) {
  const Dataset data = blobs(1001, 3, 5);
  const KRange k{3, 5};
  const Problem problem = problem_of(data, k);
  const Variant& variant = Registry::instance().get("cpu-openmp");
  const DeviceInfo host = query_host_cpu();
  ShardedRun run(variant, problem, data, resolve_params(variant, problem, host, Params::object()), host_shards(3));
  run.set_centroids(initial_centroids(data, k, InitMethod::FirstK, 1));
  run.accumulate(AccumulateOptions{});
  const AccumulatorRefs refs = run.accumulators();
  ASSERT_FALSE(refs.on_device);
  // Every point is counted once per K: M, not the shard's share.
  for (int kk = k.kmin; kk <= k.kmax; ++kk) {
    unsigned long long total = 0;
    for (int c = 0; c < kk; ++c) total += refs.counts[k.slot_offset(kk) + c];
    EXPECT_EQ(total, static_cast<unsigned long long>(data.m)) << "K=" << kk;
  }
  // The sums of one coordinate over every cluster of a K are the data's column sum.
  double column = 0;
  for (int64_t i = 0; i < data.m; ++i) column += data.at(i, 0);
  double summed = 0;
  for (int c = 0; c < k.kmin; ++c) summed += refs.sums[size_t(c) * data.n];
  EXPECT_NEAR(summed, column, 1e-9 * std::abs(column) + 1e-9);
  const StepSummary summary = run.update(UpdateOptions{});
  EXPECT_EQ(summary.per_k.size(), size_t(k.count()));
}

TEST(ShardedRun, RefusesEmptyClusterPoliciesThatWouldPartTheShardsOnlyWhenAClusterIsEmpty) {
  const Dataset data = blobs(300, 2, 3);
  const Problem problem = problem_of(data, KRange{3, 3});
  const Variant& variant = Registry::instance().get("cpu-openmp");
  const DeviceInfo host = query_host_cpu();
  const Params params = resolve_params(variant, problem, host, Params::object());
  UpdateOptions farthest;
  farthest.empty = EmptyPolicy::Farthest;
  // No cluster empty: farthest is keep, on two shards as on one.
  const std::vector<float> start = initial_centroids(data, problem.k, InitMethod::FirstK, 1);
  ShardedRun two(variant, problem, data, params, host_shards(2));
  ShardedRun one(variant, problem, data, params, host_shards(1));
  for (ShardedRun* run : {&two, &one}) {
    run->set_centroids(start);
    run->accumulate(AccumulateOptions{});
  }
  const StepSummary step = two.update(farthest);
  EXPECT_EQ(step.per_k.at(0).empty, 0);
  one.update(UpdateOptions{});
  two.synchronize();
  one.synchronize();
  const std::vector<float> sharded = pack(two.read_back()), single = pack(one.read_back());
  ASSERT_EQ(sharded.size(), single.size());
  for (size_t i = 0; i < sharded.size(); ++i) EXPECT_TRUE(within_one_ulp(sharded[i], single[i])) << i;
  // A centre far from every point receives none: two shards refuse, one relocates it.
  std::vector<float> stranded = start;
  stranded[2 * size_t(data.n)] = 1e6f;
  ShardedRun two_stranded(variant, problem, data, params, host_shards(2));
  two_stranded.set_centroids(stranded);
  two_stranded.accumulate(AccumulateOptions{});
  EXPECT_THROW(two_stranded.update(farthest), UnsupportedError);
  ShardedRun one_stranded(variant, problem, data, params, host_shards(1));
  one_stranded.set_centroids(stranded);
  one_stranded.accumulate(AccumulateOptions{});
  EXPECT_EQ(one_stranded.update(farthest).per_k.at(0).relocated, 1);
}

TEST(ShardedRun, AFailingShardStopsTheOthersWithItsOwnError) {
  ScopedEnv fault("MKBENCH_FAULT_SHARD", "1:2");
  ScopedEnv timeout("MKBENCH_COLLECTIVE_TIMEOUT_S", "60");
  const Dataset data = blobs(900, 3, 7);
  const Problem problem = problem_of(data, KRange{3, 4});
  const Variant& variant = Registry::instance().get("cpu-openmp");
  const DeviceInfo host = query_host_cpu();
  ShardedRun run(variant, problem, data, resolve_params(variant, problem, host, Params::object()), host_shards(3));
  run.set_centroids(initial_centroids(data, problem.k, InitMethod::FirstK, 1));
  run.iterate(false);  // step 1 of every shard
  const auto start = std::chrono::steady_clock::now();
  try {
    run.iterate(false);
    FAIL() << "the step with a failing shard returned";
  } catch (const CollectiveAborted& e) {
    FAIL() << "reported a peer's echo instead of the failure: " << e.what();
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("shard 1 failed at step 2"), std::string::npos) << e.what();
  }
  // The peers were released by the abort, not by the 60 s timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_THROW(run.iterate(false), DeviceError);  // the group stays stopped
}

// A variant that refuses the first shard's rows only, to show the refusal reaches every rank.
class RefusesTheLargestShard : public Variant {
 public:
  explicit RefusesTheLargestShard(const Variant& inner, int64_t refused_m) : inner_(inner), refused_m_(refused_m) {}
  std::string name() const override { return "refuses-largest-shard"; }
  std::string description() const override { return "test double"; }
  bool runs_on_gpu() const override { return false; }
  std::optional<std::string> can_implement(const Problem& p, const DeviceInfo& d) const override {
    return inner_.can_implement(p, d);
  }
  ParamSpace param_space(const Problem& p, const DeviceInfo& d) const override { return inner_.param_space(p, d); }
  Params default_params(const Problem& p, const DeviceInfo& d) const override { return inner_.default_params(p, d); }
  std::unique_ptr<PreparedRun> prepare(const Problem& p, const Dataset& data, const Params& params,
                                       const DeviceInfo& d) const override {
    if (p.m == refused_m_) throw UnsupportedError("cannot take " + std::to_string(p.m) + " rows");
    return inner_.prepare(p, data, params, d);
  }

 private:
  const Variant& inner_;
  int64_t refused_m_;
};

TEST(ShardedRun, AShardThatCannotPrepareRefusesTheWholeRun) {
  const Dataset data = blobs(10, 2, 1);  // shards of 4, 3 and 3 rows
  const Problem problem = problem_of(data, KRange{2, 2});
  const Variant& cpu = Registry::instance().get("cpu-openmp");
  const RefusesTheLargestShard variant(cpu, 4);
  const DeviceInfo host = query_host_cpu();
  try {
    ShardedRun run(variant, problem, data, resolve_params(cpu, problem, host, Params::object()), host_shards(3));
    FAIL() << "a run with a refused shard was made";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("shard 0: cannot take 4 rows"), std::string::npos) << e.what();
  }
}

TEST(ShardedRun, ReportsEveryShardsRowsAndTheReducedBytes) {
  const Dataset data = blobs(701, 4, 2);
  const KRange k{3, 7};
  const Problem problem = problem_of(data, k);
  const Variant& variant = Registry::instance().get("cpu-openmp");
  const DeviceInfo host = query_host_cpu();
  ShardedRun run(variant, problem, data, resolve_params(variant, problem, host, Params::object()), host_shards(3));
  run.set_centroids(initial_centroids(data, k, InitMethod::FirstK, 1));
  run.iterate(false);  // before the timings are cleared: not reported
  run.clear_step_timings();
  for (int i = 0; i < 4; ++i) run.iterate(false);
  const ParallelInfo info = run.parallel_info(4);
  EXPECT_EQ(info.communicator, "in-process");
  EXPECT_EQ(info.launch, "one-process");
  EXPECT_EQ(info.ranks, 3);
  // ΣK·N sums + ΣK counts + one inertia per K, 8 bytes each: (25·4 + 25 + 5)·8.
  EXPECT_EQ(info.allreduce_bytes, (25 * 4 + 25 + 5) * 8);
  ASSERT_EQ(info.shards.size(), 3u);
  int64_t rows = 0;
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(info.shards[r].rank, int(r));
    EXPECT_EQ(info.shards[r].rows, split_rows(701, 3)[r].size());
    EXPECT_GT(info.shards[r].step_median_ms, 0);
    EXPECT_GE(info.shards[r].allreduce_median_ms, 0);
    EXPECT_GE(info.shards[r].allreduce_median_ms, info.allreduce_median_ms);
    rows += info.shards[r].rows;
  }
  EXPECT_EQ(rows, 701);
}

TEST(ShardedResults, TheParallelBlockSurvivesTheResultsFile) {
  ResultRow row;
  row.name = "cpu-openmp/4/3..7/701/threads=0";
  row.variant = "cpu-openmp";
  row.problem.n = 4;
  row.problem.m = 701;
  ParallelInfo info;
  info.communicator = "nccl";
  info.launch = "mpirun";
  info.ranks = 2;
  info.allreduce_bytes = 1040;
  info.allreduce_median_ms = 0.021;
  info.shards.push_back({0, "a", "GPU 0: X", 351, 1.5, 0.03});
  info.shards.push_back({1, "b", "GPU 0: X", 350, 1.4, 0.021});
  row.parallel = info;
  const ResultRow back = row_from_json(row_to_json(row));
  ASSERT_TRUE(back.parallel.has_value());
  EXPECT_EQ(back.parallel->communicator, "nccl");
  EXPECT_EQ(back.parallel->launch, "mpirun");
  EXPECT_EQ(back.parallel->ranks, 2);
  EXPECT_EQ(back.parallel->allreduce_bytes, 1040);
  ASSERT_EQ(back.parallel->shards.size(), 2u);
  EXPECT_EQ(back.parallel->shards[1].host, "b");
  EXPECT_EQ(back.parallel->shards[1].rows, 350);
  EXPECT_DOUBLE_EQ(back.parallel->shards[0].step_median_ms, 1.5);
  // A single-device row has no block, and reads back without one.
  row.parallel.reset();
  EXPECT_FALSE(row_to_json(row).contains("parallel"));
  EXPECT_FALSE(row_from_json(row_to_json(row)).parallel.has_value());
}

TEST(SumPeaks, AddsTheRatesAndCountsMeasuredOnlyWhenEveryDeviceHasThem) {
  Peaks a, b;
  a.fp32_gflops_theoretical = 60000;
  a.dram_gbps_theoretical = 3000;
  a.fp32_gflops_measured = 50000;
  a.dram_read_gbps_measured = 2800;
  a.measured_at = "2026-11-02";
  b = a;
  b.measured_at = "2026-10-30";
  Peaks sum = sum_peaks({a, b});
  EXPECT_DOUBLE_EQ(sum.fp32_gflops_theoretical, 120000);
  EXPECT_DOUBLE_EQ(sum.dram_gbps_theoretical, 6000);
  EXPECT_DOUBLE_EQ(sum.fp32_gflops_measured, 100000);
  EXPECT_DOUBLE_EQ(sum.dram_read_gbps_measured, 5600);
  EXPECT_EQ(sum.measured_at, "2026-10-30");
  b.measured_at.clear();
  b.fp32_gflops_measured = 0;
  sum = sum_peaks({a, b});
  EXPECT_DOUBLE_EQ(sum.fp32_gflops_theoretical, 120000);
  EXPECT_DOUBLE_EQ(sum.fp32_gflops_measured, 0);
  EXPECT_TRUE(sum.measured_at.empty());
}

TEST(DeviceOption, ParsesListsAllAndHostShards) {
  EXPECT_EQ(parse_device_spec("0").gpus, std::vector<int>{0});
  EXPECT_EQ(parse_device_spec("0,1,3").gpus, (std::vector<int>{0, 1, 3}));
  EXPECT_TRUE(parse_device_spec("all").all_gpus);
  EXPECT_TRUE(parse_device_spec("cpu").cpu);
  EXPECT_EQ(parse_device_spec("cpu").cpu_shards, 0);
  EXPECT_EQ(parse_device_spec("cpu:4").cpu_shards, 4);
  for (const char* bad : {"", "0,0", "1,,2", "-1", "gpu", "cpu:0", "cpu:", "cpu:x", "0,", "all,0"})
    EXPECT_THROW(parse_device_spec(bad), InputError) << "'" << bad << "'";
}

TEST(DeviceOption, AGpuThatDoesNotExistIsBadInput) {
  const int gpus = gpu_count();
  const std::string missing = gpus == 0 ? "0,1" : std::to_string(gpus);
  try {
    resolve_placement(missing, false);
    FAIL() << "--device " << missing << " was accepted with " << gpus << " GPU(s)";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(gpus == 0 ? "has none" : "does not exist"), std::string::npos) << e.what();
  }
}

TEST(DeviceOption, HostShardsShardCpuVariantsAndNotGpuVariants) {
  const Placement four = resolve_placement("cpu:4", false);
  EXPECT_TRUE(four.sharded());
  EXPECT_EQ(four.local_shards(), 4);
  EXPECT_FALSE(four.gpu);
  EXPECT_TRUE(runs_sharded(four, Registry::instance().get("cpu-openmp")));
  for (const Variant* v : Registry::instance().all())
    if (v->runs_on_gpu()) EXPECT_FALSE(runs_sharded(four, *v)) << v->name();
  const Placement plain = resolve_placement("cpu", false);
  EXPECT_FALSE(plain.sharded());
  EXPECT_EQ(shard_problem(problem_of(blobs(10, 2, 1), KRange{2, 2}), 3).m, 4);
}

}  // namespace
}  // namespace mk
