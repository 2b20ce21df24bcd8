#pragma once
// One host thread per local shard, so the shards' steps run at the same time: each GPU's
// launches, its wait for the all-reduce and its update's read-back overlap the others'
// instead of queueing behind them. A single shard runs on the calling thread (an MPI rank:
// MPI is then called by one thread only).
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mk {

class ShardWorkers {
 public:
  // `setup(i)` runs once on worker i before any task (cudaSetDevice, OpenMP threads).
  // `on_failure(what)` runs as soon as a task throws, on the failing thread, so the peers
  // waiting in a collective are released (the communicators' abort) before the failure is
  // reported. Workers of GPU shards spin briefly for a task before they sleep: a step of
  // a few hundred microseconds should not pay a futex wake-up per shard.
  ShardWorkers(int count, std::function<void(int)> setup, std::function<void(const std::string&)> on_failure,
               bool spin);
  ~ShardWorkers();
  ShardWorkers(const ShardWorkers&) = delete;
  ShardWorkers& operator=(const ShardWorkers&) = delete;

  int count() const { return count_; }
  // Runs task(i) for every shard i, concurrently; returns when all are done. When tasks
  // throw, rethrows the first failure that is not a CollectiveAborted (the cause, not its
  // echo in the peers), else the first one.
  void run(const std::function<void(int)>& task);

 private:
  void loop(int index);
  void record_failure(std::exception_ptr error);

  const int count_;
  std::function<void(int)> setup_;
  std::function<void(const std::string&)> on_failure_;
  const bool spin_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* task_ = nullptr;
  std::atomic<unsigned long long> generation_{0};
  std::atomic<int> pending_{0};
  bool stopping_ = false;
  std::vector<std::exception_ptr> failures_;
  std::vector<std::thread> threads_;
  bool setup_done_inline_ = false;
};

}  // namespace mk
