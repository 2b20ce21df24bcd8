#pragma once
// A generator's out-of-core chunks made on the GPU (issue 34): no host memory holds the points
// and no copy crosses PCIe. The device computes generate_rows' values bit for bit: the same
// counter-based draws (datasets/counter_rng.hpp), integer mixing and exact float scaling.
// Only the uniform generator (with or without zeros) is made here; blobs draw normals through
// double-precision log, sin and cos, whose device results may differ from the host library's in
// the last bit, so their chunks are made on the host and staged (the data set stays the one
// its identity names).
#include <cuda_runtime.h>

#include <cstdint>

#include "datasets/dataset.hpp"

namespace mk::chunked {

bool generated_on_device(const GeneratorSpec& spec);

// Rows [first_row, first_row + rows) of generate(spec) into device `out` on `stream`.
void generate_chunk_on_device(const GeneratorSpec& spec, int64_t first_row, int64_t rows, float* out,
                              cudaStream_t stream);

}  // namespace mk::chunked
