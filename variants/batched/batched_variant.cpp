#include "variants/batched/batched_variant.hpp"

#include <utility>

#include "core/errors.hpp"
#include "variants/common/run_group.hpp"

namespace mk {

Problem problem_of_one(const Problem& problem) {
  Problem one = problem;
  one.batch = 1;
  return one;
}

Dataset problem_rows(const Dataset& data, const Problem& problem, int b) {
  if (data.m != problem.total_points())
    throw InputError("a batch of " + std::to_string(problem.batch) + " problems of " + format_count(problem.m) +
                     " points needs " + std::to_string(problem.total_points()) + " rows; the data has " +
                     std::to_string(data.m));
  if (b < 0 || b >= problem.batch)
    throw InputError("problem " + std::to_string(b) + " of a batch of " + std::to_string(problem.batch));
  return rows_of(data, int64_t(b) * problem.m, int64_t(b + 1) * problem.m);
}

std::vector<float> problem_centroids(const std::vector<float>& packed, const Problem& problem, int b) {
  const size_t one = size_t(problem.k.sum()) * size_t(problem.n);
  if (packed.size() != one * size_t(problem.batch))
    throw InputError("a batch's centroids: " + std::to_string(packed.size()) + " values, expected " +
                     std::to_string(one * size_t(problem.batch)) + " (" + std::to_string(problem.batch) +
                     " problems x sum K " + std::to_string(problem.k.sum()) + " x N " + std::to_string(problem.n) +
                     ")");
  const auto first = packed.begin() + std::ptrdiff_t(one * size_t(b));
  return std::vector<float>(first, first + std::ptrdiff_t(one));
}

IterationResult problem_result(const IterationResult& batch, const Problem& problem, int b) {
  const size_t count = size_t(problem.k.count());
  if (batch.per_k.size() != count * size_t(problem.batch))
    throw VerifyError("a batch of " + std::to_string(problem.batch) + " problems returned " +
                      std::to_string(batch.per_k.size()) + " K results, expected " +
                      std::to_string(count * size_t(problem.batch)));
  IterationResult one;
  const auto first = batch.per_k.begin() + std::ptrdiff_t(count * size_t(b));
  one.per_k.assign(first, first + std::ptrdiff_t(count));
  return one;
}

namespace {

// B runs of one variant, problem b on its own rows. On a GPU a step forks the runs' streams
// from the first run's and joins them back, so that stream's events span the whole batch.
class BatchedRun final : public RunGroup {
 public:
  BatchedRun(const Variant& inner, const Problem& problem, const Dataset& data, const Params& params,
             const DeviceInfo& device)
      : problem_(problem) {
    const Problem one = problem_of_one(problem);
    rows_.reserve(size_t(problem.batch));  // a run may keep a reference to its Dataset: no reallocation
    try {
      for (int b = 0; b < problem.batch; ++b) {
        rows_.push_back(problem_rows(data, problem, b));
        runs_.push_back(inner.prepare(one, rows_.back(), params, device));
        if (!runs_.back()) throw DeviceError("variant " + inner.name() + " returned no prepared run");
      }
      start_fork("batched run");
    } catch (...) {
      drop_runs();  // no destructor runs for a constructor that throws
      throw;
    }
  }
  ~BatchedRun() override { drop_runs(); }

  void set_centroids(const std::vector<float>& packed) override {
    for (int b = 0; b < problem_.batch; ++b) runs_[size_t(b)]->set_centroids(problem_centroids(packed, problem_, b));
  }

 private:
  // The runs may hold views of rows_, which as this class's member would go before the base's
  // runs: they go first.
  void drop_runs() {
    fork_.reset();
    runs_.clear();
  }

  Problem problem_;
  std::vector<Dataset> rows_;  // each run's rows, views of the batch's data
};

class BatchedVariant final : public Variant {
 public:
  explicit BatchedVariant(const Variant& inner) : inner_(inner) {}

  std::string name() const override { return inner_.name(); }
  std::string description() const override { return inner_.description(); }
  bool runs_on_gpu() const override { return inner_.runs_on_gpu(); }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (problem.batch > 1 && problem.streamed) return std::string(kRefuseBatchedOutOfCore);
    return inner_.can_implement(problem_of_one(problem), device);
  }
  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    return inner_.param_space(problem_of_one(problem), device);
  }
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    return inner_.default_params(problem_of_one(problem), device);
  }
  Params adapt_tuned_params(const Problem& problem, const DeviceInfo& device, Params params) const override {
    return inner_.adapt_tuned_params(problem_of_one(problem), device, std::move(params));
  }
  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    if (problem.batch <= 1) return inner_.prepare(problem, data, params, device);
    if (data.m != problem.total_points()) (void)problem_rows(data, problem, 0);  // the size's InputError
    if (auto one_launch = inner_.prepare_batch(problem, data, params, device)) return one_launch;
    return std::make_unique<BatchedRun>(inner_, problem, data, params, device);
  }
  // Every problem's run holds its buffers at once.
  DeviceFootprint device_footprint(const Problem& problem, const Params& params, const DeviceInfo& device,
                                   bool with_labels) const override {
    const DeviceFootprint one = inner_.device_footprint(problem_of_one(problem), params, device, with_labels);
    if (problem.batch <= 1) return one;
    DeviceFootprint all;
    for (const auto& part : one.parts)
      all.add(part.what + " (x" + std::to_string(problem.batch) + " problems)", double(part.bytes) * problem.batch);
    return all;
  }

 private:
  const Variant& inner_;
};

}  // namespace

std::unique_ptr<Variant> variant_for_batch(const Variant& variant) {
  return std::make_unique<BatchedVariant>(variant);
}

}  // namespace mk
