#include "variants/common/pinned_staging.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
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

PinnedStaging::PinnedStaging() {
  buffers_.assign(kBuffers, nullptr);
  free_.assign(kBuffers, nullptr);
  try {
    for (size_t b = 0; b < size_t(kBuffers); ++b) {
      void* pinned = nullptr;
      check_cuda(cudaHostAlloc(&pinned, kPieceBytes, cudaHostAllocDefault), "pinned staging buffer");
      buffers_[b] = static_cast<char*>(pinned);
      check_cuda(cudaEventCreateWithFlags(&free_[b], cudaEventDisableTiming), "cudaEventCreate");
    }
  } catch (...) {
    release();
    throw;
  }
}

PinnedStaging::~PinnedStaging() { release(); }

void PinnedStaging::release() {
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

size_t PinnedStaging::take_buffer() {
  const size_t b = next_;
  next_ = (next_ + 1) % buffers_.size();
  check_cuda(cudaEventSynchronize(free_[b]), "pinned staging");
  return b;
}

void PinnedStaging::upload(void* destination, const void* source, size_t bytes, cudaStream_t stream) {
  const auto* from = static_cast<const char*>(source);
  upload_made(destination, bytes, 1, stream,
              [from](char* piece, size_t offset, size_t length) { copy_bytes_parallel(piece, from + offset, length); });
}

void PinnedStaging::upload_rows(void* destination, const void* source, size_t bytes, size_t unit,
                                cudaStream_t stream, const std::function<void(size_t, size_t)>& landed) {
  const auto* from = static_cast<const char*>(source);
  upload_made(
      destination, bytes, unit, stream,
      [from](char* piece, size_t offset, size_t length) { copy_bytes_parallel(piece, from + offset, length); }, landed);
}

void PinnedStaging::upload_made(void* destination, size_t bytes, size_t unit, cudaStream_t stream,
                                const std::function<void(char*, size_t, size_t)>& make,
                                const std::function<void(size_t, size_t)>& landed) {
  if (unit < 1 || unit > kPieceBytes)
    throw InputError("staged upload in units of " + std::to_string(unit) + " bytes: the ring's pieces hold " +
                     std::to_string(kPieceBytes) + " bytes");
  const size_t piece = kPieceBytes / unit * unit;
  std::lock_guard<std::mutex> lock(mutex_);
  auto* to = static_cast<char*>(destination);
  for (size_t offset = 0; offset < bytes; offset += piece) {
    const size_t length = std::min(piece, bytes - offset);
    const size_t b = take_buffer();
    make(buffers_[b], offset, length);
    check_cuda(cudaMemcpyAsync(to + offset, buffers_[b], length, cudaMemcpyHostToDevice, stream), "staged upload");
    check_cuda(cudaEventRecord(free_[b], stream), "staged upload");
    if (landed) landed(offset, length);
  }
}

void PinnedStaging::download(void* destination, const void* source, size_t bytes, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* to = static_cast<char*>(destination);
  const auto* from = static_cast<const char*>(source);
  // Every buffer's DMA is enqueued ahead; a buffer is drained into `destination` (its event
  // waited on) before it takes the piece kBuffers further on.
  std::vector<size_t> offset_in(buffers_.size(), SIZE_MAX);
  auto drain = [&](size_t b) {
    if (offset_in[b] == SIZE_MAX) return;
    check_cuda(cudaEventSynchronize(free_[b]), "staged download");
    copy_bytes_parallel(to + offset_in[b], buffers_[b], std::min(kPieceBytes, bytes - offset_in[b]));
    offset_in[b] = SIZE_MAX;
  };
  for (size_t offset = 0; offset < bytes; offset += kPieceBytes) {
    const size_t b = next_;
    next_ = (next_ + 1) % buffers_.size();
    drain(b);
    check_cuda(cudaEventSynchronize(free_[b]), "staged download");  // an upload's DMA, if that was last
    const size_t length = std::min(kPieceBytes, bytes - offset);
    check_cuda(cudaMemcpyAsync(buffers_[b], from + offset, length, cudaMemcpyDeviceToHost, stream), "staged download");
    check_cuda(cudaEventRecord(free_[b], stream), "staged download");
    offset_in[b] = offset;
  }
  for (size_t i = 0; i < buffers_.size(); ++i) drain((next_ + i) % buffers_.size());
}

PinnedStaging& pinned_staging_for_current_device() {
  static std::mutex mutex;
  // Kept until exit on purpose: freeing pinned memory after the CUDA runtime has shut down
  // (static destruction order) fails, and the process's end returns it anyway.
  static auto* rings = new std::map<int, std::unique_ptr<PinnedStaging>>();
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  std::lock_guard<std::mutex> lock(mutex);
  auto& ring = (*rings)[device];
  if (!ring) ring = std::make_unique<PinnedStaging>();
  return *ring;
}

LabelValues download_labels(const int32_t* device_labels, size_t count, cudaStream_t stream) {
  LabelValues host;
  download_labels_into(host, device_labels, count, stream);
  return host;
}

void download_labels_into(LabelValues& host, const int32_t* device_labels, size_t count, cudaStream_t stream) {
  if (host.size() != count) host = LabelValues(count);
  // Below a piece the ring saves little, and a small run need not pin the ring at all.
  const size_t bytes = count * sizeof(int32_t);
  if (bytes >= PinnedStaging::kPieceBytes / 4) {
    pinned_staging_for_current_device().download(host.data(), device_labels, bytes, stream);
  } else if (bytes != 0) {
    check_cuda(cudaMemcpyAsync(host.data(), device_labels, bytes, cudaMemcpyDeviceToHost, stream), "read labels");
    check_cuda(cudaStreamSynchronize(stream), "read labels");
  }
}

std::future<std::vector<LabelValues>> ready_label_values(size_t lists, size_t count) {
  return std::async(std::launch::async, [lists, count] {
    std::vector<LabelValues> ready(lists);
    constexpr int64_t kPageLabels = 4096 / sizeof(int32_t);
    const int64_t pages = (int64_t(count) + kPageLabels - 1) / kPageLabels;
    for (LabelValues& labels : ready) {
      labels = LabelValues(count);
      int32_t* values = labels.data();
      // On all cores, as the read-back's copy would have faulted them (a K range's lists are
      // K.count() x M labels); the steps meanwhile need the CPU for their launches only. 10M
      // labels: 0.38 ms on all cores, 1.69 ms on one thread (huge pages advised; ab/host-transfer-third-host.txt).
      // On one thread the Python benchmark's label read-backs still stalled by 19–23 ms in two fits
      // of nine (01c8e6c), as they had with the team, and the undisturbed ones took 2.6–4.5 ms
      // against 1.7–1.9 with the team (4701a5e): the team stays.
#pragma omp parallel for schedule(static) if (pages > 256)
      for (int64_t page = 0; page < pages; ++page) values[page * kPageLabels] = 0;  // the first touch
    }
    return ready;
  });
}

}  // namespace mk::gpu
