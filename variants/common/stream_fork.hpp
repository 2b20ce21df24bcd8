#pragma once
// Several prepared runs stepped as one (a batch's problems, a K range's passes): a step records
// an event on the first run's stream, each other run's stream waits for it, takes its work,
// and records an event that the first stream waits for. The runs' kernels may then overlap
// where the GPU has room, and events on the first stream time the whole step. Runs without a
// stream of their own (CPU runs, the legacy default stream) are simply stepped in turn.
#include <functional>
#include <memory>
#include <vector>

#include "variants/variant.hpp"

namespace mk {

class StreamFork {
 public:
  // The runs must outlive the fork. `what` names the caller in errors ("batched run").
  StreamFork(const std::vector<std::unique_ptr<PreparedRun>>& runs, const char* what);
  ~StreamFork();
  StreamFork(const StreamFork&) = delete;
  StreamFork& operator=(const StreamFork&) = delete;

  // work(run, index) for every run, forked from and joined into the first run's stream.
  void step(const std::function<void(PreparedRun&, size_t)>& work);

 private:
  void destroy_events();

  const std::vector<std::unique_ptr<PreparedRun>>& runs_;
  const char* what_;
  void* fork_ = nullptr;       // cudaEvent_t
  std::vector<void*> joins_;  // cudaEvent_t per run (the first unused)
};

}  // namespace mk
