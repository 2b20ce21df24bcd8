// tensor-multik-passes: a K range whose ΣK is beyond what one tensor-multik pass holds (64
// centroid slots, fewer at wider N: ceil(ΣK/8)·ceil(N/8) register-resident tiles at most 8),
// on tensor cores as consecutive passes (issue 32, "Big multi-K ranges"). Each pass is a
// tensor-multik run of its own over the same points with that run's default parameters, and
// a step forks the passes' streams from the first pass's and joins them back, so the harness's
// events on that stream time the whole step. The passes are the fewest that fit, balanced so
// that the largest is smallest (variants/common/k_range_passes.hpp); `pass_slots` lowers the
// slots a pass may hold, which trades more passes (each reading every point) for cheaper
// keys: at most 32 slots keeps argmin=mask and, at N of 4 or 8, the prepared operands.
//
// Ranges tensor-multik runs in one pass are refused here, so each range has one tensor-core
// answer. docs/tensor-multik.md, "Ranges beyond 64 slots", has the measurements.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/common/k_range_passes.hpp"
#include "variants/common/run_group.hpp"
#include "variants/tensor_multik/kernel_config.hpp"
#include "variants/variant.hpp"

namespace mk::tensor_multik {
namespace {

const Variant& one_pass_variant() { return Registry::instance().get("tensor-multik"); }

// The most slots one tensor-multik pass holds at N: 64 up to N=8, 32 up to N=16, 16 up to N=32, ...
int slots_at(int n) { return 8 * std::max(0, kMaxTilesTimesSteps / k_steps(n)); }

// pass_slots' values at N: 32 and 64 where a pass holds them, else the most it holds (so a
// tuner never measures one setting twice under two names). Beyond tensor-multik's N that is 0,
// a value no shape can use: can_implement refuses those shapes first.
std::vector<nlohmann::json> pass_slot_values(int n) {
  std::vector<nlohmann::json> values;
  for (const int slots : {32, 64})
    if (slots <= std::min(kMaxSlots, slots_at(n))) values.push_back(slots);
  if (values.empty()) values.push_back(std::min(kMaxSlots, slots_at(n)));
  return values;
}

int pass_slots(const Problem& problem, const Params& params) {
  const int wanted = params.is_object() ? params.value("pass_slots", kMaxSlots) : kMaxSlots;
  return std::min({wanted, kMaxSlots, slots_at(problem.n)});
}

// Each pass's problem and its tensor-multik parameters.
struct PassPlan {
  std::vector<KRange> ranges;
  std::vector<Problem> problems;
  std::vector<Params> params;
};

PassPlan plan_passes(const Problem& problem, const Params& params, const DeviceInfo& device) {
  PassPlan plan;
  plan.ranges = split_k_range(problem.k, pass_slots(problem, params));
  for (const KRange& range : plan.ranges) {
    plan.problems.push_back(problem_for_pass(problem, range));
    plan.params.push_back(one_pass_variant().default_params(plan.problems.back(), device));
  }
  return plan;
}

class PassesRun final : public RunGroup {
 public:
  PassesRun(const Problem& problem, const Dataset& data, const PassPlan& plan, const DeviceInfo& device)
      : problem_(problem), ranges_(plan.ranges) {
    for (size_t p = 0; p < plan.ranges.size(); ++p) {
      runs_.push_back(one_pass_variant().prepare(plan.problems[p], data, plan.params[p], device));
      if (!runs_.back()) throw DeviceError("tensor-multik returned no prepared run for K=" + plan.ranges[p].str());
    }
    start_fork("tensor-multik-passes");
  }

  void set_centroids(const std::vector<float>& packed) override {
    const size_t n = size_t(problem_.n);
    if (packed.size() != size_t(problem_.k.sum()) * n)
      throw InputError("tensor-multik-passes: " + std::to_string(packed.size()) + " centroid values, expected " +
                       std::to_string(size_t(problem_.k.sum()) * n));
    for (size_t p = 0; p < runs_.size(); ++p) {
      const auto first = packed.begin() + std::ptrdiff_t(size_t(problem_.k.slot_offset(ranges_[p].kmin)) * n);
      runs_[p]->set_centroids(std::vector<float>(first, first + std::ptrdiff_t(size_t(ranges_[p].sum()) * n)));
    }
  }

