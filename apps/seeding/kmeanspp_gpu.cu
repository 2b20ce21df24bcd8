// Greedy k-means++ on the GPU: the host side (buffers, launch shapes, timing). The kernels and
// the design are in kmeanspp_kernels.cuh; docs/seeding.md has the measurements.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/seeding/kmeanspp.hpp"
#include "apps/seeding/kmeanspp_kernels.cuh"
#include "apps/seeding/kmeanspp_staged_pass.cuh"
#include "core/errors.hpp"
#include "variants/common/gpu_lloyd_state.cuh"

namespace mk::seeding {
namespace {

using mk::gpu::check;
using mk::gpu::check_launch;
using mk::gpu::DeviceBuffer;

struct Kernels {
  void (*pass)(gpu::State, int);
  void (*select)(gpu::State, int);
};

template <int MAXC, bool VEC4, int PASS_BLOCKS = gpu::min_blocks(MAXC)>
Kernels kernels_for() {
  return {&gpu::seeding_pass<MAXC, VEC4, PASS_BLOCKS>, &gpu::seeding_select<MAXC, VEC4>};
}

template <int C>
constexpr int select_width() { return C <= 8 ? 8 : C <= 16 ? 16 : 32; }

template <int C, int NC>
Kernels staged_kernel() { return {&gpu::seeding_pass_staged<C, NC>, &gpu::seeding_select<select_width<C>(), true>}; }

// N as a compile-time constant where it is a common width (and L small enough for the exact
// instantiations), else the runtime-N pass.
template <int C>
Kernels staged_kernels_for(int n) {
  if constexpr (C <= 12) {
    if (n == 8) return staged_kernel<C, 8>();
    if (n == 16) return staged_kernel<C, 16>();
    if (n == 32) return staged_kernel<C, 32>();
  }
  return staged_kernel<C, 0>();
}

// The staged pass for L candidates: an instantiation for each L up to 12, then 16 and 32.
Kernels pick_staged_kernels(int candidates, int n) {
  switch (gpu::staged_candidates(candidates)) {
    case 1: return staged_kernels_for<1>(n);
    case 2: return staged_kernels_for<2>(n);
    case 3: return staged_kernels_for<3>(n);
    case 4: return staged_kernels_for<4>(n);
    case 5: return staged_kernels_for<5>(n);
    case 6: return staged_kernels_for<6>(n);
    case 7: return staged_kernels_for<7>(n);
    case 8: return staged_kernels_for<8>(n);
    case 9: return staged_kernels_for<9>(n);
    case 10: return staged_kernels_for<10>(n);
    case 11: return staged_kernels_for<11>(n);
    case 12: return staged_kernels_for<12>(n);
    case 16: return staged_kernels_for<16>(n);
    default: return staged_kernels_for<32>(n);
  }
}

// Candidates live in registers: the smallest instantiation that holds L of them.
Kernels pick_kernels(int candidates, bool vec4, int n) {
  if (candidates <= 8 && n <= gpu::kNarrowPassMaxN)
    return vec4 ? kernels_for<8, true, gpu::kNarrowPassBlocks>() : kernels_for<8, false, gpu::kNarrowPassBlocks>();
  if (candidates <= 8) return vec4 ? kernels_for<8, true>() : kernels_for<8, false>();
  if (candidates <= 16) return vec4 ? kernels_for<16, true>() : kernels_for<16, false>();
  return vec4 ? kernels_for<32, true>() : kernels_for<32, false>();
}

// The file's stream and events: variants/common's owners, with this file's name in their errors.
class Stream : public mk::gpu::OwnedStream {
 public:
  Stream() : OwnedStream("k-means++: cudaStreamCreate") {}
};

class Event : public mk::gpu::OwnedEvent {
 public:
  Event() : OwnedEvent("k-means++: cudaEventCreate", cudaEventDefault) {}
};

void allow_shared_bytes(void (*kernel)(gpu::State, int), size_t bytes) {
  if (bytes <= 48 * 1024) return;
  check(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(bytes)),
        "k-means++: shared memory opt-in");
}

int blocks_per_sm(const void* kernel, int threads, size_t shared_bytes) {
  int blocks = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, shared_bytes),
        "k-means++: occupancy");
  return blocks;
}

}  // namespace

