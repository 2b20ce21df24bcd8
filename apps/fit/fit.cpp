#include "apps/fit/fit.hpp"

#include <chrono>

#include "apps/fit/data_moments.hpp"
#include "apps/fit/weighted_lloyd.hpp"
#include "apps/seeding/seeding.hpp"
#include "core/errors.hpp"
#include "datasets/counter_rng.hpp"

namespace mk {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The seeding's errors keep their category, with the --init value in front; an unreadable or
// ill-shaped npy:PATH file is bad input (exit 2) whatever the seeding threw for it.
SeedingResult seed_or_explain(const Dataset& data, const KRange& k, const SeedingOptions& options,
                              const DeviceInfo& device) {
  try {
    return seed_centroids(data, k, options, device);
  } catch (const DeviceError&) {
    throw;
  } catch (const UnsupportedError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError("--init " + options.method + ": " + e.what());
  }
}

}  // namespace

uint64_t restart_seed(uint64_t seed, int restart) {
  return restart == 0 ? seed : mix64(seed + uint64_t(restart) * 0x9e3779b97f4a7c15ULL);
}

bool init_depends_on_seed(const std::string& init) {
  return init == "random" || init == "k-means++" || init == "k-means||";
}

FitResult fit_k_range(std::unique_ptr<PreparedRun> run, const Dataset& data, const FitSettings& settings,
                      const DeviceInfo& seeding_device) {
  FitResult result;
  const KRange& k = settings.k;
  const auto moments_start = std::chrono::steady_clock::now();
  const DataMoments moments = data_moments(data);
  result.seconds.metrics += seconds_since(moments_start);
  result.tol_threshold = shift_threshold(moments, settings.tol);

  for (int restart = 0; restart < settings.n_init; ++restart) {
    SeedingOptions seeding;
    seeding.method = settings.init;
    seeding.seed = restart_seed(settings.seed, restart);
    seeding.weights = settings.weights.get();
    seeding.sample_rows = settings.init_sample;
    const auto seeding_start = std::chrono::steady_clock::now();
    SeedingResult seeds;
    if (settings.initial_centroids.empty()) {
      seeds = seed_or_explain(data, k, seeding, seeding_device);
    } else {
      seeds.packed = settings.initial_centroids;
      seeds.method = settings.init;
    }
    result.seconds.seeding += seconds_since(seeding_start);
    result.seeding_method = seeds.method;
    result.seeding_path = seeds.path;
    if (!seeds.sample_reason.empty()) {
      result.seeding_sample_rows = seeds.rows_seen;
      result.seeding_sample_reason = seeds.sample_reason;
    }
    if (seeds.packed.size() != size_t(k.sum()) * size_t(data.n))
      throw InputError("--init " + settings.init + " gave " + std::to_string(seeds.packed.size()) +
                       " centroid values, expected " + std::to_string(size_t(k.sum()) * size_t(data.n)));

    LoopSettings loop;
    loop.max_iter = settings.max_iter;
    loop.shift_threshold = result.tol_threshold;
    loop.rounding_floor = summation_order_floor(moments);
    loop.empty = settings.empty;
    loop.seed = seeding.seed;
    if (settings.on_step)
      loop.on_step = [&settings, restart](int iteration, const StepSummary& step, const std::vector<uint8_t>& active) {
        settings.on_step(restart, iteration, step, active);
      };
    LoopOutcome outcome = settings.weights
                              ? run_weighted_to_convergence(*run, k, data, *settings.weights, seeds.packed, loop)
                              : run_to_convergence(*run, k, data.n, seeds.packed, loop);
    result.steps += outcome.steps;
    result.step_seconds.insert(result.step_seconds.end(), outcome.step_seconds.begin(), outcome.step_seconds.end());
    result.seconds.prepare += outcome.prepare_seconds;
    result.seconds.iterations += outcome.iteration_seconds;
    result.seconds.labels += outcome.labels_seconds;

    if (restart == 0) {
      result.per_k = std::move(outcome.per_k);
      result.best_restart.assign(result.per_k.size(), 0);
      continue;
    }
    // scikit-learn's n_init: the run with the lowest final inertia wins, here per K.
    for (size_t index = 0; index < result.per_k.size(); ++index)
      if (outcome.per_k[index].inertia < result.per_k[index].inertia) {
        result.per_k[index] = std::move(outcome.per_k[index]);
        result.best_restart[index] = restart;
      }
  }

  if (settings.before_release) settings.before_release(*run);
  run.reset();  // its device memory goes back before the metric passes take theirs

  const auto metrics_start = std::chrono::steady_clock::now();
  ScoreSettings score;
  score.silhouette_sample = settings.silhouette_sample;
  score.seed = settings.seed;
  score.on_gpu = settings.metrics_on_gpu;
  result.scores = score_ks(result.per_k, data, moments, score);
  result.best = choose_best_k(result.scores);
  result.seconds.metrics += seconds_since(metrics_start);
  return result;
}

}  // namespace mk