  // The split step, pass by pass: each pass gets its Ks' flags, and the summaries follow in
  // the range's order.
  void accumulate(const AccumulateOptions& options) override {
    handed_out_ = false;
    fork_->step([&](PreparedRun& run, size_t p) {
      AccumulateOptions mine = options;
      mine.active = flags_of(options.active, p);
      run.accumulate(mine);
    });
  }

  // The passes' FP64 accumulators gathered into one buffer packed like the whole range's (a
  // hook such as the multi-GPU all-reduce works on it, on the first pass's stream); update()
  // scatters them back first. Gathered once a step: a second call (ShardedRun asks again after
  // its all-reduce) returns the buffer as the hook left it.
  AccumulatorRefs accumulators() override {
    const size_t n = size_t(problem_.n), slots = size_t(problem_.k.sum()), ks = size_t(problem_.k.count());
    if (!sums_.get()) {
      sums_.allocate(slots * n, "tensor-multik-passes sums");
      counts_.allocate(slots, "tensor-multik-passes counts");
      inertia_.allocate(ks, "tensor-multik-passes inertia");
    }
    if (!handed_out_) {
      pass_refs_.assign(runs_.size(), AccumulatorRefs{});
      fork_->step([&](PreparedRun& run, size_t p) { pass_refs_[p] = run.accumulators(); });
      copy_passes(true);
      handed_out_ = true;
    }
    AccumulatorRefs all;
    all.sums = sums_.get();
    all.counts = counts_.get();
    all.inertia = inertia_.get();
    all.slots = int(slots);
    all.n = int(n);
    all.k_count = int(ks);
    all.on_device = true;
    all.stream = runs_[0]->stream();
    return all;
  }

  StepSummary update(const UpdateOptions& options) override {
    if (handed_out_) copy_passes(false);  // the hook may have changed the gathered sums
    handed_out_ = false;
    std::vector<StepSummary> summaries(runs_.size());
    fork_->step([&](PreparedRun& run, size_t p) {
      UpdateOptions mine = options;
      mine.active = flags_of(options.active, p);
      summaries[p] = run.update(mine);
    });
    StepSummary all;
    for (auto& one : summaries)
      for (auto& k : one.per_k) all.per_k.push_back(k);
    return all;
  }

 private:
  // Pass p's share of per-K flags (kmin first; empty = every K).
  std::vector<uint8_t> flags_of(const std::vector<uint8_t>& flags, size_t p) const {
    if (flags.empty()) return {};
    if (flags.size() != size_t(problem_.k.count()))
      throw InputError("tensor-multik-passes: " + std::to_string(flags.size()) + " per-K flags for " +
                       std::to_string(problem_.k.count()) + " Ks");
    const auto first = flags.begin() + (ranges_[p].kmin - problem_.k.kmin);
    return std::vector<uint8_t>(first, first + ranges_[p].count());
  }

  // Gathers (true) the passes' accumulators into the packed buffers or scatters (false) them
  // back, on the first pass's stream, which the fork orders with every pass's.
  void copy_passes(bool gather) {
    const size_t n = size_t(problem_.n);
    auto stream = static_cast<cudaStream_t>(runs_[0]->stream());
    for (size_t p = 0; p < runs_.size(); ++p) {
      const AccumulatorRefs& mine = pass_refs_[p];
      if (!mine.on_device || mine.slots != ranges_[p].sum() || mine.k_count != ranges_[p].count() ||
          mine.n != problem_.n)
        throw DeviceError("tensor-multik-passes: the pass K=" + ranges_[p].str() + " exposes no device accumulators of its shape");
      const size_t slot = size_t(problem_.k.slot_offset(ranges_[p].kmin));
      const size_t k_index = size_t(ranges_[p].kmin - problem_.k.kmin);
      auto copy = [&](void* packed, void* pass, size_t bytes) {
        gpu::check(cudaMemcpyAsync(gather ? packed : pass, gather ? pass : packed, bytes, cudaMemcpyDeviceToDevice, stream),
                   "tensor-multik-passes accumulators");
      };
      copy(sums_.get() + slot * n, mine.sums, size_t(mine.slots) * n * sizeof(double));
      copy(counts_.get() + slot, mine.counts, size_t(mine.slots) * sizeof(unsigned long long));
      copy(inertia_.get() + k_index, mine.inertia, size_t(mine.k_count) * sizeof(double));
    }
  }

