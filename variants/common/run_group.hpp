#pragma once
// Several prepared runs answering as one (a batch's problems, a K range's passes): a step runs
// each on its own stream forked from the first run's and joined back (StreamFork), so events on
// the first run's stream time the whole step, and read-backs list the runs' Ks one run after
// another. The owner adds what depends on how the work is divided (centroids, the split step).
#include <memory>
#include <utility>
#include <vector>

#include "variants/common/stream_fork.hpp"
#include "variants/variant.hpp"

namespace mk {

class RunGroup : public PreparedRun {
 public:
  void iterate(bool store_labels) override {
    fork_->step([store_labels](PreparedRun& run, size_t) { run.iterate(store_labels); });
  }

  void synchronize() override {
    for (auto& run : runs_) run->synchronize();
  }

  IterationResult read_back() override {
    IterationResult all;
    for (auto& run : runs_) {
      IterationResult one = run->read_back();
      for (auto& k : one.per_k) all.per_k.push_back(std::move(k));
    }
    return all;
  }

  void* stream() override { return runs_[0]->stream(); }

  std::optional<double> conversion_ms() const override {
    std::optional<double> total;
    for (const auto& run : runs_)
      if (auto ms = run->conversion_ms()) total = total.value_or(0.0) + *ms;
    return total;
  }

  void prepare_split() override {
    for (auto& run : runs_) run->prepare_split();
  }

  void expect_labels_read_back() override {
    for (auto& run : runs_) run->expect_labels_read_back();
  }

 protected:
  // Called by the owner's constructor once every run is prepared; `what` names it in errors.
  void start_fork(const char* what) { fork_ = std::make_unique<StreamFork>(runs_, what); }

  std::vector<std::unique_ptr<PreparedRun>> runs_;
  std::unique_ptr<StreamFork> fork_;  // declared after runs_: destroyed before them
};

}  // namespace mk
