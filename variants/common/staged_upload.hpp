#pragma once
// Host rows to device memory through a small ring of page-locked buffers: each piece is
// copied into a free buffer on all cores, then DMA'd while the next piece is copied. On an
// H200 host, 1.28 GB of ordinary host memory went up in 24 ms this way (53 GB/s, about the
// pinned DMA rate), against 42–51 ms for page-locking the rows in 64 MiB pieces and DMA'ing
// them in place, and 160–190 ms through pageable cudaMemcpy
// (reports/results/nvidia-h200/ab/host-transfer.txt, tests/device/host_transfer.cu).
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

namespace mk::gpu {

// `bytes` from `source` to `destination` on all cores (OpenMP), in pieces of 1 MiB or more.
void copy_bytes_parallel(void* destination, const void* source, size_t bytes);

class StagedUploader {
 public:
  static constexpr size_t kPieceBytes = size_t(32) << 20;
  static constexpr int kBuffers = 4;

  // Allocates the pinned ring on the current device's context (cudaMallocHost, about
  // kBuffers x kPieceBytes); DeviceError when that fails.
  StagedUploader();
  ~StagedUploader();
  StagedUploader(const StagedUploader&) = delete;
  StagedUploader& operator=(const StagedUploader&) = delete;

  // Enqueues the copy of [source, source + bytes) to `destination` on `stream` (a stream of
  // the device current at construction). Returns once every byte has left `source`: the
  // caller may then reuse it, while the last DMAs may still be running on `stream`.
  void upload(void* destination, const void* source, size_t bytes, cudaStream_t stream);

 private:
  void release();

  std::vector<char*> buffers_;
  std::vector<cudaEvent_t> free_;
  int next_ = 0;
};

// The process's uploader for the current device, made on first use and kept (the Python
// module's fits reuse it, so only the first pays for the pinned allocation).
StagedUploader& staged_uploader_for_current_device();

}  // namespace mk::gpu
