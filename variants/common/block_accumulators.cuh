#pragma once
// Block-private accumulation in shared memory, shared by shared-atomics, warp-centric and
// csr-sparse: the carve-up of one dynamic shared-memory allocation (described by the same
// SharedLayout on host and device, so can_implement and the launch agree on the bytes),
// zeroing, and flushing into LloydState's FP64 accumulators; plus the warp reductions the
// kernels use.
//
// The step kernels all have the same frame, which lives here once:
//   const BlockAccumulators block_acc = BlockAccumulators::carve(layout);
//   const Source source = block_acc.begin<Source>(centroids, slots, n);
//   int since_flush = 0;
//   for (block-uniform grid-stride loop) {
//     ... classify, block_acc.add_value / add_count / inertia atomics ...
//     block_acc.flush_every(since_flush, iterations_per_flush, acc);
//   }
//   block_acc.flush_last(acc);
// and so does the host side of it: the shared-memory checks of can_implement, the
// param-space restriction and default placement of the {accumulate, centroids} axes, and
// BlockAccumulatorRun (shared-memory check and opt-in, grid and flush cadence, launch).
//
// Precision: sums are FP32 in shared memory (FP64 shared atomics are emulated on several
// architectures and halve the capacity). A block flushes into the FP64 global sums after
// at most kMaxPointsPerFlush of its points, so no FP32 partial sum ever holds more than
// 4096 addends: rounding stays around 1e-6 relative, well inside --verify's 1e-4 centroid
// tolerance, whatever M is. Inertia is FP64 in shared memory (one atomic per warp or group,
// not per coordinate) because its tolerance is 1e-5.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>

#include "core/errors.hpp"
#include "variants/variant.hpp"
#include "variants/common/centroid_source.cuh"
#include "variants/common/gpu_lloyd_state.cuh"

namespace mk::gpu {

constexpr unsigned kFullWarp = 0xffffffffu;
constexpr int kMaxPointsPerFlush = 4096;
// The default dynamic shared memory a kernel may use without opting in.
constexpr int64_t kDefaultSharedBytes = 48 * 1024;

// Outer-loop iterations between flushes, for a loop that advances a block by
// `points_per_block_iteration` points per iteration.
inline int iterations_per_flush(int points_per_block_iteration) {
  return std::max(1, kMaxPointsPerFlush / std::max(1, points_per_block_iteration));
}

// Bytes and offsets of a block's dynamic shared memory. Inertia (FP64) comes first so it
// is 8-byte aligned; everything after it is 4-byte data.
struct SharedLayout {
  int kcount = 0;                    // Ks in the range: one FP64 inertia each
  int slots = 0;                     // ΣK centroid slots
  int n = 0;                         // dimensions
  bool sums_in_shared = false;       // FP32 sums + u32 counts per slot
  bool centroids_in_shared = false;  // a staged copy of every centroid

  __host__ __device__ int64_t inertia_bytes() const { return int64_t(kcount) * 8; }
  __host__ __device__ int64_t sums_bytes() const { return sums_in_shared ? int64_t(slots) * n * 4 : 0; }
  __host__ __device__ int64_t counts_bytes() const { return sums_in_shared ? int64_t(slots) * 4 : 0; }
  __host__ __device__ int64_t centroids_bytes() const {
    return centroids_in_shared ? int64_t(slots) * n * 4 : 0;
  }
  __host__ __device__ int64_t bytes() const {
    return inertia_bytes() + sums_bytes() + counts_bytes() + centroids_bytes();
  }
};

inline SharedLayout shared_layout(const Problem& problem, bool sums_in_shared, bool centroids_in_shared) {
  SharedLayout layout;
  layout.kcount = problem.k.count();
  layout.slots = problem.k.sum();
  layout.n = problem.n;
  layout.sums_in_shared = sums_in_shared;
  layout.centroids_in_shared = centroids_in_shared;
  return layout;
}

// The layout named by a variant's `accumulate` and `centroids` axes (each "shared" or
// "global").
inline SharedLayout shared_layout_from_params(const Problem& problem, const Params& params) {
  return shared_layout(problem, params.at("accumulate") == "shared", params.at("centroids") == "shared");
}

struct BlockAccumulators {
  double* inertia;    // kcount
  float* sums;        // slots*n, null when sums go straight to global memory
  unsigned* counts;   // slots, null likewise
  float* centroids;   // slots*n staging area, null when centroids are not in shared memory
  int kcount;
  int slots;
  int values;         // slots*n

