#pragma once
// Tuning several shapes (a suite) under one budget: every bucket gets an equal share and
// every shape an equal share of its bucket's; what a shape leaves unused rolls over.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "tuner/budget.hpp"
#include "tuner/cache.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/search_space.hpp"
#include "tuner/tune_loop.hpp"

namespace mk::tuner {

struct ShapeJob {
  Problem problem;
  // Called when the shape's turn comes, so data sets and spaces exist one at a time.
  std::function<SearchSpace()> space;
  std::function<Evaluator()> evaluator;
};

struct ShapesOptions {
  std::string strategy = "anneal";
  uint64_t seed = 1;
  Budget budget;
  Clock clock = steady_clock_seconds();
  std::ostream* progress = nullptr;  // per-shape headers and the tune loop's lines
  TuneCache* cache = nullptr;
  DeviceKey device;
  nlohmann::json device_limits;
};

struct TunedShape {
  Problem problem;
  TuneOutcome outcome;
  Budget share;
};

// Tunes the jobs in bucket order. A shape's share is charged what its tune charged
// (TuneOutcome::charged_seconds, cached points included), so a suite run again after a
// kill does not get a fresh budget. Shapes with nothing left to spend or nothing to
// tune are skipped (and absent from the result).
std::vector<TunedShape> tune_shapes(std::vector<ShapeJob> jobs, const ShapesOptions& options);

}  // namespace mk::tuner
