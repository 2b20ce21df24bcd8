#pragma once
// Copies between ordinary host memory and the device through a small ring of page-locked buffers:
// each piece is copied between its buffer and the host memory on all cores while the DMAs of the
// next pieces run. On two H200 hosts (reports/results/nvidia-h200/ab/host-transfer.txt at ba08774,
// tests/device/host_transfer.cu; the earlier host's figures in that file's history, aeae0f2):
// - 1.28 GB of host rows went up in 23.8 ms through 4 x 16 MiB on both hosts (54 GB/s, about the
//   pinned DMA rate). 4 x 32 MiB took 23.9 ms on the first and 31–34 ms on the second, 8 x 16 and
//   4 x 128 MiB 35 ms there: pieces must stay in the host's last-level cache between the copy and
//   the DMA. A third host took 23.7 ms through 4 x 16 and 23.8 through 4 x 32 MiB, 15 uploads of
//   24–25 ms in a row (ab/host-transfer-third-host.txt, 01c8e6c). Page-locking the rows in place took 46–57 ms, pageable cudaMemcpy 183–218 ms.
// - 10M int32 labels came back into memory readied beforehand (ready_label_values) in 0.92–0.95 ms
//   through 4 x 16 MiB, against 1.65–16 ms through 4 x 32 MiB (a piece is copied out while the
//   next pieces' DMAs run, so smaller pieces leave less copy after the last DMA; 8 and 4 MiB
//   pieces did no better); into fresh memory, 3.2 ms, against 29–35 ms into a zero-filled
//   std::vector through pageable cudaMemcpy (4 KiB page faults on one thread).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <mutex>
#include <vector>

#include "datasets/dataset.hpp"

namespace mk::gpu {

// `bytes` from `source` to `destination` on all cores (OpenMP), in pieces of 1 MiB or more.
void copy_bytes_parallel(void* destination, const void* source, size_t bytes);

class PinnedStaging {
 public:
  static constexpr size_t kPieceBytes = size_t(16) << 20;
  static constexpr int kBuffers = 4;

  // Allocates the pinned ring (cudaHostAlloc, kBuffers x kPieceBytes) and its events on the
  // current device; DeviceError when that fails.
  PinnedStaging();
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // Enqueues the copy of host [source, source + bytes) to device `destination` on `stream` (a
  // stream of the device current at construction). Returns once every byte has left `source`:
  // the caller may then reuse it, while the last DMAs may still be running on `stream`.
  void upload(void* destination, const void* source, size_t bytes, cudaStream_t stream);
  // The same in pieces of whole `unit`-byte rows, calling landed(offset, length) once each
  // piece's DMA is queued on `stream`, so work on that piece can follow it there (or on a stream
  // that waits for it) while the next pieces go up.
  void upload_rows(void* destination, const void* source, size_t bytes, size_t unit, cudaStream_t stream,
                   const std::function<void(size_t, size_t)>& landed);
  // The same for bytes made on the host as they go: make(piece, offset, length) writes bytes
  // [offset, offset + length) into the pinned `piece`; every piece is a whole number of `unit`
  // bytes (a generator's rows). InputError for a unit larger than a piece.
  void upload_made(void* destination, size_t bytes, size_t unit, cudaStream_t stream,
                   const std::function<void(char*, size_t, size_t)>& make,
                   const std::function<void(size_t, size_t)>& landed = nullptr);
  // Device [source, source + bytes) into host `destination` after the work already on `stream`.
  // Returns when every byte has arrived.
  void download(void* destination, const void* source, size_t bytes, cudaStream_t stream);

 private:
  void release();
  // The next buffer, once the DMA last recorded on it has landed.
  size_t take_buffer();

  std::mutex mutex_;  // one transfer at a time: the ring's buffers are shared
  std::vector<char*> buffers_;
  std::vector<cudaEvent_t> free_;
  size_t next_ = 0;
};

// The process's ring for the current device, made on first use and kept (the Python module's
// fits reuse it, so only the first pays for the pinned allocation).
PinnedStaging& pinned_staging_for_current_device();

// `count` labels from device memory into new host labels (uninitialised, huge pages; see
// datasets/dataset.hpp), after the work on `stream`: through the current device's ring from
// 4 MiB (a quarter of a piece), by one cudaMemcpy below.
LabelValues download_labels(const int32_t* device_labels, size_t count, cudaStream_t stream);
// The same into `host` (resized to `count` when it holds another number of labels): memory
// readied beforehand by ready_label_values takes the copy without page faults.
void download_labels_into(LabelValues& host, const int32_t* device_labels, size_t count, cudaStream_t stream);

// `lists` host label arrays of `count` each, allocated and their pages touched on a thread of
// their own, so that the first-touch page faults of the memory a read-back fills (most of the
// 3.2 ms that 10M labels took into fresh huge pages) happen while the GPU computes.
std::future<std::vector<LabelValues>> ready_label_values(size_t lists, size_t count);

}  // namespace mk::gpu