  // The kernel's dynamic shared memory (the launch passes layout.bytes()), carved up.
  __device__ static BlockAccumulators carve(const SharedLayout& layout) {
    extern __shared__ double shared_words[];
    return carve(layout, shared_words);
  }

  __device__ static BlockAccumulators carve(const SharedLayout& layout, void* base) {
    char* cursor = static_cast<char*>(base);
    BlockAccumulators out;
    out.kcount = layout.kcount;
    out.slots = layout.slots;
    out.values = layout.slots * layout.n;
    out.inertia = reinterpret_cast<double*>(cursor);
    cursor += layout.inertia_bytes();
    out.sums = layout.sums_in_shared ? reinterpret_cast<float*>(cursor) : nullptr;
    cursor += layout.sums_bytes();
    out.counts = layout.sums_in_shared ? reinterpret_cast<unsigned*>(cursor) : nullptr;
    cursor += layout.counts_bytes();
    out.centroids = layout.centroids_in_shared ? reinterpret_cast<float*>(cursor) : nullptr;
    return out;
  }

  // Block-wide kernel prologue: zeroes the accumulators, stages the slots×n centroid
  // floats when `Source` keeps them in shared memory, and synchronises, so the block may
  // accumulate and read centroids once it returns.
  template <class Source>
  __device__ __forceinline__ Source begin(const float* global_centroids, int slots, int n) const {
    zero();
    const Source source = Source::stage(global_centroids, slots * n, centroids);
    __syncthreads();
    return source;
  }

  // Block-wide; __syncthreads() before anyone accumulates.
  __device__ void zero() const {
    for (int j = threadIdx.x; j < kcount; j += blockDim.x) inertia[j] = 0.0;
    if (sums) {
      for (int j = threadIdx.x; j < values; j += blockDim.x) sums[j] = 0.f;
      for (int j = threadIdx.x; j < slots; j += blockDim.x) counts[j] = 0u;
    }
  }

  // Block-wide: adds every non-zero partial into the FP64/u64 global accumulators and
  // resets it. Each thread resets exactly the entries it read, so the only barriers needed
  // are one before (all accumulation done) and one after (before accumulating again).
  __device__ void flush(const AccumulatorView& acc) const {
    for (int j = threadIdx.x; j < kcount; j += blockDim.x) {
      const double value = inertia[j];
      if (value != 0.0) {
        atomicAdd(&acc.inertia[j], value);
        inertia[j] = 0.0;
      }
    }
    if (!sums) return;
    for (int j = threadIdx.x; j < values; j += blockDim.x) {
      const float value = sums[j];
      if (value != 0.f) {
        atomicAdd(&acc.sums[j], double(value));
        sums[j] = 0.f;
      }
    }
    for (int j = threadIdx.x; j < slots; j += blockDim.x) {
      const unsigned count = counts[j];
      if (count != 0u) {
        atomicAdd(&acc.counts[j], static_cast<unsigned long long>(count));
        counts[j] = 0u;
      }
    }
  }

  // Block-wide, once per iteration of a block-uniform loop: flushes (between barriers)
  // after every `iterations_per_flush` iterations.
  __device__ __forceinline__ void flush_every(int& since_flush, int iterations_per_flush,
                                              const AccumulatorView& acc) const {
    if (++since_flush == iterations_per_flush) {
      __syncthreads();
      flush(acc);
      __syncthreads();
      since_flush = 0;
    }
  }

  // Block-wide, after the loop: flushes what is left.
  __device__ __forceinline__ void flush_last(const AccumulatorView& acc) const {
    __syncthreads();
    flush(acc);
  }

