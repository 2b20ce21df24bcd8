#include "variants/common/constant_bank_turn.hpp"

#include <map>
#include <string>

#include "core/errors.hpp"

namespace mk::gpu {

struct ConstantBankTurn::Bank {
  std::mutex mutex;                // held for a whole turn
  cudaEvent_t released = nullptr;  // recorded at each turn's end, on the bank's device
  unsigned long long last_stream = kNoStream;  // the last turn's stream (cudaStreamGetId: never reused)
  static constexpr unsigned long long kNoStream = ~0ull;
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
    // Created on the bank's device, whichever is current: every turn records it on a stream of
    // that device (the runs that share a bank share its device).
    cudaPointerAttributes where{};
    check_turn(cudaPointerGetAttributes(&where, bank), "cudaPointerGetAttributes");
    int current = 0;
    check_turn(cudaGetDevice(&current), "cudaGetDevice");
    if (where.device != current) check_turn(cudaSetDevice(where.device), "cudaSetDevice");
    const cudaError_t created = cudaEventCreateWithFlags(&bank_->released, cudaEventDisableTiming);
    if (where.device != current) cudaSetDevice(current);
    check_turn(created, "cudaEventCreate");
  } else if (bank_->last_stream != stream_id_) {
    // A turn after one on the same stream is ordered by the stream: one run's steps, the
    // common case, add no wait.
    check_turn(cudaStreamWaitEvent(stream_, bank_->released, 0), "cudaStreamWaitEvent");
  }
}

// Records the turn's end. When the record fails, the turn's work is waited for here instead, and
// the next turn waits whatever its stream: the event no longer marks this turn's end.
cudaError_t ConstantBankTurn::end_turn() {
  const cudaError_t status = cudaEventRecord(bank_->released, stream_);
  if (status == cudaSuccess) {
    bank_->last_stream = stream_id_;
  } else {
    cudaStreamSynchronize(stream_);
    bank_->last_stream = Bank::kNoStream;
  }
  lock_.unlock();
  return status;
}

void ConstantBankTurn::finish() {
  if (lock_.owns_lock()) check_turn(end_turn(), "cudaEventRecord");
}

ConstantBankTurn::~ConstantBankTurn() {
  if (lock_.owns_lock()) end_turn();  // an error path: the exception in flight says what failed
}

}  // namespace mk::gpu
