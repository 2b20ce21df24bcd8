#include "variants/common/constant_bank_turn.hpp"

#include <map>
#include <string>

#include "core/errors.hpp"

namespace mk::gpu {

struct ConstantBankTurn::Bank {
  std::mutex mutex;                // held for a whole turn
  cudaEvent_t released = nullptr;  // recorded at each turn's end, on the bank's device
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
  if (!bank_->released) {
    // Created on the bank's device (the current one): every turn of it records on that device.
    check_turn(cudaEventCreateWithFlags(&bank_->released, cudaEventDisableTiming), "cudaEventCreate");
  } else {
    check_turn(cudaStreamWaitEvent(stream_, bank_->released, 0), "cudaStreamWaitEvent");
  }
}

void ConstantBankTurn::finish() {
  if (!lock_.owns_lock()) return;
  const cudaError_t status = cudaEventRecord(bank_->released, stream_);
  lock_.unlock();
  check_turn(status, "cudaEventRecord");
}

ConstantBankTurn::~ConstantBankTurn() {
  if (lock_.owns_lock()) cudaEventRecord(bank_->released, stream_);  // best effort on an error path
}

}  // namespace mk::gpu