  // One coordinate of one point into its slot: shared FP32 when the block owns sums,
  // global FP64 otherwise. `index` = slot*n + d.
  __device__ __forceinline__ void add_value(const AccumulatorView& acc, int64_t index, float value) const {
    if (sums) atomicAdd(&sums[index], value);
    else atomicAdd(&acc.sums[index], double(value));
  }
  __device__ __forceinline__ void add_count(const AccumulatorView& acc, int slot, unsigned count) const {
    if (counts) atomicAdd(&counts[slot], count);
    else atomicAdd(&acc.counts[slot], static_cast<unsigned long long>(count));
  }
};


template <bool kSoA>
__device__ __forceinline__ float load_point(const PointsView& points, int64_t i, int d) {
  if constexpr (kSoA) return __ldg(points.data + int64_t(d) * points.m + i);
  else return __ldg(points.data + i * points.n + d);
}

__device__ __forceinline__ double warp_sum(double value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(kFullWarp, value, offset);
  return value;
}

// Butterfly sum over an aligned group of `width` lanes (a power of two ≤ 32) named by
// `mask`. Every lane of the group ends with the same bits: each step adds the same two
// values, only in swapped order, and IEEE addition is commutative. Kernels rely on that to
// take group-uniform decisions (argmin, near-tie re-checks) without a broadcast.
template <typename T>
__device__ __forceinline__ T group_sum(T value, int width, unsigned mask) {
  for (int offset = width / 2; offset > 0; offset >>= 1) value += __shfl_xor_sync(mask, value, offset, width);
  return value;
}

// Lanes of the aligned `width`-lane group containing `lane`.
__device__ __forceinline__ unsigned group_mask(int lane, int width) {
  if (width >= 32) return kFullWarp;
  return ((1u << width) - 1u) << (lane & ~(width - 1));
}

// Position of the set bit of `mask` that has exactly `rank` set bits below it; `rank`
// must be below popc(mask). Binary search on prefix popcounts: five steps, no loop over
// bits.
__device__ __forceinline__ int nth_set_bit(unsigned mask, int rank) {
  int position = 0;
#pragma unroll
  for (int step = 16; step > 0; step >>= 1) {
    const int candidate = position + step;  // at most 31
    if (__popc(mask & ((1u << candidate) - 1u)) <= rank) position = candidate;
  }
  return position;
}

// Sum of a float over the lanes that share a key (one __match_any_sync group), left in
// the group's lowest lane. Partners are found once per key and reused for every
// coordinate. The scan is a Hillis-Steele suffix sum over ranks within the group: after
// step s each lane holds the sum of ranks [r, r + 2^(s+1)), so rank 0 ends with the total.
// All 32 lanes must call sum() together.
struct PeerSum {
  int partner[5];
  bool leader;
  int size;

  __device__ PeerSum(unsigned peers, int lane) {
    const int rank = __popc(peers & ((1u << lane) - 1u));
    size = __popc(peers);
    leader = rank == 0;
#pragma unroll
    for (int step = 0; step < 5; ++step) {
      const int target = rank + (1 << step);
      partner[step] = target < size ? nth_set_bit(peers, target) : -1;
    }
  }

  __device__ __forceinline__ float sum(float value) const {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int step = 0; step < 5; ++step) {
      const float other = __shfl_sync(kFullWarp, value, partner[step] >= 0 ? partner[step] : lane);
      if (partner[step] >= 0) value += other;
    }
    return value;
  }
};

// Opts a kernel into more than the default 48 KB of dynamic shared memory when needed.
template <typename Kernel>
void allow_shared_bytes(Kernel* kernel, int64_t bytes, const char* kernel_name) {
  if (bytes > kDefaultSharedBytes)
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)), kernel_name);
}

// Blocks to launch for a grid-stride kernel: enough to fill every SM at the occupancy the
// kernel reaches with this block and shared memory, never more than the work needs.
template <typename Kernel>
int resident_grid(Kernel* kernel, int block, int64_t shared_bytes, int sm_count, int64_t blocks_of_work) {
  int per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, size_t(shared_bytes)),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  if (sm_count <= 0) {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device), "SM count");
  }
  const int64_t full = int64_t(std::max(per_sm, 1)) * std::max(sm_count, 1);
  return int(std::max<int64_t>(1, std::min(full, blocks_of_work)));
}

// ---------------------------------------------------------------------------------------
// Host side of the variants whose {accumulate, centroids} axes choose what goes into
// shared memory (warp-centric, csr-sparse).

// can_implement: centroid indices are int, and the per-K inertia (the smallest layout)
// must fit in a block's shared memory.
inline std::optional<std::string> check_block_accumulators(const Problem& problem, const DeviceInfo& device) {
  if (int64_t(problem.k.sum()) * problem.n > INT_MAX) return "ΣK·N exceeds 2^31 centroid values";
  const int64_t minimal = shared_layout(problem, false, false).bytes();
  if (minimal > device.smem_per_block_optin)
    return "per-K inertia alone needs " + std::to_string(minimal) + " B of shared memory, " + device.name +
           " allows " + std::to_string(device.smem_per_block_optin) + " B per block";
  return std::nullopt;
}

