// ConstantBankTurn (variants/common/constant_bank_turn.hpp) on its own, deterministically: a
// turn on one stream holds a kernel that spins until the host lets it go, and the next turn, on
// another stream, must not run before that kernel ends. The variants' test
// (test_constant_bank_turn.cpp) depends on timing; this one does not.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/device_info.hpp"
#include "variants/common/constant_bank_turn.hpp"

namespace mk {
namespace {

// Spins until *release is set, at most about 2 s (clock64 at under 2 GHz), then sets *done.
__global__ void spin_until_released(const volatile int* release, int* done) {
  const long long start = clock64();
  while (*release == 0 && clock64() - start < 4000000000LL) {
  }
  *done = 1;
}

TEST(ConstantBankTurnGpu, ATurnOnAnotherStreamWaitsForThePreviousTurnsKernel) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  int* bank = nullptr;  // any device address keys a bank; this one is the test's own
  int* done = nullptr;
  int* release = nullptr;
  ASSERT_EQ(cudaMalloc(&bank, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&done, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemset(done, 0, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(&release, sizeof(int), cudaHostAllocMapped), cudaSuccess);
  *release = 0;
  cudaStream_t first = nullptr, second = nullptr;
  cudaEvent_t second_ran = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&second_ran, cudaEventDisableTiming), cudaSuccess);
  {
    gpu::ConstantBankTurn turn(bank, first);
    spin_until_released<<<1, 1, 0, first>>>(release, done);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    turn.finish();
  }
  {
    gpu::ConstantBankTurn turn(bank, second);
    ASSERT_EQ(cudaEventRecord(second_ran, second), cudaSuccess);
    turn.finish();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(cudaEventQuery(second_ran), cudaErrorNotReady) << "the second turn ran beside the first's kernel";
  *release = 1;
  ASSERT_EQ(cudaEventSynchronize(second_ran), cudaSuccess);
  int finished = 0;
  ASSERT_EQ(cudaMemcpy(&finished, done, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(finished, 1);
  // A turn on the same stream as the last is ordered by the stream alone and still records its end.
  {
    gpu::ConstantBankTurn turn(bank, second);
    turn.finish();
  }
  EXPECT_EQ(cudaStreamSynchronize(second), cudaSuccess);
  cudaEventDestroy(second_ran);
  cudaStreamDestroy(first);
  cudaStreamDestroy(second);
  cudaFreeHost(release);
  cudaFree(done);
  cudaFree(bank);
}

}  // namespace
}  // namespace mk
