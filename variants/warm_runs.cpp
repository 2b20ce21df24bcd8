#include "variants/warm_runs.hpp"

#include <cuda_runtime.h>
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>

namespace mk {

namespace {

using Clock = std::chrono::steady_clock;

// The kept run and the thread that releases it when it goes cold. Never destroyed (a static's
// destructor would run after the CUDA runtime's teardown); release_at_exit, registered on the
// first keep, empties it while the runtime still stands.
//
// The reaper is detached and belongs to the process that started it (`reaper_pid`): a fork()ed
// child has no such thread, and a run it inherits belongs to its parent's CUDA context, so the
// child drops that run without freeing it and starts its own reaper if it keeps one.
struct WarmRuns {
  std::mutex mutex;
  std::condition_variable changed;
  WarmRunKey key;
  std::unique_ptr<PreparedRun> run;
  pid_t run_pid = 0;  // the process whose run `run` is
  Clock::time_point cold_at;
  pid_t reaper_pid = 0;
  bool stopping = false;
  bool reaper_done = false;
  bool hooks = false;  // release_at_exit and the fork handlers registered
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

// With the lock held: a run inherited across fork() is the parent's; forget it.
void drop_inherited(WarmRuns& state) {
  if (state.run && state.run_pid != getpid()) static_cast<void>(state.run.release());
}

void reap() {
  // In relaxed mode the reaper's frees are not the prohibited calls that would invalidate a
  // global-mode stream capture another thread began (a CUDA graph capture by another library).
  cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&relaxed);
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
    lock.unlock();
    destroy(std::move(cold), device);
    lock.lock();
  }
  state.reaper_done = true;
  state.changed.notify_all();
}

void release_at_exit() {
  WarmRuns& state = warm();
  {
    std::unique_lock<std::mutex> lock(state.mutex);
    drop_inherited(state);
    if (state.reaper_pid == getpid()) {
      state.stopping = true;
      state.changed.notify_all();
      state.changed.wait(lock, [&] { return state.reaper_done; });
    }
  }
  release_warm_runs();
}

// fork() while another thread holds the lock would leave the child's copy locked for good; the
// condition variable the parent's reaper waits on would, in the child, wait for that waiter to
// leave before a notify returns (a hang seen in WarmRuns.AForkedChild...), so the child makes a
// fresh one (the old one's memory is left as it was).
void lock_before_fork() { warm().mutex.lock(); }
void unlock_in_parent() { warm().mutex.unlock(); }
void renew_in_child() {
  WarmRuns& state = warm();
  new (&state.changed) std::condition_variable();
  state.mutex.unlock();
}

// With the lock held: a reaper of this process, started if there is none. False when no thread
// can be started (a process or thread limit).
bool ensure_reaper(WarmRuns& state) {
  if (state.reaper_pid == getpid()) return true;
  if (!state.hooks) {
    state.hooks = true;
    std::atexit(release_at_exit);
    pthread_atfork(lock_before_fork, unlock_in_parent, renew_in_child);
  }
  try {
    std::thread(reap).detach();
  } catch (const std::system_error&) {
    return false;
  }
  state.reaper_pid = getpid();
  state.stopping = false;
  state.reaper_done = false;
  return true;
}

}  // namespace

void keep_run_warm(const WarmRunKey& key, std::unique_ptr<PreparedRun> run) {
  WarmRuns& state = warm();
  std::unique_ptr<PreparedRun> replaced;
  int replaced_device = key.device;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    drop_inherited(state);
    if (state.stopping || !ensure_reaper(state)) {
      replaced = std::move(run);  // exiting, or nothing could release it later: keep nothing
    } else if (run) {
      replaced = std::move(state.run);
      replaced_device = state.key.device;
      state.key = key;
      state.run = std::move(run);
      state.run_pid = getpid();
      state.cold_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kWarmSeconds));
    }
  }
  state.changed.notify_all();
  destroy(std::move(replaced), replaced_device);
}

std::unique_ptr<PreparedRun> take_warm_run(const WarmRunKey& key) {
  WarmRuns& state = warm();
  std::lock_guard<std::mutex> lock(state.mutex);
  drop_inherited(state);
  if (!state.run || !(state.key == key)) return nullptr;
  return std::move(state.run);
}

bool release_warm_runs() {
  WarmRuns& state = warm();
  std::unique_ptr<PreparedRun> run;
  int device = -1;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    drop_inherited(state);
    run = std::move(state.run);
    device = state.key.device;
  }
  const bool had = run != nullptr;
  destroy(std::move(run), device);
  return had;
}

}  // namespace mk
