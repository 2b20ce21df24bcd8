#include "tuner/tune_shapes.hpp"

#include <algorithm>
#include <map>
#include <ostream>

#include "tuner/buckets.hpp"
#include "tuner/strategy.hpp"

namespace mk::tuner {

std::vector<TunedShape> tune_shapes(std::vector<ShapeJob> jobs, const ShapesOptions& options) {
  std::stable_sort(jobs.begin(), jobs.end(), [](const ShapeJob& a, const ShapeJob& b) {
    return Bucket::of(a.problem) < Bucket::of(b.problem);
  });
  std::map<Bucket, int> shapes_per_bucket;
  for (const auto& job : jobs) ++shapes_per_bucket[Bucket::of(job.problem)];
  const double bucket_count = double(shapes_per_bucket.size());
  auto say = [&](const std::string& prefix, const std::string& line) {
    if (options.progress) *options.progress << prefix << line << "\n" << std::flush;
  };

  Budget remaining = options.budget;
  double weight_left = 1.0;
  std::vector<TunedShape> tuned;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const ShapeJob& job = jobs[i];
    const Bucket bucket = Bucket::of(job.problem);
    const double weight = 1.0 / (bucket_count * shapes_per_bucket[bucket]);
    const Budget share = share_of(remaining, weight, weight_left);
    weight_left -= weight;
    const std::string prefix = "[tune " + std::to_string(i + 1) + "/" + std::to_string(jobs.size()) + " " +
                               bucket.label() + " " + job.problem.str() + "] ";
    if (share.max_evals && *share.max_evals == 0) {
      say(prefix, "skipped: no evaluations left in the budget");
      continue;
    }
    if (share.seconds && !(*share.seconds > 0)) {
      say(prefix, "skipped: no time left in the budget");
      continue;
    }
    const SearchSpace space = job.space();
    for (const auto& [name, reason] : space.refused()) say(prefix, name + " left out: " + reason);
    if (space.empty()) {
      say(prefix, "skipped: no variant can solve this shape here");
      continue;
    }
    for (const std::string& note : space.default_notes()) say(prefix, note);
    const size_t defaults = space.default_indices().size();
    say(prefix, options.strategy + " over " + std::to_string(space.size()) + " points (" + std::to_string(defaults) +
                    (defaults == 1 ? " default" : " defaults") + " first), budget " + share.str());
    auto strategy = make_strategy(options.strategy, space, options.seed);
    TuneOptions tune_options;
    tune_options.budget = share;
    tune_options.clock = options.clock;
    tune_options.progress = options.progress;
    tune_options.progress_prefix = prefix;
    tune_options.cache = options.cache;
    tune_options.device = options.device;
    tune_options.device_limits = options.device_limits;
    TunedShape result{job.problem, run_tune(space, job.problem, *strategy, job.evaluator(), tune_options), share};
    say(prefix, "done: " + result.outcome.stop_reason + ", " + std::to_string(result.outcome.new_evals) +
                    " measured, " + std::to_string(result.outcome.cached_evals) + " from the cache, " +
                    format_duration(result.outcome.charged_seconds()) + " charged");
    if (remaining.seconds) remaining.seconds = std::max(0.0, *remaining.seconds - result.outcome.charged_seconds());
    if (remaining.max_evals) remaining.max_evals = *remaining.max_evals - int64_t(result.outcome.new_evals);
    tuned.push_back(std::move(result));
  }
  return tuned;
}

}  // namespace mk::tuner
