// Data-parallel Lloyd on several GPUs of one process (NCCL where built in, else through host
// memory; docs/multi-gpu.md): 2 GPUs, and 4 where the machine has them, give the labels and
// centroids of one GPU, and every sharded step passes the FP64 reference as --verify judges it.
// Skips without two CUDA GPUs ("no CUDA GPU: ..." / "needs N CUDA GPUs"); tests/device.sh's
// multigpu-verify stage runs it on a 2- or 4-GPU machine.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "datasets/dataset.hpp"
#include "harness/measure.hpp"
#include "harness/parallel/placement.hpp"
#include "harness/parallel/sharded_run.hpp"
#include "harness/parallel/sharded_variant.hpp"
#include "harness/reference.hpp"

namespace mk {
namespace {

Dataset blobs(int64_t m, int n, uint64_t seed) {
  GeneratorSpec spec;
  spec.kind = "blobs";
  spec.m = m;
  spec.n = n;
  spec.centers = 7;
  spec.seed = seed;
  return generate(spec);
}

std::string gpu_list(int count) {
  std::string text;
  for (int i = 0; i < count; ++i) text += (i ? "," : "") + std::to_string(i);
  return text;
}

std::vector<float> pack(const IterationResult& result) {
  std::vector<float> packed;
  for (const auto& k : result.per_k) packed.insert(packed.end(), k.centroids.begin(), k.centroids.end());
  return packed;
}

bool within_one_ulp(float a, float b) { return a == b || std::nextafter(a, b) == b; }

// Skips unless the machine has `gpus` CUDA GPUs.
#define REQUIRE_GPUS(gpus)                                                                          \
  do {                                                                                              \
    if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();                       \
    if (gpu_count() < (gpus))                                                                       \
      GTEST_SKIP() << "needs " << (gpus) << " CUDA GPUs, this machine has " << gpu_count();         \
  } while (0)

// Labels identical to one GPU's, centroids within one float ulp, for kernels whose distance
// arithmetic for a point does not depend on which other rows share its launch (plain FP32
// dot products: no data-dependent translation as tf32-window's mean). Why 1 ulp and not
// bit-equal: one GPU's FP64 atomics already add the points in a run-to-run order, and the
// shards' partial sums in yet another; a sum moved by one FP64 ulp lands, once in a while,
// on the other side of a float rounding boundary. Each step starts both runs from one GPU's
// centroids, so a 1-ulp difference cannot grow into another trajectory.
void expect_same_as_one_gpu(const std::string& name, int gpus) {
  const Dataset data = blobs(200003, 8, 21);  // odd M: no GPU count divides it
  const KRange k{3, 7};
  Problem problem;
  problem.m = data.m;
  problem.n = data.n;
  problem.k = k;
  const Variant& variant = Registry::instance().get(name);
  const Placement placement = resolve_placement(gpu_list(gpus), false);
  const DeviceInfo& first = placement.primary();
  if (auto why = variant.can_implement(shard_problem(problem, gpus), first))
    GTEST_SKIP() << name << " cannot run a shard here: " << *why;
  const Params params = resolve_params(variant, shard_problem(problem, gpus), first, Params::object());
  auto single = variant.prepare(problem, data, params, first);
  ShardedRun sharded(variant, problem, data, params, make_local_shards(placement, true));
  ASSERT_EQ(sharded.total_shards(), gpus);
  std::vector<float> start = initial_centroids(data, k, InitMethod::FirstK, 1);
  for (int step = 0; step < 5; ++step) {
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
      ASSERT_EQ(g.labels.size(), w.labels.size());
      int64_t differ = 0;
      for (size_t p = 0; p < w.labels.size(); ++p) differ += g.labels[p] != w.labels[p];
      EXPECT_EQ(differ, 0) << name << " step " << step << " K=" << w.k << ": labels differ from one GPU's";
      EXPECT_EQ(g.counts, w.counts) << name << " step " << step << " K=" << w.k;
      ASSERT_EQ(g.centroids.size(), w.centroids.size());
      int far = 0;
      for (size_t j = 0; j < w.centroids.size(); ++j) far += !within_one_ulp(g.centroids[j], w.centroids[j]);
      EXPECT_EQ(far, 0) << name << " step " << step << " K=" << w.k << ": centroids more than 1 ulp from one GPU's";
      EXPECT_NEAR(g.inertia, w.inertia, 1e-9 * w.inertia) << name << " step " << step << " K=" << w.k;
    }
    const VerifyReport report = compare_with_reference(data, k, start, got);
    EXPECT_TRUE(report.passed) << name << " step " << step << ": " << report.summary();
    start = pack(want);
  }
}

TEST(ShardedGpu, TwoGpusGiveTheLabelsAndCentroidsOfOne) {
  REQUIRE_GPUS(2);
  for (const char* name : {"registers-multik", "shared-atomics", "naive-atomics"}) {
    SCOPED_TRACE(name);
    expect_same_as_one_gpu(name, 2);
  }
}

TEST(ShardedGpu, FourGpusGiveTheLabelsAndCentroidsOfOne) {
  REQUIRE_GPUS(4);
  for (const char* name : {"registers-multik", "shared-atomics"}) {
    SCOPED_TRACE(name);
    expect_same_as_one_gpu(name, 4);
  }
}

// Every GPU variant, sharded over two GPUs, passes the FP64 reference on the whole data at
// every step (tie-aware, as --verify judges a row), labels gathered in row order included.
TEST(ShardedGpu, EveryGpuVariantOverTwoGpusPassesTheReference) {
  REQUIRE_GPUS(2);
  const Dataset data = blobs(100001, 8, 5);
  const KRange k{3, 5};
  Problem problem;
  problem.m = data.m;
  problem.n = data.n;
  problem.k = k;
  const Placement placement = resolve_placement("0,1", false);
  int ran = 0;
  for (const Variant* variant : Registry::instance().all()) {
    if (!variant->runs_on_gpu()) continue;
    SCOPED_TRACE(variant->name());
    const Problem shard = shard_problem(problem, 2);
    if (variant->can_implement(shard, placement.primary())) continue;
    const Params params = resolve_params(*variant, shard, placement.primary(), Params::object());
    ShardedRun run(*variant, problem, data, params, make_local_shards(placement, true));
    std::vector<float> start = initial_centroids(data, k, InitMethod::FirstK, 3);
    for (int step = 0; step < 3; ++step) {
      run.set_centroids(start);
      run.iterate(true);
      const IterationResult got = run.read_back();
      const VerifyReport report = compare_with_reference(data, k, start, got);
      EXPECT_TRUE(report.passed) << "step " << step << ": " << report.summary();
      start = pack(got);
    }
    ++ran;
  }
  EXPECT_GE(ran, 3) << "fewer GPU variants than expected could run the shape";
}

// The whole step through the hook, as fit drives it: accumulate() leaves the whole data's
// counts on every GPU (M per K, not a shard's share) before update().
TEST(ShardedGpu, AccumulateLeavesTheWholeDatasCountsOnTheDevice) {
  REQUIRE_GPUS(2);
  const Dataset data = blobs(50001, 4, 9);
  Problem problem;
  problem.m = data.m;
  problem.n = data.n;
  problem.k = KRange{3, 4};
  const Variant& variant = Registry::instance().get("registers-multik");
  const Placement placement = resolve_placement("0,1", false);
  const Params params = resolve_params(variant, shard_problem(problem, 2), placement.primary(), Params::object());
  ShardedRun run(variant, problem, data, params, make_local_shards(placement, true));
  run.set_centroids(initial_centroids(data, problem.k, InitMethod::FirstK, 1));
  run.accumulate(AccumulateOptions{});
  run.synchronize();
  const AccumulatorRefs refs = run.accumulators();
  ASSERT_TRUE(refs.on_device);
  std::vector<unsigned long long> counts(size_t(refs.slots));
  select_device(placement.gpus.front());
  ASSERT_EQ(cudaMemcpy(counts.data(), refs.counts, counts.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (int kk = problem.k.kmin; kk <= problem.k.kmax; ++kk) {
    unsigned long long total = 0;
    for (int c = 0; c < kk; ++c) total += counts[size_t(problem.k.slot_offset(kk) + c)];
    EXPECT_EQ(total, static_cast<unsigned long long>(data.m)) << "K=" << kk;
  }
  EXPECT_EQ(run.update(UpdateOptions{}).per_k.size(), size_t(problem.k.count()));
}

}  // namespace
}  // namespace mk
