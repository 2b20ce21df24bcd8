#include "apps/fit/fit_plan.hpp"

#include <utility>

#include "core/errors.hpp"
#include "harness/measure.hpp"
#include "harness/parallel/sharded_variant.hpp"
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

FitPlan plan_fit(const std::string& requested, const Problem& problem, std::shared_ptr<const Placement> placement,
                 const DeviceInfo& gpu_device, bool use_tuned, const std::function<void(const std::string&)>& warn) {
  FitPlan plan;
  plan.placement = std::move(placement);
  // Auto chooses for the rows one GPU runs: a fit sharded over GPUs holds a shard on each, and
  // its data may be more than any one of them holds (docs/multi-gpu.md, "A fit beyond one GPU").
  const bool sharded = plan.placement && plan.placement->sharded();
  const Problem one_device = sharded ? shard_problem(problem, plan.placement->total_shards()) : problem;
  plan.choice = choose_fit_variant(requested, one_device, gpu_device);
  if (plan.choice.name.empty())
    throw UnsupportedError("fit: no variant can run " + problem.str() + ": " + plan.choice.reason);
  plan.variant = &Registry::instance().get(plan.choice.name);
  plan.device = plan.variant->runs_on_gpu() ? gpu_device : query_host_cpu();
  if (plan.device.is_gpu) select_device(plan.device.ordinal);
  // Over several shards the variant answers for one shard (harness/parallel/sharded_variant.hpp).
  plan.placed = variant_for_placement(*plan.variant, plan.placement);
  if (auto refusal = plan.planned().can_implement(problem, plan.device))
    throw UnsupportedError(plan.variant->name() + " cannot run " + problem.str() + ": " + *refusal);
  const Problem tuned_problem = plan.sharded() ? shard_problem(problem, plan.shards()) : problem;
  plan.params = fit_params(plan.planned(), problem, tuned_problem, plan.device, use_tuned, warn, &plan.tuned_from);
  return plan;
}

std::unique_ptr<PreparedRun> prepare_fit(const FitPlan& plan, const Problem& problem, const Dataset& data) {
  if (plan.placement) return prepare_on_placement(*plan.variant, problem, data, plan.params, *plan.placement);
  return plan.variant->prepare(problem, data, plan.params, plan.device);
}

}  // namespace mk
