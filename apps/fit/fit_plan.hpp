#pragma once
// Where a fit runs and with what: the variant (`fit_variant.hpp`'s choice), the device, the
// parameters (tuned for this GPU, or the defaults) and, under a `--device` list, the placement
// it is sharded over (harness/parallel/placement.hpp, docs/multi-gpu.md). `mkbench fit`
// (cli_fit.cpp) and the Python estimator (python/fit_runner.cpp) plan through here, so both
// choose alike and shard alike.
#include <functional>
#include <memory>
#include <string>

#include "apps/fit/fit_variant.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "datasets/dataset.hpp"
#include "harness/parallel/placement.hpp"
#include "variants/variant.hpp"

namespace mk {

// UnsupportedError before any data is read when `requested` names a GPU variant and
// `gpu_device` is the host CPU: `why_host` says why (no_gpu_reason(), or "--device cpu is the
// host CPU").
void refuse_gpu_variant_on_host(const std::string& requested, const DeviceInfo& gpu_device,
                                const std::string& why_host);

// The variant's tuned configuration, looked up for `tuned_problem` (one shard's when sharded,
// as `mkbench run --device 0,1` does) and resolved for `problem`, else its defaults. A tuned
// configuration that does not resolve is passed to `warn` and the defaults are used.
// `tuned_from` (may be null) receives the entry used, "" for the defaults.
Params fit_params(const Variant& variant, const Problem& problem, const Problem& tuned_problem,
                  const DeviceInfo& device, bool use_tuned, const std::function<void(const std::string&)>& warn,
                  std::string* tuned_from);

struct FitPlan {
  std::shared_ptr<const Placement> placement;  // null: one device (the Python `device=N`)
  FitVariantChoice choice;
  const Variant* variant = nullptr;  // the registry's variant
  std::unique_ptr<Variant> placed;   // it wrapped for the placement when it runs sharded, else null
  DeviceInfo device;                 // where it runs (a sharded run: its first shard's), and seeds
  Params params;
  std::string tuned_from;
  // Out of core (variants/chunked): points a chunk; 0 in core. `out_of_core_reason` says why
  // when the plan chose it (empty when --chunk-points asked for it).
  int64_t chunk_points = 0;
  std::string out_of_core_reason;

  bool sharded() const { return placed != nullptr; }
  int shards() const { return placed ? placement->total_shards() : 1; }
  // The variant as plans see it: over shards, it answers for one shard.
  const Variant& planned() const { return placed ? *placed : *variant; }
};

// What plan_fit may do with data its device cannot hold at once.
inline constexpr int64_t kFitInCoreOnly = -1;  // refuse (the Python estimator)
inline constexpr int64_t kFitChunksWhenNeeded = 0;  // out of core when in core is refused (`mkbench fit`)

// Chooses and checks (can_implement, for one shard when sharded) the variant of `problem` on
// `gpu_device` (the placement's primary device, or the one device), and its parameters;
// selects the GPU it runs on. UnsupportedError when nothing can run it.
// `chunk_points` > 0: out of core in chunks of that many points (one device only: InputError
// with a placement of several); kFitChunksWhenNeeded: in core, or on one GPU, when that is
// refused (a variant's memory check), out of core in chunks of at most kMaxChunkBytes.
FitPlan plan_fit(const std::string& requested, const Problem& problem, std::shared_ptr<const Placement> placement,
                 const DeviceInfo& gpu_device, bool use_tuned, const std::function<void(const std::string&)>& warn,
                 int64_t chunk_points = kFitInCoreOnly);

// The plan's prepared run: a ShardedRun over the placement (each shard's rows uploaded to its
// device) when sharded, a ChunkedRun streaming `data` when out of core, else the variant
// prepared on its device.
std::unique_ptr<PreparedRun> prepare_fit(const FitPlan& plan, const Problem& problem, const Dataset& data);

}  // namespace mk
