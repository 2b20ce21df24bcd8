#include "harness/parallel/nccl_communicator.hpp"

#include <cstdlib>
#include <string>

#if MKBENCH_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#endif

namespace mk {

void keep_nvlink_multicast_off() { setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0); }

#if MKBENCH_HAVE_NCCL

namespace {

void nccl_check(ncclResult_t status, const char* what) {
  if (status == ncclSuccess) return;
  throw DeviceError(std::string(what) + ": " + ncclGetErrorString(status) +
                    (status == ncclSystemError || status == ncclRemoteError
                         ? std::string(" (") + ncclGetLastError(nullptr) + ")"
                         : std::string()));
}

void cuda_check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  throw DeviceError(std::string(what) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int ordinal, std::unique_ptr<Communicator> control)
      : comm_(comm), ordinal_(ordinal), control_(std::move(control)) {
    cuda_check(cudaSetDevice(ordinal_), "cudaSetDevice");
    cuda_check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreate");
  }
  ~NcclCommunicator() override {
    cudaSetDevice(ordinal_);
    if (done_) cudaEventDestroy(done_);
    // An aborted communicator is gone already; a healthy one finishes its work first.
    if (!aborted_.load()) ncclCommDestroy(comm_);
  }

  int rank() const override { return control_->rank(); }
  int size() const override { return control_->size(); }
  std::string kind() const override { return "nccl"; }
  bool reduces_device_buffers() const override { return true; }

  void all_reduce_sum(double* data, size_t count, void* stream) override {
    reduce(data, count, ncclFloat64, stream);
  }
  void all_reduce_sum(unsigned long long* data, size_t count, void* stream) override {
    static_assert(sizeof(unsigned long long) == 8, "ncclUint64 is 8 bytes");
    reduce(data, count, ncclUint64, stream);
  }
  void group_start() override { nccl_check(ncclGroupStart(), "ncclGroupStart"); }
  void group_end() override { nccl_check(ncclGroupEnd(), "ncclGroupEnd"); }

  // Polls instead of blocking in cudaStreamSynchronize: NCCL's kernels wait for the peers
  // on the device, so a dead peer would hold this rank forever. The asynchronous error
  // check catches a peer whose failure NCCL saw; the timeout catches one that went silent;
  // either way the communicator is aborted, which ends the kernels that are waiting.
  void finish(void* stream) override {
    cuda_check(cudaEventRecord(done_, static_cast<cudaStream_t>(stream)), "cudaEventRecord");
    const auto start = std::chrono::steady_clock::now();
    const auto limit = collective_timeout();
    for (unsigned spin = 0;; ++spin) {
      const cudaError_t state = cudaEventQuery(done_);
      if (state == cudaSuccess) return;
      if (state != cudaErrorNotReady) cuda_check(state, "all-reduce");
      if (aborted_.load()) fail("the communicator was aborted: " + reason());
      ncclResult_t async = ncclSuccess;
      nccl_check(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
      if (async != ncclSuccess && async != ncclInProgress)
        fail(std::string("NCCL reported ") + ncclGetErrorString(async) + " while reducing (a peer failed?)");
      if (std::chrono::steady_clock::now() - start > limit)
        fail("the all-reduce did not complete within " + std::to_string(int(limit.count())) +
             " s (MKBENCH_COLLECTIVE_TIMEOUT_S): a peer rank died or hangs");
      // Spin first: the reduction of a few KiB takes tens of microseconds.
      if (spin > 2000) std::this_thread::yield();
    }
  }

  void host_all_reduce_sum(double* data, size_t count) override { control_->host_all_reduce_sum(data, count); }
  void broadcast(void* bytes, size_t size, int root) override { control_->broadcast(bytes, size, root); }
  void barrier() override { control_->barrier(); }
  void abort(const std::string& why) override {
    bool expected = false;
    if (aborted_.compare_exchange_strong(expected, true)) {
      {
        std::lock_guard<std::mutex> lock(reason_mutex_);
        reason_ = why;
      }
      // Ends the NCCL kernels still waiting on this device, so the stream drains.
      ncclCommAbort(comm_);
    }
    control_->abort(why);
  }

 private:
  void reduce(void* data, size_t count, ncclDataType_t type, void* stream) {
    if (aborted_.load()) throw CollectiveAborted("rank " + std::to_string(rank()) + ": aborted: " + reason());
    nccl_check(ncclAllReduce(data, data, count, type, ncclSum, comm_, static_cast<cudaStream_t>(stream)),
               "ncclAllReduce");
  }
  std::string reason() {
    std::lock_guard<std::mutex> lock(reason_mutex_);
    return reason_;
  }
  [[noreturn]] void fail(const std::string& why) {
    const std::string message = "rank " + std::to_string(rank()) + " (GPU " + std::to_string(ordinal_) + "): " + why;
    abort(message);
    throw CollectiveAborted(message);
  }

  ncclComm_t comm_;
  int ordinal_;
  std::unique_ptr<Communicator> control_;
  cudaEvent_t done_ = nullptr;
  std::atomic<bool> aborted_{false};
  std::mutex reason_mutex_;
  std::string reason_;
};

}  // namespace

bool nccl_built_in() { return true; }

std::vector<std::unique_ptr<Communicator>> make_nccl_single_process(
    const std::vector<int>& ordinals, std::vector<std::unique_ptr<Communicator>> control) {
  if (control.size() != ordinals.size())
    throw InputError("NCCL: " + std::to_string(ordinals.size()) + " GPUs but " + std::to_string(control.size()) +
                     " control endpoints");
  keep_nvlink_multicast_off();
  std::vector<ncclComm_t> comms(ordinals.size());
  nccl_check(ncclCommInitAll(comms.data(), int(comms.size()), ordinals.data()), "ncclCommInitAll");
  std::vector<std::unique_ptr<Communicator>> endpoints;
  for (size_t i = 0; i < ordinals.size(); ++i)
    endpoints.push_back(std::make_unique<NcclCommunicator>(comms[i], ordinals[i], std::move(control[i])));
  return endpoints;
}

std::unique_ptr<Communicator> make_nccl_rank(int ordinal, std::unique_ptr<Communicator> control) {
  keep_nvlink_multicast_off();
  ncclUniqueId id{};
  if (control->rank() == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  control->broadcast(&id, sizeof id, 0);
  cuda_check(cudaSetDevice(ordinal), "cudaSetDevice");
  ncclComm_t comm = nullptr;
  nccl_check(ncclCommInitRank(&comm, control->size(), id, control->rank()), "ncclCommInitRank");
  return std::make_unique<NcclCommunicator>(comm, ordinal, std::move(control));
}

#else  // !MKBENCH_HAVE_NCCL

bool nccl_built_in() { return false; }

std::vector<std::unique_ptr<Communicator>> make_nccl_single_process(const std::vector<int>&,
                                                                      std::vector<std::unique_ptr<Communicator>>) {
  throw UnsupportedError("this mkbench was built without NCCL");
}

std::unique_ptr<Communicator> make_nccl_rank(int, std::unique_ptr<Communicator>) {
  throw UnsupportedError("this mkbench was built without NCCL");
}

#endif

}  // namespace mk
