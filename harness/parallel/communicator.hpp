#pragma once
// The collectives a sharded run needs (docs/multi-gpu.md), behind one interface so the same
// ShardedRun reduces through NCCL on GPUs, MPI across processes, or threads of one process
// (what CPU CI exercises). One Communicator object is one rank's endpoint.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/errors.hpp"

namespace mk {

// A collective that could not complete because a peer failed, or a rank gave up waiting.
// The peer's own error is the one to report; this one says which rank stopped and why.
struct CollectiveAborted : DeviceError {
  explicit CollectiveAborted(const std::string& what) : DeviceError(what) {}
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "in-process", "mpi" or "nccl", as rows record it.
  virtual std::string kind() const = 0;

  // --- The step's reduction: sums of the shards' accumulators, in place. ---
  // True when all_reduce_sum takes device buffers and queues on `stream` (NCCL); false when
  // it takes host buffers and completes before it returns.
  virtual bool reduces_device_buffers() const = 0;
  virtual void all_reduce_sum(double* data, size_t count, void* stream) = 0;
  virtual void all_reduce_sum(unsigned long long* data, size_t count, void* stream) = 0;
  // Queue several reductions as one (NCCL groups them into one launch); no-ops elsewhere.
  virtual void group_start() {}
  virtual void group_end() {}
  // Returns once the reductions queued on `stream` are complete; a peer that died or hangs
  // makes it throw CollectiveAborted after collective_timeout() instead of waiting forever.
  virtual void finish(void* stream) { (void)stream; }

  // --- Host-side control, always on host buffers, always blocking. ---
  virtual void host_all_reduce_sum(double* data, size_t count) = 0;
  virtual void broadcast(void* bytes, size_t size, int root) = 0;
  virtual void barrier() = 0;
  // Makes every rank's pending and future collectives fail with `reason` (in-process and
  // NCCL), or ends the whole job (MPI: MPI_Abort, as a dead rank does). Safe to call from
  // any thread, more than once.
  virtual void abort(const std::string& reason) = 0;
};

// How long a rank waits for its peers in one collective before it declares them dead:
// MKBENCH_COLLECTIVE_TIMEOUT_S (seconds, > 0), default 300. A healthy peer arrives within
// one shard's accumulate (milliseconds to seconds); 300 s leaves room for a peer that is
// still preparing a large shard. InputError for a malformed value.
std::chrono::duration<double> collective_timeout();

}  // namespace mk