  Problem problem_;
  std::vector<KRange> ranges_;
  gpu::DeviceBuffer<double> sums_, inertia_;
  gpu::DeviceBuffer<unsigned long long> counts_;
  std::vector<AccumulatorRefs> pass_refs_;
  bool handed_out_ = false;
};

class TensorMultiKPasses final : public Variant {
 public:
  std::string name() const override { return "tensor-multik-passes"; }
  std::string description() const override {
    return "a K range beyond tensor-multik's slots as consecutive tensor-multik passes over the same points "
           "(fewest passes, balanced), stepped together on forked streams";
  }
  bool runs_on_gpu() const override { return true; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    if (problem.streamed) return kRefuseStreamed;
    const Variant& one = one_pass_variant();
    if (!one.can_implement(problem, device))
      return "tensor-multik runs K=" + problem.k.str() + " at N=" + std::to_string(problem.n) + " in one pass";
    const int slots = pass_slots(problem, Params::object());
    const std::vector<KRange> ranges = split_k_range(problem.k, slots);
    if (ranges.empty())
      return "K=" + std::to_string(problem.k.kmax) + " alone exceeds the " + std::to_string(slots) +
             " slots a tensor-multik pass holds at N=" + std::to_string(problem.n);
    for (const KRange& range : ranges)
      if (auto refusal = one.can_implement(problem_for_pass(problem, range), device))
        return "the pass K=" + range.str() + ": " + *refusal;
    return std::nullopt;
  }

  ParamSpace param_space(const Problem& problem, const DeviceInfo&) const override {
    ParamSpace space;
    space.axes.push_back({"pass_slots", pass_slot_values(problem.n),
                          "most centroid slots (ΣK) a pass holds, below tensor-multik's own limit at this N: 32 keeps "
                          "argmin=mask and, at N of 4 or 8, prepared operands; 64 makes fewer passes"});
    const int kmax = problem.k.kmax;
    space.restrictions.push_back({"every K must fit in one pass (K <= pass_slots)", [kmax](const Params& p) {
                                    return kmax <= p.at("pass_slots").get<int>();
                                  }});
    return space;
  }

  // 32 wherever every K fits: N=8 K=3..12 M=32M took 1.397 ms in three passes of at most 32
  // slots (argmin=mask, prepared operands) against 1.864 in two of at most 64 (H200, 908b37d,
  // reports/results/nvidia-h200/tensor-multik-passes-N8-K3..12-M32M-slots{32,64}.json).
  Params default_params(const Problem& problem, const DeviceInfo&) const override {
    const int wanted = problem.k.kmax <= 32 ? 32 : 64;
    for (const nlohmann::json& value : pass_slot_values(problem.n))
      if (value.get<int>() == wanted) return {{"pass_slots", wanted}};
    return {{"pass_slots", pass_slot_values(problem.n).back()}};
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    if (auto reason = can_implement(problem, device)) throw UnsupportedError("tensor-multik-passes: " + *reason);
    const PassPlan plan = plan_passes(problem, params, device);
    if (plan.ranges.empty())
      throw UnsupportedError("tensor-multik-passes: K=" + problem.k.str() + " cannot be split into passes of " +
                             std::to_string(pass_slots(problem, params)) + " slots");
    return std::make_unique<PassesRun>(problem, data, plan, device);
  }

  // Every pass's run holds its buffers (its own copy of the points among them) at once.
  DeviceFootprint device_footprint(const Problem& problem, const Params& params, const DeviceInfo& device,
                                   bool with_labels) const override {
    const PassPlan plan = plan_passes(problem, params, device);
    DeviceFootprint all;
    for (size_t p = 0; p < plan.ranges.size(); ++p) {
      const DeviceFootprint one =
          one_pass_variant().device_footprint(plan.problems[p], plan.params[p], device, with_labels);
      for (const auto& part : one.parts) all.add(part.what + " (pass K=" + plan.ranges[p].str() + ")", double(part.bytes));
    }
    return all;
  }
};

MKBENCH_REGISTER_VARIANT(TensorMultiKPasses);

}  // namespace
}  // namespace mk::tensor_multik
