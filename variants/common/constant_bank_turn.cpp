#include "variants/common/constant_bank_turn.hpp"

#include <map>
#include <string>

#include "core/errors.hpp"

namespace mk::gpu {

struct ConstantBankTurn::Bank {
  std::mutex mutex;                // held for a whole turn
  cudaEvent_t released = nullptr;  // recorded at each turn's end, on the bank's device
  unsigned long long last_stream = 0;  // the last turn's stream (cudaStreamGetId: never reused)
};

namespace {

void check_turn(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw DeviceError(std::string("constant bank turn: ") + what + ": " + cudaGetErrorName(status) + " (" +
                      cudaGetErrorString(status) + ")");
}

}  // namespace

// One entry per bank address for the process's life: banks live as long as their modules,
// which stay loaded until exit, and an address is never another device's.
ConstantBankTurn::Bank& ConstantBankTurn::bank_at(const void* address) {
  static std::mutex mutex;
  static auto* banks = new std::map<const void*, Bank>();  // kept until exit, as the modules are
  std::lock_guard<std::mutex> lock(mutex);
  return (*banks)[address];
}

ConstantBankTurn::ConstantBankTurn(const void* bank, cudaStream_t stream)
    : bank_(&bank_at(bank)), stream_(stream), lock_(bank_->mutex) {
  check_turn(cudaStreamGetId(stream_, &stream_id_), "cudaStreamGetId");
  if (!bank_->released) {
    // Created on the bank's device (the current one): every turn of it records on that device.
    check_turn(cudaEventCreateWithFlags(&bank_->released, cudaEventDisableTiming), "cudaEventCreate");
  } else if (bank_->last_stream != stream_id_) {
    // A turn after one on the same stream is ordered by the stream: one run's steps, the
    // common case, add no wait.
    check_turn(cudaStreamWaitEvent(stream_, bank_->released, 0), "cudaStreamWaitEvent");
  }
}

void ConstantBankTurn::finish() {
  if (!lock_.owns_lock()) return;
  const cudaError_t status = cudaEventRecord(bank_->released, stream_);
  if (status == cudaSuccess) bank_->last_stream = stream_id_;
  lock_.unlock();
  check_turn(status, "cudaEventRecord");
}

ConstantBankTurn::~ConstantBankTurn() {
  // Best effort on an error path; a turn whose record failed leaves the next one waiting.
  if (lock_.owns_lock() && cudaEventRecord(bank_->released, stream_) == cudaSuccess)
    bank_->last_stream = stream_id_;
}

}  // namespace mk::gpu
