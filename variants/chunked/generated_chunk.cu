#include "variants/chunked/generated_chunk.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/errors.hpp"
#include "datasets/counter_rng.hpp"
#include "variants/common/gpu_lloyd_state.cuh"

namespace mk::chunked {
namespace {

// The value of one entry: its uniform draw (from its counter), zeroed where the zero mask's draw
// falls under the fraction (generate_rows' rule).
template <bool kZeros>
__device__ __forceinline__ float entry_value(uint64_t counter, const CounterRng& zero_mask, double zero_fraction,
                                             uint64_t entry) {
  const float value = CounterRng::unit_float_of_counter(counter);
  return kZeros && zero_mask.unit_double(entry) < zero_fraction ? 0.0f : value;
}

// Four consecutive entries a thread-iteration, grid-strided, stored as one float4: entry e of the
// chunk is entry first_entry + e of the data set. The counters of the four differ by the
// increment, so one 64-bit multiply serves them, and the 24 drawn bits convert from 32 bits.
// At N=8 K=3..7 over registers-multik, this form runs at 1.194x the in-core step, the
// one-value-a-thread form with a multiply and a 64-bit conversion per value at 1.296x
// (reports/results/nvidia-h200/ooc-generated.json and ooc-overlap.txt, H200).
template <bool kZeros>
__global__ void uniform_entries(CounterRng uniform, CounterRng zero_mask, double zero_fraction, uint64_t first_entry,
                                uint64_t quads, uint64_t count, float* out) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  const uint64_t first = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (uint64_t q = first; q < quads; q += stride) {
    const uint64_t entry = first_entry + 4 * q;
    const uint64_t counter = uniform.counter(entry);
    float4 v;
    v.x = entry_value<kZeros>(counter, zero_mask, zero_fraction, entry);
    v.y = entry_value<kZeros>(counter + CounterRng::kIncrement, zero_mask, zero_fraction, entry + 1);
    v.z = entry_value<kZeros>(counter + 2 * CounterRng::kIncrement, zero_mask, zero_fraction, entry + 2);
    v.w = entry_value<kZeros>(counter + 3 * CounterRng::kIncrement, zero_mask, zero_fraction, entry + 3);
    reinterpret_cast<float4*>(out)[q] = v;
  }
  // The entries after the quads (count % 4 of them; all of them where `out` is not 16-byte aligned).
  for (uint64_t e = 4 * quads + first; e < count; e += stride)
    out[e] = entry_value<kZeros>(uniform.counter(first_entry + e), zero_mask, zero_fraction, first_entry + e);
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
  // Chunk buffers come from cudaMalloc; a view into one may not be 16-byte aligned for float4.
  const bool aligned = reinterpret_cast<uintptr_t>(out) % alignof(float4) == 0;
  const uint64_t quads = aligned ? count / 4 : 0;
  // A few waves' worth of blocks; the grid stride covers the rest.
  const int blocks = int(std::clamp<uint64_t>((std::max(quads, count - 4 * quads) + kThreads - 1) / kThreads, 1, 65536));
  const CounterRng uniform(spec.seed, RandomStream::UniformValue), zero_mask(spec.seed, RandomStream::ZeroMask);
  const uint64_t first_entry = uint64_t(first_row) * uint64_t(spec.n);
  if (spec.zero_fraction > 0)
    uniform_entries<true><<<blocks, kThreads, 0, stream>>>(uniform, zero_mask, spec.zero_fraction, first_entry, quads,
                                                           count, out);
  else
    uniform_entries<false><<<blocks, kThreads, 0, stream>>>(uniform, zero_mask, 0.0, first_entry, quads, count, out);
  gpu::check_launch("generate_chunk_on_device");
}

}  // namespace mk::chunked
