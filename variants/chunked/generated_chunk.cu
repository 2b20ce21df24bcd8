#include "variants/chunked/generated_chunk.hpp"

#include <algorithm>
#include <string>

#include "core/errors.hpp"
#include "datasets/counter_rng.hpp"
#include "variants/common/gpu_lloyd_state.cuh"

namespace mk::chunked {
namespace {

// One value a thread-iteration, grid-strided: entry e of the chunk is entry first_entry + e of
// the data set, the uniform draw of that index, zeroed where the zero mask's draw falls under the
// fraction (generate_rows' rule).
__global__ void uniform_entries(CounterRng uniform, CounterRng zero_mask, double zero_fraction, uint64_t first_entry,
                                uint64_t count, float* out) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t e = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += stride) {
    const uint64_t entry = first_entry + e;
    const float value = uniform.unit_float(entry);
    out[e] = zero_fraction > 0 && zero_mask.unit_double(entry) < zero_fraction ? 0.0f : value;
  }
}

}  // namespace

bool generated_on_device(const GeneratorSpec& spec) { return spec.kind == "uniform"; }

void generate_chunk_on_device(const GeneratorSpec& spec, int64_t first_row, int64_t rows, float* out,
                              cudaStream_t stream) {
  if (!generated_on_device(spec))
    throw UnsupportedError("the " + spec.kind + " generator's chunks are made on the host, not the GPU");
  if (first_row < 0 || rows < 0 || first_row + rows > spec.m)
    throw InputError("rows [" + std::to_string(first_row) + ", " + std::to_string(first_row + rows) +
                     ") of a generator of " + std::to_string(spec.m) + " points");
  const uint64_t count = uint64_t(rows) * uint64_t(spec.n);
  if (count == 0) return;
  constexpr int kThreads = 256;
  // A few waves' worth of blocks; the grid stride covers the rest.
  const int blocks = int(std::min<uint64_t>((count + kThreads - 1) / kThreads, 65536));
  uniform_entries<<<blocks, kThreads, 0, stream>>>(CounterRng(spec.seed, RandomStream::UniformValue),
                                                   CounterRng(spec.seed, RandomStream::ZeroMask), spec.zero_fraction,
                                                   uint64_t(first_row) * uint64_t(spec.n), count, out);
  gpu::check_launch("generate_chunk_on_device");
}

}  // namespace mk::chunked