// param_space: the layout the {accumulate, centroids} params name must fit in a block.
inline Restriction shared_memory_restriction(const Problem& problem, const DeviceInfo& device) {
  const int64_t limit = device.smem_per_block_optin;
  const int64_t base = shared_layout(problem, false, false).bytes();
  const int64_t sums = shared_layout(problem, true, false).bytes() - base;
  const int64_t staged = shared_layout(problem, false, true).bytes() - base;
  return {"shared memory per block ≤ " + std::to_string(limit) + " B (inertia " + std::to_string(base) +
              " B + accumulate=shared " + std::to_string(sums) + " B + centroids=shared " + std::to_string(staged) +
              " B)",
          [problem, limit](const Params& p) { return shared_layout_from_params(problem, p).bytes() <= limit; }};
}

// default_params: block-private sums when they fit (global FP64 atomics per coordinate
// contend), then staged centroids when they also fit; centroids alone when sums do not.
struct SharedPlacement {
  bool sums;
  bool centroids;
  const char* accumulate_param() const { return sums ? "shared" : "global"; }
  const char* centroids_param() const { return centroids ? "shared" : "global"; }
};

inline SharedPlacement default_shared_placement(const Problem& problem, const DeviceInfo& device) {
  const int64_t limit = device.smem_per_block_optin;
  const bool sums_fit = shared_layout(problem, true, false).bytes() <= limit;
  const bool both_fit = shared_layout(problem, true, true).bytes() <= limit;
  const bool centroids_fit = shared_layout(problem, false, true).bytes() <= limit;
  return {sums_fit, sums_fit ? both_fit : centroids_fit};
}

// ---------------------------------------------------------------------------------------
// Base of the prepared runs of the three variants: the block's shared layout, the step
// kernel and its launch shape. A derived constructor calls use_kernel (after its own
// checks, in the order it wants them reported), then one of the plan_* functions;
// iterate() launches through launch().
template <typename StepKernel>
class BlockAccumulatorRun : public GpuRun {
 protected:
  BlockAccumulatorRun(const Problem& problem, const Dataset& data, Layout points_layout, int block,
                      const SharedLayout& layout)
      : GpuRun(problem, data, points_layout), block_(block), layout_(layout) {}

  // Refuses a layout larger than the device allows per block (UnsupportedError naming
  // `variant_name`), and opts `kernel` into more than 48 KB when the layout needs it.
  void use_kernel(StepKernel* kernel, const char* kernel_name, const char* variant_name, const DeviceInfo& device) {
    kernel_ = kernel;
    kernel_name_ = kernel_name;
    const int64_t bytes = layout_.bytes();
    if (device.smem_per_block_optin > 0 && bytes > device.smem_per_block_optin)
      throw UnsupportedError(std::string(variant_name) + " needs " + std::to_string(bytes) +
                             " B of shared memory per block, " + device.name + " allows " +
                             std::to_string(device.smem_per_block_optin) + " B");
    allow_shared_bytes(kernel_, bytes, (std::string(kernel_name) + ": shared memory opt-in").c_str());
  }

  // Grid: the blocks every SM can hold at once (see resident_grid), at most those the
  // points fill; a block advances `points_per_block_iteration` points per loop iteration.
  void plan_resident_grid(const DeviceInfo& device, int points_per_block_iteration) {
    grid_ = resident_grid(kernel_, block_, layout_.bytes(), device.sm_count,
                          blocks_of_work(points_per_block_iteration));
    iterations_per_flush_ = iterations_per_flush(points_per_block_iteration);
  }

  // Grid: `requested` blocks, at most those the points fill.
  void plan_requested_grid(int requested, int points_per_block_iteration) {
    grid_ = int(std::min<int64_t>(requested, blocks_of_work(points_per_block_iteration)));
    iterations_per_flush_ = iterations_per_flush(points_per_block_iteration);
  }

  // The step kernel on the run's stream, with the layout's dynamic shared memory.
  template <typename... Args>
  void launch(const Args&... args) {
    kernel_<<<grid_, block_, layout_.bytes(), state_.stream()>>>(args...);
    check_launch(kernel_name_);
  }

  int block_;
  SharedLayout layout_;
  StepKernel* kernel_ = nullptr;
  const char* kernel_name_ = "";
  int grid_ = 1;
  int iterations_per_flush_ = 1;

 private:
  int64_t blocks_of_work(int points_per_block_iteration) const {
    return (state_.problem().m + points_per_block_iteration - 1) / points_per_block_iteration;
  }
};

}  // namespace mk::gpu
