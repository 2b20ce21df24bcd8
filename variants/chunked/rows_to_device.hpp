#pragma once
// Rows of an out-of-core source into device memory, however the source holds them: host rows
// (in memory or a memory-mapped file) through a pinned ring; a uniform generator's rows made on
// the device (generated_chunk.hpp); a blobs generator's made on all cores into the ring, whole
// rows a piece. The chunked runs and the streaming fit (apps/stream) feed their chunks with it.
#include <cuda_runtime.h>

#include <cstdint>

#include "variants/chunked/chunked_run.hpp"
#include "variants/common/pinned_staging.hpp"

namespace mk::chunked {

// Whether rows_to_device needs a ring for this source (every source but a device-made generator).
bool rows_need_staging(const ChunkSource& source);

// Rows [first, first + rows) of `source` into device `out` on `stream`. Returns once the host's
// part is done; the copies or the generating kernel may still run on `stream`. `ring` may be null
// where rows_need_staging is false.
void rows_to_device(const ChunkSource& source, int64_t first, int64_t rows, float* out, cudaStream_t stream,
                    gpu::PinnedStaging* ring);

}  // namespace mk::chunked
