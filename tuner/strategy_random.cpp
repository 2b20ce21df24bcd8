#include <numeric>
#include <unordered_set>

#include "tuner/strategy.hpp"

namespace mk::tuner {
namespace {

class RandomStrategy : public Strategy {
 public:
  RandomStrategy(const SearchSpace& space, uint64_t seed) : space_(space), order_(space.size()) {
    // Fisher-Yates with the portable draw, so a seed names the same order everywhere.
    std::iota(order_.begin(), order_.end(), size_t(0));
    Rng rng(seed);
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[uniform_index(rng, i)]);
  }
  std::string name() const override { return "random"; }

  std::optional<Candidate> next(const History& history) override {
    for (; absorbed_ < history.size(); ++absorbed_) seen_.insert(history[absorbed_].candidate.key());
    while (next_ < order_.size()) {
      const Candidate& candidate = space_.at(order_[next_++]);
      if (!seen_.count(candidate.key())) return candidate;
    }
    return std::nullopt;
  }

 private:
  const SearchSpace& space_;
  std::vector<size_t> order_;
  size_t next_ = 0;
  size_t absorbed_ = 0;
  std::unordered_set<std::string> seen_;
};

}  // namespace

std::unique_ptr<Strategy> make_random_strategy(const SearchSpace& space, uint64_t seed) {
  return std::make_unique<RandomStrategy>(space, seed);
}

}  // namespace mk::tuner
