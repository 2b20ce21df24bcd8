#pragma once
// A __constant__ bank exists once per device and module, so every prepared run of the module on
// that device shares it: registers-multik's c_centroids (one per runtime-compiled
// specialisation) and shared-atomics' bank. Each step copies its centroids into the bank and
// launches kernels that read it. Two runs on streams of their own (a batch's problems,
// variants/batched/) could let one run's copy land while the other's kernel reads the bank.
// On an H200 at 7ab2d42, under compute-sanitizer racecheck (which stretches kernels), a batch
// of 3 registers-multik problems gave problem 1 17,000 wrong labels of 20,000.
//
// A turn orders the uses of one bank across streams: its stream first waits for the end of the
// previous turn's work on that bank (any stream, any host thread), and the work enqueued during
// the turn (the copy and the kernels that read the bank) is what the next turn waits for.
#include <cuda_runtime.h>

#include <mutex>

namespace mk::gpu {

class ConstantBankTurn {
 public:
  // `bank` is the bank's device address (cudaLibraryGetGlobal, cudaGetSymbolAddress), `stream`
  // a stream of the bank's device. DeviceError when CUDA fails.
  ConstantBankTurn(const void* bank, cudaStream_t stream);
  // Ends the turn after the work enqueued on `stream` so far. DeviceError when CUDA fails.
  void finish();
  // A turn left unfinished (an exception between its copy and its kernel) still ends, after
  // whatever reached its stream.
  ~ConstantBankTurn();
  ConstantBankTurn(const ConstantBankTurn&) = delete;
  ConstantBankTurn& operator=(const ConstantBankTurn&) = delete;

 private:
  struct Bank;
  static Bank& bank_at(const void* address);
  cudaError_t end_turn();
  Bank* bank_;
  cudaStream_t stream_;
  unsigned long long stream_id_ = 0;
  std::unique_lock<std::mutex> lock_;
};

}  // namespace mk::gpu
