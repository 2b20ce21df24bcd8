// Stepping several runs as one on forked streams (stream_fork.hpp).
#include "variants/common/stream_fork.hpp"

#include <cuda_runtime.h>

#include <string>

#include "core/errors.hpp"

namespace mk {
namespace {

void cuda_ok(cudaError_t status, const char* who, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  throw DeviceError(std::string(who) + ": " + what + ": " + cudaGetErrorName(status) + " (" +
                    cudaGetErrorString(status) + ")");
}

// Whether the runs have streams of their own to fork and join (a run on the legacy default
// stream is ordered with every other anyway).
bool streams_differ(const std::vector<std::unique_ptr<PreparedRun>>& runs) {
  for (const auto& run : runs)
    if (!run->stream()) return false;
  return runs.size() > 1;
}

}  // namespace

StreamFork::StreamFork(const std::vector<std::unique_ptr<PreparedRun>>& runs, const char* what)
    : runs_(runs), what_(what) {
  if (!streams_differ(runs)) return;
  try {
    cudaEvent_t fork = nullptr;
    cuda_ok(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), what_, "cudaEventCreate");
    fork_ = fork;
    joins_.assign(runs.size(), nullptr);
    for (size_t i = 1; i < runs.size(); ++i) {
      cudaEvent_t join = nullptr;
      cuda_ok(cudaEventCreateWithFlags(&join, cudaEventDisableTiming), what_, "cudaEventCreate");
      joins_[i] = join;
    }
  } catch (...) {
    destroy_events();  // no destructor runs for a constructor that throws
    throw;
  }
}

StreamFork::~StreamFork() { destroy_events(); }

void StreamFork::destroy_events() {
  if (fork_) cudaEventDestroy(static_cast<cudaEvent_t>(fork_));
  for (void* join : joins_)
    if (join) cudaEventDestroy(static_cast<cudaEvent_t>(join));
  fork_ = nullptr;
  joins_.clear();
}

void StreamFork::step(const std::function<void(PreparedRun&, size_t)>& work) {
  if (!fork_) {
    for (size_t i = 0; i < runs_.size(); ++i) work(*runs_[i], i);
    return;
  }
  auto main = static_cast<cudaStream_t>(runs_[0]->stream());
  auto fork = static_cast<cudaEvent_t>(fork_);
  cuda_ok(cudaEventRecord(fork, main), what_, "cudaEventRecord");
  work(*runs_[0], 0);
  for (size_t i = 1; i < runs_.size(); ++i) {
    auto stream = static_cast<cudaStream_t>(runs_[i]->stream());
    auto join = static_cast<cudaEvent_t>(joins_[i]);
    cuda_ok(cudaStreamWaitEvent(stream, fork, 0), what_, "cudaStreamWaitEvent");
    try {
      work(*runs_[i], i);
    } catch (...) {
      // Join what run i queued before it failed, so the first stream still orders every forked
      // run's work before whatever follows (best effort: the exception in flight is the error).
      if (cudaEventRecord(join, stream) == cudaSuccess) (void)cudaStreamWaitEvent(main, join, 0);
      throw;
    }
    cuda_ok(cudaEventRecord(join, stream), what_, "cudaEventRecord");
    cuda_ok(cudaStreamWaitEvent(main, join, 0), what_, "cudaStreamWaitEvent");
  }
}

}  // namespace mk
