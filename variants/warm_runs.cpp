#include "variants/warm_runs.hpp"

#include <cuda_runtime.h>
#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

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
  Clock::time_point cold_at;
  int freeing = 0;  // runs taken out to be destroyed, not yet destroyed
  bool reaper = false;  // this process has a reaper thread
  bool reaper_running = false;  // its thread has entered reap()
  bool stopping = false;
  bool reaper_done = false;
  bool hooks = false;  // release_at_exit and the fork handlers registered
  // Runs a fork()ed child inherited: its parent's, in its parent's CUDA context, so never freed
  // here; held so that they stay reachable (no leak report under LeakSanitizer).
  std::vector<PreparedRun*> inherited;
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

// Destroys `run` outside the lock, counted in `freeing` meanwhile so that release_warm_runs can
// wait for it. Called with `lock` held; returns with it held.
void destroy_unlocked(WarmRuns& state, std::unique_lock<std::mutex>& lock, std::unique_ptr<PreparedRun> run,
                      int device) {
  if (!run) return;
  ++state.freeing;
  lock.unlock();
  destroy(std::move(run), device);
  lock.lock();
  --state.freeing;
  state.changed.notify_all();
}

void reap() {
  WarmRuns& state = warm();
  bool relaxed = false;
  std::unique_lock<std::mutex> lock(state.mutex);
  state.reaper_running = true;
  state.changed.notify_all();
  while (!state.stopping) {
    if (!state.run) {
      state.changed.wait(lock);
      continue;
    }
    if (Clock::now() < state.cold_at) {
      state.changed.wait_until(lock, state.cold_at);
      continue;
    }
    const int device = state.key.device;
    if (device >= 0 && !relaxed) {
      // In relaxed mode the reaper's frees are not the prohibited calls that would invalidate a
      // global-mode stream capture another thread began (a CUDA graph capture by another library).
      cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
      cudaThreadExchangeStreamCaptureMode(&mode);
      relaxed = true;
    }
    destroy_unlocked(state, lock, std::move(state.run), device);
  }
  state.reaper_done = true;
  state.changed.notify_all();
}

void release_at_exit() {
  WarmRuns& state = warm();
  {
    std::unique_lock<std::mutex> lock(state.mutex);
    if (state.reaper) {
      state.stopping = true;
      state.changed.notify_all();
      state.changed.wait(lock, [&] { return state.reaper_done; });
    }
  }
  release_warm_runs();
}

// fork() while another thread holds the lock would leave the child's copy locked for good. The
// child has no reaper and its parent's run is not its own; the condition variable the parent's
// reaper waits on would, in the child, wait for that waiter before a notify returned (a hang
// WarmRuns.AForkedChild... found), so the child makes a fresh one over it.
void lock_before_fork() { warm().mutex.lock(); }
void unlock_in_parent() { warm().mutex.unlock(); }
void renew_in_child() {
  WarmRuns& state = warm();
  new (&state.changed) std::condition_variable();
  if (state.run) state.inherited.push_back(state.run.release());
  state.freeing = 0;
  state.reaper = false;
  state.reaper_running = false;
  state.stopping = false;
  state.reaper_done = false;
  state.mutex.unlock();
}

// With `lock` held: a reaper of this process, started if there is none, and running before this
// returns. False when no thread can be started (a process or thread limit). The wait is for fork():
// a thread still starting may hold the sanitizer runtime's locks (its thread registry, its
// allocator), which GCC 12's AddressSanitizer does not take around fork(), so a child forked then
// could hang for good (WarmRuns.AForkedChild... under the asan preset: CI at 04dfbaa, 3000 s).
// Another caller that finds the reaper started waits for it to run as well; false too when the
// process began exiting meanwhile (release_at_exit set stopping while the lock was released).
bool ensure_reaper(WarmRuns& state, std::unique_lock<std::mutex>& lock) {
  if (!state.reaper) {
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
    state.reaper = true;
    state.stopping = false;
    state.reaper_done = false;
  }
  state.changed.wait(lock, [&] { return state.reaper_running || state.stopping; });
  return !state.stopping;
}

}  // namespace

void keep_run_warm(const WarmRunKey& key, std::unique_ptr<PreparedRun> run) {
  WarmRuns& state = warm();
  std::unique_lock<std::mutex> lock(state.mutex);
  if (state.stopping || !ensure_reaper(state, lock)) {
    // exiting, or nothing could release it later: keep nothing
    destroy_unlocked(state, lock, std::move(run), key.device);
    return;
  }
  if (!run) return;
  std::unique_ptr<PreparedRun> replaced = std::move(state.run);
  const int replaced_device = state.key.device;
  state.key = key;
  state.run = std::move(run);
  state.cold_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kWarmSeconds));
  state.changed.notify_all();
  destroy_unlocked(state, lock, std::move(replaced), replaced_device);
}

std::unique_ptr<PreparedRun> take_warm_run(const WarmRunKey& key) {
  WarmRuns& state = warm();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.run || !(state.key == key)) return nullptr;
  return std::move(state.run);
}

bool warm_run_holds(int device, const std::string& problem) {
  WarmRuns& state = warm();
  std::lock_guard<std::mutex> lock(state.mutex);
  return state.run && state.key.device == device && state.key.problem == problem;
}

bool release_warm_runs() {
  WarmRuns& state = warm();
  std::unique_lock<std::mutex> lock(state.mutex);
  // A run another thread is destroying counts as released once it is gone.
  const bool in_flight = state.freeing > 0;
  const int device = state.key.device;
  std::unique_ptr<PreparedRun> run = std::move(state.run);
  const bool had = run != nullptr || in_flight;
  destroy_unlocked(state, lock, std::move(run), device);
  state.changed.wait(lock, [&] { return state.freeing == 0; });
  return had;
}

}  // namespace mk