// `upload`: the host points to copy to the device first (then `resident` is null); else
// `resident` holds the m × n row-major points on the device already. `weights`: m device
// weights, or null.
static KmeansppRun kmeanspp_on(const Dataset* upload, const float* resident, int64_t m, int n, int kmax, int candidates,
                               uint64_t seed, const DeviceInfo& device, const float* weights) {
  check(cudaSetDevice(device.ordinal), "k-means++: cudaSetDevice");
  const int tiles = int((m + gpu::kTile - 1) / gpu::kTile);
  // float4 rows need N % 4 == 0 and 16-byte aligned points (an upload is; device points may not be).
  const bool vec4 = n % 4 == 0 && (upload || reinterpret_cast<uintptr_t>(resident) % 16 == 0);
  const size_t rows_bytes = size_t(1 + candidates) * size_t(n) * sizeof(float);
  int64_t optin = device.smem_per_block_optin;
  if (optin <= 0) {
    int value = 0;
    check(cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, device.ordinal), "shared memory");
    optin = value;
  }

  // The staged pass where two of its blocks fit in a block's opt-in shared memory (N <= 52 at
  // L = 8); wider rows keep the per-thread loads (measured at N = 8 and 32 only).
  const size_t staged_bytes = gpu::staged_pass_bytes(n, candidates);
  const bool staged = vec4 && !weights && 2 * int64_t(staged_bytes) <= optin;
  const Kernels kernels = staged ? pick_staged_kernels(candidates, n) : pick_kernels(candidates, vec4, n);
  const int pass_threads = staged ? gpu::kBlock / gpu::kPointsPerThread : gpu::kBlock;
  const size_t pass_bytes = staged ? staged_bytes : rows_bytes;

  // The pending centre and the candidates of a step sit in shared memory.
  cudaFuncAttributes attributes{};
  check(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernels.pass)), "k-means++: kernel attributes");
  if (int64_t(rows_bytes + attributes.sharedSizeBytes) > optin)
    throw UnsupportedError("k-means++ on the GPU keeps a step's " + std::to_string(1 + candidates) + " centres of " +
                           std::to_string(n) + " dimensions in shared memory (" + std::to_string(rows_bytes >> 10) +
                           " KiB); this GPU allows " + std::to_string(optin >> 10) +
                           " KiB a block: use fewer candidates, --init random, or the CPU");
  // The select phase stages a drawn tile where its rows fit (N <= 52 on an H100 or H200).
  const bool stage_tile = vec4 && int64_t(gpu::select_bytes(n, candidates, true)) <= optin;
  const size_t select_bytes = gpu::select_bytes(n, candidates, stage_tile);
  allow_shared_bytes(kernels.pass, pass_bytes);
  allow_shared_bytes(kernels.select, select_bytes);

  int sm_count = device.sm_count;
  if (sm_count <= 0) check(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device.ordinal), "SMs");
  const int per_sm = blocks_per_sm(reinterpret_cast<const void*>(kernels.pass), pass_threads, pass_bytes);
  // One wave of resident blocks, each a balanced share of the units; more blocks than units would idle.
  const int64_t units = (m + gpu::kBlock - 1) / gpu::kBlock;
  const int pass_blocks = int(std::max<int64_t>(1, std::min<int64_t>(units, int64_t(std::max(1, per_sm)) * sm_count)));

  KmeansppRun run;
  run.path = "gpu";
  Stream stream;
  const auto upload_start = std::chrono::steady_clock::now();
  DeviceBuffer<float> uploaded;
  if (upload) {
    uploaded.allocate(size_t(m) * size_t(n), "k-means++ points");
    check(cudaMemcpyAsync(uploaded.get(), upload->points(), uploaded.bytes(), cudaMemcpyHostToDevice,
                          stream.get()),
          "k-means++: upload");
  }
  const float* points = upload ? uploaded.get() : resident;
  DeviceBuffer<float> d2(size_t(m), "k-means++ D²");
  DeviceBuffer<int64_t> drawn(size_t(kmax) * size_t(candidates), "k-means++ candidates");
  DeviceBuffer<int64_t> chosen(size_t(kmax), "k-means++ centres");
  DeviceBuffer<gpu::u64> tile_sums(2 * size_t(candidates) * size_t(tiles), "k-means++ tile sums");
  DeviceBuffer<gpu::u64> block_sums(size_t(pass_blocks) * size_t(candidates), "k-means++ block sums");
  DeviceBuffer<unsigned> largest_bits(1, "k-means++ largest D²");
  DeviceBuffer<int> failed(1, "k-means++ status");
  check(cudaStreamSynchronize(stream.get()), "k-means++: upload");
  run.upload_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - upload_start).count();

  const Draws draws = make_draws(seed);
  int64_t first = int64_t(draws.below(0, uint64_t(m)));
  if (weights) {
    // The first weighted draw on the host, from the same integer weights as the CPU path.
    std::vector<float> host_weights(static_cast<size_t>(m));
    check(cudaMemcpy(host_weights.data(), weights, size_t(m) * sizeof(float), cudaMemcpyDeviceToHost),
          "k-means++: weights");
    first = first_weighted_centre(host_weights.data(), m, draws);
  }
  Event start, stop;
  check(cudaEventRecord(start.get(), stream.get()), "k-means++: event");
  check(cudaMemsetAsync(largest_bits.get(), 0, sizeof(unsigned), stream.get()), "k-means++: memset");
  check(cudaMemsetAsync(failed.get(), 0, sizeof(int), stream.get()), "k-means++: memset");
  // Step 0's tile sums; each select phase zeroes the next step's.
  check(cudaMemsetAsync(tile_sums.get(), 0, tile_sums.bytes() / 2, stream.get()), "k-means++: memset");
  check(cudaMemcpyAsync(drawn.get(), &first, sizeof(first), cudaMemcpyHostToDevice, stream.get()),
        "k-means++: first centre");
  const int first_blocks = int(std::min<int64_t>((m + gpu::kBlock - 1) / gpu::kBlock, int64_t(sm_count) * 8));
  gpu::first_distances<<<first_blocks, gpu::kBlock, 0, stream.get()>>>(points, m, n, first, weights, d2.get(),
                                                                       largest_bits.get());
  check_launch("k-means++ first_distances");
  unsigned bits = 0;
  check(cudaMemcpyAsync(&bits, largest_bits.get(), sizeof(bits), cudaMemcpyDeviceToHost, stream.get()),
        "k-means++: largest D²");
  // The one host round trip: the weights' scale is fixed from the largest first D².
  check(cudaStreamSynchronize(stream.get()), "k-means++ first_distances");
  float largest = 0.0f;
  std::memcpy(&largest, &bits, sizeof(largest));
  if (!std::isfinite(largest))
    throw InputError("k-means++: a squared distance overflows float32 (the data's coordinates are too large; "
                     "scale the data)");

  gpu::State state{points, m,       n,       d2.get(), kmax, candidates, tiles, pass_blocks,
                   make_quantizer(largest, m), draws, drawn.get(), chosen.get(), tile_sums.get(),
                   block_sums.get(), failed.get(), stage_tile, weights};
  for (int step = 0; step < kmax; ++step) {
    kernels.pass<<<pass_blocks, pass_threads, pass_bytes, stream.get()>>>(state, step);
    const int select_blocks = step + 1 < kmax ? candidates : 1;
    kernels.select<<<select_blocks, gpu::kBlock, select_bytes, stream.get()>>>(state, step);
  }
  check_launch("k-means++ seeding_pass/seeding_select");
  run.chosen.resize(size_t(kmax));
  int status = 0;
  check(cudaMemcpyAsync(run.chosen.data(), chosen.get(), chosen.bytes(), cudaMemcpyDeviceToHost, stream.get()),
        "k-means++: centres");
  check(cudaMemcpyAsync(&status, failed.get(), sizeof(int), cudaMemcpyDeviceToHost, stream.get()),
        "k-means++: status");
  check(cudaEventRecord(stop.get(), stream.get()), "k-means++: event");
  check(cudaStreamSynchronize(stream.get()), "k-means++ seeding");
  float milliseconds = 0;
  check(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()), "k-means++: event time");
  run.seconds = milliseconds * 1e-3;
  if (status != 0)
    throw std::logic_error("k-means++ on the GPU: a draw was not found in the weights it was drawn from");
  for (int64_t index : run.chosen)
    if (index < 0 || index >= m) throw std::logic_error("k-means++ on the GPU returned point " + std::to_string(index));
  return run;
}

KmeansppRun kmeanspp_gpu(const Dataset& data, int kmax, int candidates, uint64_t seed, const DeviceInfo& device) {
  return kmeanspp_on(&data, nullptr, data.m, data.n, kmax, candidates, seed, device, nullptr);
}

KmeansppRun kmeanspp_gpu_on_device(const float* points, int64_t m, int n, int kmax, int candidates, uint64_t seed,
                                   const DeviceInfo& device, const float* weights) {
  if (!points || m < kmax || kmax < 1 || n < 1)
    throw InputError("k-means++ on device points: " + std::to_string(m) + " x " + std::to_string(n) +
                     " points cannot seed K=" + std::to_string(kmax));
  return kmeanspp_on(nullptr, points, m, n, kmax, candidates, seed, device, weights);
}

}  // namespace mk::seeding
