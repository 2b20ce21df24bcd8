#include "harness/parallel/shard_workers.hpp"

#include <chrono>

#include "harness/parallel/communicator.hpp"

namespace mk {

namespace {

// How long a GPU shard's thread (and the caller) spins for the next task or the end of the
// current one before sleeping: longer than the host's part of one step, short enough that an
// idle run does not keep cores busy.
constexpr std::chrono::microseconds kSpin(500);

template <typename Ready>
bool spin_until(Ready ready) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (std::chrono::steady_clock::now() < until) {
    if (ready()) return true;
    std::this_thread::yield();
  }
  return ready();
}

std::string describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

bool is_echo(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const CollectiveAborted&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

ShardWorkers::ShardWorkers(int count, std::function<void(int)> setup,
                           std::function<void(const std::string&)> on_failure, bool spin)
    : count_(count), setup_(std::move(setup)), on_failure_(std::move(on_failure)), spin_(spin) {
  if (count_ < 2) return;  // the calling thread runs a single shard
  for (int i = 0; i < count_; ++i) threads_.emplace_back([this, i] { loop(i); });
}

ShardWorkers::~ShardWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_) thread.join();
}

void ShardWorkers::record_failure(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failures_.push_back(error);
  }
  if (on_failure_ && !is_echo(error)) on_failure_(describe(error));
}

void ShardWorkers::run(const std::function<void(int)>& task) {
  failures_.clear();
  if (count_ < 2) {
    try {
      if (!setup_done_inline_ && setup_) setup_(0);
      setup_done_inline_ = true;
      task(0);
    } catch (...) {
      record_failure(std::current_exception());
    }
  } else {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = &task;
      pending_.store(count_);
      generation_.fetch_add(1);
    }
    wake_.notify_all();
    if (!spin_ || !spin_until([this] { return pending_.load() == 0; })) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [this] { return pending_.load() == 0; });
    }
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = nullptr;
  }
  if (failures_.empty()) return;
  for (const auto& failure : failures_)
    if (!is_echo(failure)) std::rethrow_exception(failure);
  std::rethrow_exception(failures_.front());
}

void ShardWorkers::loop(int index) {
  std::string setup_error;
  try {
    if (setup_) setup_(index);
  } catch (const std::exception& e) {
    setup_error = e.what();
  }
  unsigned long long seen = 0;
  for (;;) {
    const std::function<void(int)>* task = nullptr;
    if (!spin_ || !spin_until([&] { return generation_.load() != seen; })) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen || stopping_; });
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      seen = generation_.load();
      task = task_;
    }
    try {
      // A shard whose setup failed (a GPU that cannot be selected) fails every task with it.
      if (!setup_error.empty()) throw DeviceError("shard " + std::to_string(index) + " could not start: " + setup_error);
      (*task)(index);
    } catch (...) {
      record_failure(std::current_exception());
    }
    if (pending_.fetch_sub(1) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_all();
    }
  }
}

}  // namespace mk
