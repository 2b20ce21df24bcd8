#pragma once
// "Make me a run for these devices": the one factory `run`, the suites and `fit` call. A
// variant wrapped for a placement answers for one shard (its can_implement, parameters and
// device footprint are those of the largest shard) and prepares a ShardedRun; rows and
// plans then need nothing else to run on several devices.
#include <memory>

#include "harness/parallel/placement.hpp"
#include "harness/parallel/sharded_run.hpp"
#include "variants/variant.hpp"

namespace mk {

// Whether `variant` runs sharded under `placement`: GPU variants over a GPU list (or an
// mpirun launch on GPUs), CPU variants over cpu:N or mpirun ranks. A CPU variant under a GPU
// list in one process runs unsharded on the host, as the CPU baseline row always has.
bool runs_sharded(const Placement& placement, const Variant& variant);

// The problem one shard solves: the whole problem with the largest shard's M.
Problem shard_problem(const Problem& problem, int total_shards);

// The variant as rows and plans should see it under `placement`: a wrapper when it runs
// sharded, else nullptr (use the variant itself). The wrapper refers to `variant` and
// shares `placement`.
std::unique_ptr<Variant> variant_for_placement(const Variant& variant, std::shared_ptr<const Placement> placement);

// Whether `variant` is such a wrapper: its runs hold each shard's rows whole, so they cannot be
// streamed in chunks (out of core).
bool is_sharded_variant(const Variant& variant);

// The refusal of out-of-core over several shards, shared by run, the suites and fit.
inline constexpr const char* kRefuseShardedOutOfCore =
    "out of core streams one device's points in chunks; over a --device list each shard holds its rows whole, "
    "so the two do not combine: give one device, or leave out --chunk-points/--out-of-core";

// This process's shards of `placement` with their communicators: NCCL for GPU variants where
// NCCL is built in (ncclCommInitAll in one process, ncclCommInitRank over MPI), else MPI
// ranks or an in-process group on the host. `gpu_variant` picks GPU shards or host shards.
std::vector<LocalShard> make_local_shards(const Placement& placement, bool gpu_variant);

// `variant.prepare` for one device, or a ShardedRun over the placement: what fit calls.
std::unique_ptr<PreparedRun> prepare_on_placement(const Variant& variant, const Problem& problem, const Dataset& data,
                                                  const Params& params, const Placement& placement);

}  // namespace mk
