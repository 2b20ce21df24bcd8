#include <unordered_set>

#include "core/errors.hpp"
#include "tuner/strategy.hpp"

namespace mk::tuner {
namespace {

class ExhaustiveStrategy : public Strategy {
 public:
  explicit ExhaustiveStrategy(const SearchSpace& space) : space_(space) {}
  std::string name() const override { return "exhaustive"; }

  std::optional<Candidate> next(const History& history) override {
    // Cursor plus a look at the history keeps this correct even if a driver seeded the
    // history with points it found elsewhere.
    for (; absorbed_ < history.size(); ++absorbed_) seen_.insert(history[absorbed_].candidate.key());
    while (next_ < space_.size()) {
      const Candidate& candidate = space_.at(next_++);
      if (!seen_.count(candidate.key())) return candidate;
    }
    return std::nullopt;
  }

 private:
  const SearchSpace& space_;
  size_t next_ = 0;
  size_t absorbed_ = 0;
  std::unordered_set<std::string> seen_;
};

}  // namespace

std::unique_ptr<Strategy> make_exhaustive_strategy(const SearchSpace& space) {
  return std::make_unique<ExhaustiveStrategy>(space);
}

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"exhaustive", "random", "anneal"};
  return names;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchSpace& space, uint64_t seed) {
  if (name == "exhaustive") return make_exhaustive_strategy(space);
  if (name == "random") return make_random_strategy(space, seed);
  if (name == "anneal" || name == "annealing") return make_annealing_strategy(space, seed);
  throw InputError("unknown strategy '" + name + "' (known: exhaustive, random, anneal)");
}

}  // namespace mk::tuner
