#include "apps/fit/fit_plan.hpp"

#include <algorithm>
#include <utility>

#include "core/errors.hpp"
#include "harness/measure.hpp"
#include "harness/memory_plan.hpp"
#include "harness/parallel/sharded_variant.hpp"
#include "variants/chunked/chunked_run.hpp"
#include "variants/tuned_params.hpp"

namespace mk {

void refuse_gpu_variant_on_host(const std::string& requested, const DeviceInfo& gpu_device,
                                const std::string& why_host) {
  if (requested != "auto" && !gpu_device.is_gpu && Registry::instance().get(requested).runs_on_gpu())
    throw UnsupportedError("variant " + requested + " needs a CUDA GPU, and there is none: " + why_host);
}

Params fit_params(const Variant& variant, const Problem& problem, const Problem& tuned_problem,
                  const DeviceInfo& device, bool use_tuned, const std::function<void(const std::string&)>& warn,
                  std::string* tuned_from) {
  std::string entry;
  Params params;
  if (use_tuned)
    if (auto tuned = tuned_params_for(variant, tuned_problem, device, &entry)) {
      try {
        params = resolve_params(variant, problem, device, *tuned);
      } catch (const Error& e) {
        if (warn) warn("ignoring tuned config " + entry + " (" + e.what() + ")");
        params = Params();
        entry.clear();
      }
    }
  if (params.is_null() || params.empty()) {
    params = resolve_params(variant, problem, device, Params::object());
    entry.clear();
  }
  if (tuned_from) *tuned_from = entry;
  return params;
}

namespace {

// One plan: the variant for `chosen_for` (the rows one device holds at a time: the whole data,
// a shard, or a chunk), checked on it, with parameters for it.
FitPlan plan_for(const std::string& requested, const Problem& problem, const Problem& chosen_for,
                 std::shared_ptr<const Placement> placement, const DeviceInfo& gpu_device, bool use_tuned,
                 const std::function<void(const std::string&)>& warn) {
  FitPlan plan;
  plan.placement = std::move(placement);
  plan.choice = choose_fit_variant(requested, chosen_for, gpu_device);
  if (plan.choice.name.empty())
    throw UnsupportedError("fit: no variant can run " + problem.str() + ": " + plan.choice.reason);
  plan.variant = &Registry::instance().get(plan.choice.name);
  plan.device = plan.variant->runs_on_gpu() ? gpu_device : query_host_cpu();
  if (plan.device.is_gpu) select_device(plan.device.ordinal);
  // Over several shards the variant answers for one shard (harness/parallel/sharded_variant.hpp).
  plan.placed = variant_for_placement(*plan.variant, plan.placement);
  const bool chunked = chosen_for.streamed;
  if (auto refusal = chunked ? plan.variant->can_implement(chosen_for, plan.device)
                             : plan.planned().can_implement(problem, plan.device))
    throw UnsupportedError(plan.variant->name() + " cannot run " + chosen_for.str() + ": " + *refusal);
  plan.params = fit_params(plan.planned(), chunked ? chosen_for : problem, chosen_for, plan.device, use_tuned, warn,
                           &plan.tuned_from);
  if (chunked) plan.chunk_points = chosen_for.m;
  return plan;
}

}  // namespace

FitPlan plan_fit(const std::string& requested, const Problem& problem, std::shared_ptr<const Placement> placement,
                 const DeviceInfo& gpu_device, bool use_tuned, const std::function<void(const std::string&)>& warn,
                 int64_t chunk_points) {
  // Auto chooses for the rows one GPU runs: a fit sharded over GPUs holds a shard on each, and
  // its data may be more than any one of them holds (docs/multi-gpu.md, "A fit beyond one GPU").
  const bool sharded = placement && placement->sharded();
  if (chunk_points > 0) {
    if (sharded)
      throw InputError(kRefuseShardedOutOfCore);
    return plan_for(requested, problem, chunk_problem(problem, chunk_points), placement, gpu_device, use_tuned, warn);
  }
  const Problem one_device = sharded ? shard_problem(problem, placement->total_shards()) : problem;
  try {
    return plan_for(requested, problem, one_device, placement, gpu_device, use_tuned, warn);
  } catch (const UnsupportedError& in_core) {
    // Data the GPU cannot hold streams through it in chunks of up to 1 GiB, as `run`'s
    // memory plan streams it (docs/fit.md, "Data larger than the GPU").
    const int64_t largest = std::max<int64_t>(kMinChunkPoints, kMaxChunkBytes / (int64_t(problem.n) * 4));
    if (chunk_points != kFitChunksWhenNeeded || sharded || !gpu_device.is_gpu || largest >= problem.m) throw;
    try {
      FitPlan plan = plan_for(requested, problem, chunk_problem(problem, largest), placement, gpu_device, use_tuned,
                              warn);
      plan.out_of_core_reason = in_core.what();
      return plan;
    } catch (const Error&) {
      throw in_core;
    }
  }
}

std::unique_ptr<PreparedRun> prepare_fit(const FitPlan& plan, const Problem& problem, const Dataset& data) {
  // The fit left the points unheld on a plan made before they were read; this one, on the read
  // data, would run in core (the GPU's free memory changed in between, or the real sparsity
  // chose another variant).
  if (plan.chunk_points == 0 && !data.holds_rows())
    throw UnsupportedError("the points were left " +
                           std::string(data.is_on_demand() ? "to be generated chunk by chunk" : "unheld") +
                           " for an out-of-core fit, but the fit's plan is now in core; run it again, or with "
                           "--hold-points");
  if (plan.chunk_points > 0)
    return prepare_chunked(*plan.variant, problem, chunk_source_of(data), plan.chunk_points, plan.params, plan.device);
  if (plan.placement) return prepare_on_placement(*plan.variant, problem, data, plan.params, *plan.placement);
  return plan.variant->prepare(problem, data, plan.params, plan.device);
}

}  // namespace mk
