#pragma once
// Search strategies behind one interface: the tune loop asks next(history) for a point,
// measures it (or finds it in the cache) and appends the result to the history. A
// strategy never proposes a point already in the history; nullopt means it is done.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tuner/evaluator.hpp"
#include "tuner/search_space.hpp"

namespace mk::tuner {

struct Evaluation {
  Candidate candidate;
  Measurement measurement;
  bool from_cache = false;
};
using History = std::vector<Evaluation>;

// What strategies minimise: the median time, +inf for a failed point.
inline double cost_of(const Measurement& measurement) {
  return measurement.ok ? measurement.median_ms : std::numeric_limits<double>::infinity();
}

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  virtual std::optional<Candidate> next(const History& history) = 0;
};

// Every point, in SearchSpace::enumerate order.
std::unique_ptr<Strategy> make_exhaustive_strategy(const SearchSpace& space);
// Uniform sampling without replacement.
std::unique_ptr<Strategy> make_random_strategy(const SearchSpace& space, uint64_t seed);

struct AnnealingOptions {
  // Random points measured before the walk starts from the best of them;
  // 0 = automatic (a tenth of the space, between 4 and 16).
  size_t initial_batch = 0;
  // Temperature on the log of the time ratio: at 0.05 a neighbour 5% slower is accepted
  // with probability 1/e; cooled geometrically after every step of the walk.
  double initial_temperature = 0.05;
  double cooling = 0.9;
};
// Simulated annealing over SearchSpace::neighbours.
std::unique_ptr<Strategy> make_annealing_strategy(const SearchSpace& space, uint64_t seed,
                                                  const AnnealingOptions& options = {});

const std::vector<std::string>& strategy_names();  // exhaustive, random, anneal
// InputError naming the known strategies for anything else.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchSpace& space, uint64_t seed);

}  // namespace mk::tuner
