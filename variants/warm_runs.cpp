#include "variants/warm_runs.hpp"

#include <cuda_runtime.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace mk {

namespace {

using Clock = std::chrono::steady_clock;

// The kept run and the thread that releases it when it goes cold. Never destroyed (a static's
// destructor would run after the CUDA runtime's teardown); release_at_exit, registered on the
// first keep, empties it while the runtime still stands.
struct WarmRuns {
  std::mutex mutex;
  std::condition_variable changed;
  WarmRunKey key;
  std::unique_ptr<PreparedRun> run;
  int64_t bytes = 0;
  Clock::time_point cold_at;
  bool stopping = false;
  std::thread reaper;
};

WarmRuns& warm() {
  static auto* state = new WarmRuns();
  return *state;
}

// Destroys a run with its device current (a run's buffers and stream belong to that device).
void destroy(std::unique_ptr<PreparedRun> run, int device) {
  if (!run) return;
  int previous = -1;
  const bool switch_device = device >= 0 && cudaGetDevice(&previous) == cudaSuccess && previous != device;
  if (switch_device) cudaSetDevice(device);
  run.reset();
  if (switch_device) cudaSetDevice(previous);
  if (device >= 0) cudaGetLastError();  // a failed free is the run's to report; leave no sticky error
}

void reap() {
  WarmRuns& state = warm();
  std::unique_lock<std::mutex> lock(state.mutex);
  while (!state.stopping) {
    if (!state.run) {
      state.changed.wait(lock);
      continue;
    }
    if (Clock::now() < state.cold_at) {
      state.changed.wait_until(lock, state.cold_at);
      continue;
    }
    std::unique_ptr<PreparedRun> cold = std::move(state.run);
    const int device = state.key.device;
    state.bytes = 0;
    lock.unlock();
    destroy(std::move(cold), device);
    lock.lock();
  }
}

void release_at_exit() {
  WarmRuns& state = warm();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.stopping = true;
  }
  state.changed.notify_all();
  if (state.reaper.joinable()) state.reaper.join();
  release_warm_runs();
}

}  // namespace

void keep_run_warm(const WarmRunKey& key, std::unique_ptr<PreparedRun> run, int64_t bytes) {
  WarmRuns& state = warm();
  std::unique_ptr<PreparedRun> replaced;
  int replaced_device = -1;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.stopping) {
      replaced = std::move(run);
      replaced_device = key.device;
    } else {
      if (!state.reaper.joinable()) {
        state.reaper = std::thread(reap);
        std::atexit(release_at_exit);
      }
      replaced = std::move(state.run);
      replaced_device = state.key.device;
      state.key = key;
      state.run = std::move(run);
      state.bytes = state.run ? bytes : 0;
      state.cold_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kWarmSeconds));
    }
  }
  state.changed.notify_all();
  destroy(std::move(replaced), replaced_device);
}

std::unique_ptr<PreparedRun> take_warm_run(const WarmRunKey& key) {
  WarmRuns& state = warm();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.run || !(state.key == key)) return nullptr;
  state.bytes = 0;
  return std::move(state.run);
}

int64_t warm_run_bytes(int device) {
  WarmRuns& state = warm();
  std::lock_guard<std::mutex> lock(state.mutex);
  return state.run && state.key.device == device ? state.bytes : 0;
}

bool release_warm_runs() {
  WarmRuns& state = warm();
  std::unique_ptr<PreparedRun> run;
  int device = -1;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    run = std::move(state.run);
    device = state.key.device;
    state.bytes = 0;
  }
  const bool had = run != nullptr;
  destroy(std::move(run), device);
  return had;
}

}  // namespace mk
