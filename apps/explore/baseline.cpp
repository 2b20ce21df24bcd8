// The all-attributes baseline of `mkbench explore` (baseline.hpp).
#include "apps/explore/baseline.hpp"

#include <chrono>

#include "apps/explore/scoring.hpp"
#include "apps/explore/subsets.hpp"
#include "core/errors.hpp"
#include "variants/variant.hpp"

namespace mk::explore {

BaselineResult run_baseline(const LabelledTable& table, int k, int max_iter, double tol, uint64_t seed,
                            int64_t copy_index, const DeviceInfo& device) {
  const auto start = std::chrono::steady_clock::now();
  const Dataset& data = table.data;
  Problem problem;
  problem.m = data.m;
  problem.n = data.n;
  problem.k = KRange{k, k};
  problem.sparsity = data.sparsity;
  validate(problem);
  const Variant* variant = &Registry::instance().get(device.is_gpu ? "auto" : "cpu-openmp");
  if (variant->can_implement(problem, device)) variant = &Registry::instance().get("cpu-openmp");
  const DeviceInfo host = query_host_cpu();
  const DeviceInfo& where = variant->runs_on_gpu() ? device : host;
  const Params params = resolve_params(*variant, problem, where, Params::object());
  std::unique_ptr<PreparedRun> run = variant->prepare(problem, data, params, where);

  const std::vector<int64_t> rows = initial_rows(data.m, k, copy_index, seed);
  std::vector<float> centroids(size_t(k) * data.n);
  for (int j = 0; j < k; ++j)
    for (int d = 0; d < data.n; ++d) centroids[size_t(j) * data.n + d] = data.at(rows[size_t(j)], d);
  run->set_centroids(centroids);

  std::vector<int32_t> every_column(static_cast<size_t>(data.n));
  for (int d = 0; d < data.n; ++d) every_column[size_t(d)] = d;
  const double threshold = convergence_thresholds(attribute_variances(data), every_column, data.n, tol).front();

  BaselineResult result;
  result.variant = variant->name();
  UpdateOptions update;
  update.active = {1};
  update.empty = EmptyPolicy::Keep;
  update.seed = seed;
  // Scored as the copies are (docs/explore.md, "The score"): the last step's assignment, and
  // that partition's inertia about the centroids it moved to.
  for (int step = 0; step < max_iter; ++step) {
    run->accumulate(AccumulateOptions{true});
    const StepSummary summary = run->update(update);
    ++result.steps;
    if (summary.per_k.front().shift <= threshold) {
      result.converged = true;
      break;
    }
  }
  run->synchronize();
  const IterationResult last_step = run->read_back();
  const KResult& labelled = last_step.per_k.front();
  const int classes = table.classes();
  std::vector<int64_t> counts(size_t(k) * classes, 0);
  for (int64_t i = 0; i < data.m; ++i)
    ++counts[size_t(labelled.labels[size_t(i)]) * classes + table.labels[size_t(i)]];
  result.accuracy = double(majority_correct(counts.data(), k, classes)) / double(data.m);
  double inertia = 0;
#pragma omp parallel for schedule(static) reduction(+ : inertia)
  for (int64_t i = 0; i < data.m; ++i) {
    const float* c = labelled.centroids.data() + size_t(labelled.labels[size_t(i)]) * data.n;
    for (int d = 0; d < data.n; ++d) {
      const double delta = double(data.at(i, d)) - double(c[d]);
      inertia += delta * delta;
    }
  }
  result.inertia = inertia;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace mk::explore
