#include "tuner/evaluator.hpp"

#include <algorithm>
#include <memory>
#include <set>

#include "datasets/dataset.hpp"
#include "core/errors.hpp"
#include "harness/measure.hpp"

namespace mk::tuner {

double median_of(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const size_t mid = samples.size() / 2;
  return samples.size() % 2 ? samples[mid] : 0.5 * (samples[mid - 1] + samples[mid]);
}

double gops_of(const Problem& problem, double median_ms) {
  return median_ms > 0 ? problem.paper_ops() / (median_ms * 1e-3) / 1e9 : 0.0;
}

namespace {

// The data set and initial centroids of the problem being tuned, reused across points.
struct HarnessState {
  std::string data_key;
  std::unique_ptr<Dataset> data;
  std::string init_key;
  std::vector<float> init_centroids;
  std::set<std::string> verified;  // "variant|shape" pairs that passed the reference check
};

}  // namespace

Evaluator make_harness_evaluator(const DeviceInfo& device, const HarnessEvaluatorOptions& options) {
  auto state = std::make_shared<HarnessState>();
  return [device, options, state](const Variant& variant, const Params& params, const Problem& problem) {
    const std::string data_key = options.dataset + "/" + std::to_string(problem.m) + "x" +
                                 std::to_string(problem.n) + "/" + std::to_string(options.seed);
    if (state->data_key != data_key) {
      state->data.reset();  // free the previous shape's points before generating the next
      state->data = std::make_unique<Dataset>(load_dataset_spec(options.dataset, problem.m, problem.n, options.seed));
      state->data_key = data_key;
      state->init_key.clear();
    }
    if (state->data->m != problem.m || state->data->n != problem.n)
      throw InputError("data set '" + options.dataset + "' has " + std::to_string(state->data->m) + "x" +
                       std::to_string(state->data->n) + " values, the tuned problem needs " + problem.str());
    const std::string init_key = problem.k.str();
    if (state->init_key != init_key) {
      state->init_centroids = initial_centroids(*state->data, problem.k, InitMethod::FirstK, options.seed);
      state->init_key = init_key;
    }

    RowSpec spec;
    spec.variant = &variant;
    spec.problem = problem;
    spec.problem.sparsity = state->data->sparsity;
    spec.params = params;
    spec.dataset = state->data.get();
    spec.init_centroids = state->init_centroids;
    spec.warmup = options.warmup;
    spec.samples = options.samples;
    const std::string verify_id = variant.name() + "|" + problem.str();
    spec.verify = options.verify_first && !state->verified.count(verify_id);

    const ResultRow row = measure_row(spec, device);
    Measurement measurement;
    measurement.samples_ms = row.timing.samples_ms;
    measurement.median_ms = row.summary.median_ms;
    measurement.ok = row.ok() && row.verify_passed() && measurement.median_ms > 0;
    measurement.reason = row.reason;
    if (row.ok() && !row.verify_passed())
      measurement.reason = "does not match the FP64 reference (" + row.verify.dump() + ")";
    if (spec.verify && measurement.ok) state->verified.insert(verify_id);
    return measurement;
  };
}

}  // namespace mk::tuner
