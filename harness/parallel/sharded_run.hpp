#pragma once
// Data-parallel Lloyd over shards (docs/multi-gpu.md): the rows are split into contiguous
// ranges, one per shard (a GPU, a rank, or a slice of the host CPU); each shard prepares the
// chosen variant on its own rows, and every step is
//     each shard accumulate()  ->  all-reduce of the sums, counts and inertia  ->  each shard update()
// with the same options, so the centroids stay bit-identical on every shard. A ShardedRun is
// itself a PreparedRun: `run`, `fit` and the suites get several devices by wrapping.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "harness/parallel/communicator.hpp"
#include "harness/parallel/shard_workers.hpp"
#include "harness/results.hpp"
#include "variants/variant.hpp"

namespace mk {

struct RowRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
// `shards` contiguous ranges covering [0, m) in order, sizes differing by at most one row
// (the first m % shards ranges have the extra row). InputError when shards < 1 or > m.
std::vector<RowRange> split_rows(int64_t m, int shards);

// update()'s refusal when farthest or random meets an empty cluster over several shards (each
// shard would move it to a point of its own): exit 3, as any refusal; `fit` tells it apart.
struct ShardedEmptyClusterError : UnsupportedError {
  using UnsupportedError::UnsupportedError;
};

// One shard this process runs.
struct LocalShard {
  std::unique_ptr<Communicator> comm;  // its endpoint; comm->rank() is the shard's index
  DeviceInfo device;                   // a GPU (is_gpu) or the host CPU
};

class ShardedRun : public PreparedRun {
 public:
  // Prepares `variant` with `params` on each local shard's rows of `data` (`problem` is the
  // whole problem). The shards prepare one after another, each on its own thread and device,
  // so the host holds one shard's copy of the rows at a time. A shard that cannot prepare
  // makes every rank throw its error (the same type: a refusal stays a refusal), after all
  // ranks agreed on it, so no rank is left waiting in a collective.
  ShardedRun(const Variant& variant, const Problem& problem, const Dataset& data, const Params& params,
             std::vector<LocalShard> shards);
  ~ShardedRun() override;

  // Under mpirun, rank 0's centroids, broadcast: every rank seeds on its own, and a seeding
  // that differs in a bit between ranks (GPU k-means++) would part the shards' updates.
  void set_centroids(const std::vector<float>& packed) override;
  // accumulate, all-reduce, update(keep) on every shard; returns when all are done.
  void iterate(bool store_labels) override;
  void synchronize() override;
  // The centroids, counts and inertia (the same on every shard, checked), and the labels of
  // every shard in row order (gathered from the other ranks).
  IterationResult read_back() override;
  void expect_labels_read_back() override;  // each local shard's run readies its own labels
  void* stream() override;  // the first local shard's
  std::optional<double> conversion_ms() const override;

  // accumulate() ends with the accumulators all-reduced: accumulators() are the whole data's.
  // Its step's timings are read at the next step (or by parallel_info), once the update that
  // follows it has synchronised, so the split step gains no host wait.
  void accumulate(const AccumulateOptions& options) override;
  AccumulatorRefs accumulators() override;  // the first local shard's
  // The farthest and random policies over several shards: keep while no active cluster is
  // empty (they are keep then), UnsupportedError once one is (each shard would pick its own
  // point, and the centroids would part).
  StepSummary update(const UpdateOptions& options) override;
  void prepare_split() override;  // every local shard's

  int total_shards() const { return total_shards_; }
  const std::string& communicator_kind() const { return kind_; }
  // The sum of every shard's device peaks (all ranks).
  const Peaks& summed_peaks() const { return summed_peaks_; }
  // Per-step timings are kept from here on (the timed loop's steps).
  void clear_step_timings();
  // The devices, ranks and the last `steps` steps' timings of every shard. A collective:
  // every rank calls it at the same point.
  ParallelInfo parallel_info(size_t steps);

 private:
  struct Shard;
  void prepare_shard(int index, const Variant& variant, const Problem& problem, const Dataset& data,
                     const Params& params);
  // One all-reduce of a double: NCCL connects a rank to its peers at its first collective, which
  // then counts as preparation, not as a fit's first step (4 H200s at e36ddab spent ~90 ms of
  // a 10-step, 225 ms fit loop outside their shards' accumulation).
  void connect(Shard& shard);
  void step_accumulate(Shard& shard, bool store_labels);
  void read_pending_timing(Shard& shard);
  // Enqueues the all-reduce of the shard's accumulators; with `wait`, also waits for it (polling
  // for a failed peer: Communicator::finish). Returns the stream a wait is still owed on.
  std::optional<void*> reduce(Shard& shard, bool wait = true);
  void abort_all(const std::string& reason);

  std::vector<std::unique_ptr<Shard>> shards_;
  std::unique_ptr<ShardWorkers> workers_;
  Problem problem_;
  int total_shards_ = 1;
  std::string kind_;
  Peaks summed_peaks_;
};

}  // namespace mk
