#include "variants/common/staged_upload.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/errors.hpp"

namespace mk::gpu {

namespace {
void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw DeviceError(std::string(what) + ": " + cudaGetErrorString(status));
}
}  // namespace

void copy_bytes_parallel(void* destination, const void* source, size_t bytes) {
  // Pieces of at least 1 MiB: below that a thread's start-up costs more than its copy.
  constexpr size_t kPiece = size_t(1) << 20;
  const int64_t pieces = int64_t((bytes + kPiece - 1) / kPiece);
  auto* to = static_cast<char*>(destination);
  const auto* from = static_cast<const char*>(source);
#pragma omp parallel for schedule(static) if (pieces > 1)
  for (int64_t p = 0; p < pieces; ++p) {
    const size_t begin = size_t(p) * kPiece;
    std::memcpy(to + begin, from + begin, std::min(bytes, begin + kPiece) - begin);
  }
}

StagedUploader::StagedUploader() {
  buffers_.assign(kBuffers, nullptr);
  free_.assign(kBuffers, nullptr);
  try {
    for (int b = 0; b < kBuffers; ++b) {
      void* pinned = nullptr;
      check_cuda(cudaHostAlloc(&pinned, kPieceBytes, cudaHostAllocDefault), "pinned staging buffer");
      buffers_[size_t(b)] = static_cast<char*>(pinned);
      check_cuda(cudaEventCreateWithFlags(&free_[size_t(b)], cudaEventDisableTiming), "cudaEventCreate");
    }
  } catch (...) {
    release();
    throw;
  }
}

StagedUploader::~StagedUploader() { release(); }

void StagedUploader::release() {
  for (size_t b = 0; b < buffers_.size(); ++b) {
    if (free_[b]) {
      cudaEventSynchronize(free_[b]);
      cudaEventDestroy(free_[b]);
      free_[b] = nullptr;
    }
    if (buffers_[b]) cudaFreeHost(buffers_[b]);
    buffers_[b] = nullptr;
  }
}

void StagedUploader::upload(void* destination, const void* source, size_t bytes, cudaStream_t stream) {
  auto* to = static_cast<char*>(destination);
  const auto* from = static_cast<const char*>(source);
  for (size_t offset = 0; offset < bytes; offset += kPieceBytes) {
    const size_t length = std::min(kPieceBytes, bytes - offset);
    const size_t b = size_t(next_);
    next_ = (next_ + 1) % kBuffers;
    // The buffer is free once its previous DMA has landed.
    check_cuda(cudaEventSynchronize(free_[b]), "staged upload");
    copy_bytes_parallel(buffers_[b], from + offset, length);
    check_cuda(cudaMemcpyAsync(to + offset, buffers_[b], length, cudaMemcpyHostToDevice, stream), "staged upload");
    check_cuda(cudaEventRecord(free_[b], stream), "staged upload");
  }
}

StagedUploader& staged_uploader_for_current_device() {
  static std::mutex mutex;
  // Kept until exit on purpose: freeing pinned memory after the CUDA runtime has shut down
  // (static destruction order) fails, and the process's end returns it anyway.
  static auto* uploaders = new std::map<int, std::unique_ptr<StagedUploader>>();
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  std::lock_guard<std::mutex> lock(mutex);
  auto& uploader = (*uploaders)[device];
  if (!uploader) uploader = std::make_unique<StagedUploader>();
  return *uploader;
}

}  // namespace mk::gpu
