#pragma once
// Device-to-host copies into ordinary (pageable) host memory at DMA speed: the host range is
// page-locked in place for the copy instead of going through the driver's small staging
// buffers. Used for the labels a fit reads back: 10M int32 on an H200 host took 31 ms through
// pageable memory into a zero-filled vector (python-bench.json at 8f3971d), most of it 4 KiB
// page faults on one thread (reports/results/nvidia-h200/ab/host-transfer.txt).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "datasets/dataset.hpp"

namespace mk::gpu {

// Page-locks [begin, begin + bytes) for a DMA. False where the host refuses (a locked-memory
// limit, a range already registered): the caller then copies through pageable memory, with the
// same bytes.
bool page_lock(void* begin, size_t bytes);
void page_unlock(void* begin);

// `count` int32 values from device memory into new host labels: huge pages first-touched on all
// cores, locked, one DMA. 10M labels on an H200 host: see host-transfer.txt's read-back lines.
// Synchronous; DeviceError on a CUDA failure.
LabelValues copy_labels_to_host(const int32_t* device, size_t count);

}  // namespace mk::gpu
