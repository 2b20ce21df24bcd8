// Simulated annealing seeded from the best of a random batch. Kernel timings over
// (grid, points per thread, block) are mostly smooth with a few cliffs (waves, register
// spills), so a walk over one-axis moves finds the basin quickly, and accepting a few
// slower moves early lets it step over the cliffs a greedy climb would stop at.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "tuner/strategy.hpp"

namespace mk::tuner {
namespace {

class AnnealingStrategy : public Strategy {
 public:
  AnnealingStrategy(const SearchSpace& space, uint64_t seed, const AnnealingOptions& options)
      : space_(space),
        rng_(seed),
        options_(options),
        seen_(space.size(), false),
        cost_(space.size(), std::numeric_limits<double>::infinity()),
        unseen_(space.size()),
        temperature_(options.initial_temperature) {
    batch_ = options.initial_batch ? options.initial_batch
                                   : std::clamp<size_t>(space.size() / 10, 4, 16);
    batch_ = std::min(batch_, space.size());
  }
  std::string name() const override { return "anneal"; }

  std::optional<Candidate> next(const History& history) override {
    absorb(history);
    if (unseen_ == 0) return std::nullopt;
    if (initial_proposed_ < batch_) {
      ++initial_proposed_;
      return propose(random_unseen(), false);
    }
    if (!current_) current_ = best_seen();
    if (current_) {
      std::vector<size_t> moves = unseen_neighbours(*current_);
      if (moves.empty()) {
        // The walk has measured everything around it: restart from the best point that
        // still has an unmeasured neighbour.
        for (size_t index : seen_by_cost()) {
          moves = unseen_neighbours(index);
          if (!moves.empty()) {
            current_ = index;
            break;
          }
        }
      }
      if (!moves.empty()) return propose(moves[uniform_index(rng_, moves.size())], true);
    }
    // Nothing reachable by one-axis moves (disconnected space or only failures so far).
    return propose(random_unseen(), false);
  }

 private:
  Candidate propose(size_t index, bool walk_step) {
    pending_ = index;
    pending_is_walk_ = walk_step;
    return space_.at(index);
  }

  void absorb(const History& history) {
    for (; absorbed_ < history.size(); ++absorbed_) {
      const Evaluation& evaluation = history[absorbed_];
      const auto index = space_.index_of(evaluation.candidate);
      if (!index) continue;
      if (!seen_[*index]) {
        seen_[*index] = true;
        --unseen_;
      }
      cost_[*index] = cost_of(evaluation.measurement);
      if (pending_ && *pending_ == *index) {
        if (pending_is_walk_) step_to(*index);
        pending_.reset();
      }
    }
  }

  void step_to(size_t index) {
    if (!current_ || accept(cost_[index], cost_[*current_])) current_ = index;
    temperature_ *= options_.cooling;
  }

  bool accept(double candidate_cost, double current_cost) {
    if (!std::isfinite(candidate_cost)) return false;
    if (!std::isfinite(current_cost)) return true;
    const double delta = std::log(candidate_cost / current_cost);
    if (delta <= 0) return true;
    if (temperature_ <= 0) return false;
    return uniform01(rng_) < std::exp(-delta / temperature_);
  }

  size_t random_unseen() {
    uint64_t target = uniform_index(rng_, unseen_);
    for (size_t i = 0; i < seen_.size(); ++i)
      if (!seen_[i] && target-- == 0) return i;
    return 0;  // unreachable: unseen_ counts the false entries
  }

  std::optional<size_t> best_seen() const {
    std::optional<size_t> best;
    for (size_t i = 0; i < seen_.size(); ++i)
      if (seen_[i] && std::isfinite(cost_[i]) && (!best || cost_[i] < cost_[*best])) best = i;
    return best;
  }

  std::vector<size_t> seen_by_cost() const {
    std::vector<size_t> order;
    for (size_t i = 0; i < seen_.size(); ++i)
      if (seen_[i] && std::isfinite(cost_[i])) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost_[a] < cost_[b]; });
    return order;
  }

  std::vector<size_t> unseen_neighbours(size_t index) const {
    std::vector<size_t> out;
    for (size_t neighbour : space_.neighbour_indices(index))
      if (!seen_[neighbour]) out.push_back(neighbour);
    return out;
  }

  const SearchSpace& space_;
  Rng rng_;
  AnnealingOptions options_;
  std::vector<bool> seen_;
  std::vector<double> cost_;
  size_t unseen_;
  size_t batch_ = 0;
  size_t initial_proposed_ = 0;
  size_t absorbed_ = 0;
  std::optional<size_t> current_;
  std::optional<size_t> pending_;
  bool pending_is_walk_ = false;
  double temperature_;
};

}  // namespace

std::unique_ptr<Strategy> make_annealing_strategy(const SearchSpace& space, uint64_t seed,
                                                  const AnnealingOptions& options) {
  return std::make_unique<AnnealingStrategy>(space, seed, options);
}

}  // namespace mk::tuner
