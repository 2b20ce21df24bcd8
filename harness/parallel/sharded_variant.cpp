#include "harness/parallel/sharded_variant.hpp"

#include <utility>

#include "core/errors.hpp"
#include "harness/measure.hpp"
#include "harness/parallel/in_process_communicator.hpp"
#include "harness/parallel/mpi_communicator.hpp"
#include "harness/parallel/nccl_communicator.hpp"

namespace mk {

bool runs_sharded(const Placement& placement, const Variant& variant) {
  if (!placement.sharded()) return false;
  if (variant.runs_on_gpu()) return placement.gpu;
  return !placement.gpu || placement.mpi.active;
}

Problem shard_problem(const Problem& problem, int total_shards) {
  Problem shard = problem;
  if (total_shards > 1) shard.m = (problem.m + total_shards - 1) / total_shards;
  return shard;
}

namespace {

class PlacedVariant : public Variant {
 public:
  PlacedVariant(const Variant& inner, std::shared_ptr<const Placement> placement)
      : inner_(inner), placement_(std::move(placement)) {}

  std::string name() const override { return inner_.name(); }
  std::string description() const override { return inner_.description(); }
  bool runs_on_gpu() const override { return inner_.runs_on_gpu(); }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    const int shards = placement_->total_shards();
    const Problem shard = shard_problem(problem, shards);
    const int64_t smallest = problem.m / shards;
    if (smallest < problem.k.kmax)
      return "M=" + format_count(problem.m) + " over " + std::to_string(shards) + " shards leaves " +
             std::to_string(smallest) + " points on a shard, fewer than K=" + std::to_string(problem.k.kmax);
    return inner_.can_implement(shard, device);
  }
  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    return inner_.param_space(shard_problem(problem, placement_->total_shards()), device);
  }
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    return inner_.default_params(shard_problem(problem, placement_->total_shards()), device);
  }
  Params adapt_tuned_params(const Problem& problem, const DeviceInfo& device, Params params) const override {
    return inner_.adapt_tuned_params(shard_problem(problem, placement_->total_shards()), device, std::move(params));
  }
  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo&) const override {
    return std::make_unique<ShardedRun>(inner_, problem, data, params,
                                        make_local_shards(*placement_, inner_.runs_on_gpu()));
  }
  // A GPU holds one shard; the host holds every local shard of a CPU variant.
  DeviceFootprint device_footprint(const Problem& problem, const Params& params, const DeviceInfo& device,
                                   bool with_labels) const override {
    const DeviceFootprint one =
        inner_.device_footprint(shard_problem(problem, placement_->total_shards()), params, device, with_labels);
    if (inner_.runs_on_gpu() || placement_->local_shards() == 1) return one;
    DeviceFootprint all;
    const int local = placement_->local_shards();
    for (const auto& part : one.parts)
      all.add(part.what + " (x" + std::to_string(local) + " shards)", double(part.bytes) * local);
    // The shard's rows, copied while it prepares (one shard at a time).
    all.add("a shard's rows while preparing", shard_problem(problem, placement_->total_shards()).data_bytes());
    return all;
  }

 private:
  const Variant& inner_;
  std::shared_ptr<const Placement> placement_;
};

}  // namespace

std::unique_ptr<Variant> variant_for_placement(const Variant& variant, std::shared_ptr<const Placement> placement) {
  if (!placement || !runs_sharded(*placement, variant)) return nullptr;
  return std::make_unique<PlacedVariant>(variant, std::move(placement));
}

bool is_sharded_variant(const Variant& variant) { return dynamic_cast<const PlacedVariant*>(&variant) != nullptr; }

std::vector<LocalShard> make_local_shards(const Placement& placement, bool gpu_variant) {
  std::vector<LocalShard> shards;
  const bool on_gpus = gpu_variant && placement.gpu;
  if (gpu_variant && !placement.gpu)
    throw UnsupportedError("a GPU variant cannot run on the host CPU's shards (--device " + placement.text + ")");
  if (placement.mpi.active) {
    std::unique_ptr<Communicator> world = make_mpi_world_communicator();
    LocalShard shard;
    shard.device = on_gpus ? placement.devices.front() : query_host_cpu();
    shard.comm = on_gpus && nccl_built_in() ? make_nccl_rank(placement.gpus.front(), std::move(world))
                                            : std::move(world);
    if (on_gpus) select_device(placement.gpus.front());
    shards.push_back(std::move(shard));
    return shards;
  }
  const int count = placement.local_shards();
  std::vector<std::unique_ptr<Communicator>> endpoints = make_in_process_group(count);
  if (on_gpus && nccl_built_in()) {
    endpoints = make_nccl_single_process(placement.gpus, std::move(endpoints));
    select_device(placement.gpus.front());  // NCCL's set-up moved the calling thread's device
  }
  for (int i = 0; i < count; ++i) {
    LocalShard shard;
    shard.device = on_gpus ? placement.devices[size_t(i)] : placement.devices.front();
    shard.comm = std::move(endpoints[size_t(i)]);
    shards.push_back(std::move(shard));
  }
  return shards;
}

std::unique_ptr<PreparedRun> prepare_on_placement(const Variant& variant, const Problem& problem, const Dataset& data,
                                                  const Params& params, const Placement& placement) {
  if (!runs_sharded(placement, variant)) {
    const DeviceInfo device = variant.runs_on_gpu() ? placement.primary() : query_host_cpu();
    return variant.prepare(problem, data, params, device);
  }
  return std::make_unique<ShardedRun>(variant, problem, data, params,
                                      make_local_shards(placement, variant.runs_on_gpu()));
}

}  // namespace mk
