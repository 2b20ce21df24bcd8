#pragma once
// Where an assignment kernel reads the centroids from, as a policy type, so one kernel
// body serves every placement (seed 004 puts them in __constant__ memory; staging them in
// shared memory is the usual alternative; plain global loads through the read-only cache
// need neither and fit any size).
//
// A kernel templated on `Source` does:
//   const Source centroids = Source::stage(global_centroids, slots * n, shared_scratch);
//   __syncthreads();              // only needed when Source::kStaged, harmless otherwise
//   ... centroids[slot * n + d] ...
//
// Constant memory is a per-module resource: without separable compilation every .cu file
// that declares a __constant__ array owns a private copy. A variant that wants the constant
// placement therefore expands MKBENCH_DEFINE_CONSTANT_CENTROID_BANK once, inside its own
// anonymous namespace, and uploads the current centroids (device to device) at the start
// of every iteration. The bank is shared by every run of that variant in the process, so
// two runs of the same variant must not iterate concurrently (the harness runs one at a
// time).
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/errors.hpp"
#include "variants/common/gpu_lloyd_state.cuh"

namespace mk::gpu {

enum class CentroidPlacement { Global, Shared, Constant };

inline const char* to_string(CentroidPlacement placement) {
  switch (placement) {
    case CentroidPlacement::Global: return "global";
    case CentroidPlacement::Shared: return "shared";
    case CentroidPlacement::Constant: return "constant";
  }
  return "?";
}

inline CentroidPlacement parse_centroid_placement(const std::string& text) {
  if (text == "global") return CentroidPlacement::Global;
  if (text == "shared") return CentroidPlacement::Shared;
  if (text == "constant") return CentroidPlacement::Constant;
  throw InputError("unknown centroid placement '" + text + "' (expected global, shared or constant)");
}

// 64 KB: the whole __constant__ space a module may declare.
constexpr int kConstantCentroidFloats = 16384;

inline bool fits_constant_bank(const Problem& problem) {
  return int64_t(problem.k.sum()) * problem.n <= kConstantCentroidFloats;
}

// Centroids read from global memory through the read-only data cache. Any size fits.
struct GlobalCentroids {
  static constexpr bool kStaged = false;
  const float* data;
  __device__ static GlobalCentroids stage(const float* global, int /*count*/, float* /*shared*/) {
    return {global};
  }
  __device__ __forceinline__ float operator[](int index) const { return __ldg(data + index); }
};

// Centroids copied once per block into shared memory; every later read is a shared load.
// Cheapest when lanes of a warp read different centroid entries (CSR column gathers,
// lanes splitting the feature dimension).
struct SharedCentroids {
  static constexpr bool kStaged = true;
  const float* data;
  // Block-cooperative copy; the caller must __syncthreads() before the first read.
  __device__ static SharedCentroids stage(const float* global, int count, float* shared) {
    for (int j = threadIdx.x; j < count; j += blockDim.x) shared[j] = global[j];
    return {shared};
  }
  __device__ __forceinline__ float operator[](int index) const { return data[index]; }
};

// Centroids read from a __constant__ bank (see MKBENCH_DEFINE_CONSTANT_CENTROID_BANK).
// The constant cache broadcasts one address per warp per cycle, so this only pays off
// when all lanes of a warp read the same centroid entry at the same time (one thread per
// point, loops over centroids and dimensions uniform across the warp); divergent
// addresses serialise.
template <class Bank>
struct ConstantCentroids {
  static constexpr bool kStaged = false;
  __device__ static ConstantCentroids stage(const float* /*global*/, int /*count*/, float* /*shared*/) {
    return {};
  }
  __device__ __forceinline__ float operator[](int index) const { return Bank::load(index); }
};

}  // namespace mk::gpu

// Declares a private __constant__ centroid bank and its accessor type `BankName`, for use
// with mk::gpu::ConstantCentroids<BankName>. Expand inside an anonymous namespace of the
// variant's .cu file so the host-side shadow symbol has internal linkage. The accessor reads
// the symbol directly (not through a pointer) so the compiler emits constant-space loads.
#define MKBENCH_DEFINE_CONSTANT_CENTROID_BANK(BankName)                                                  \
  __constant__ float BankName##_symbol[::mk::gpu::kConstantCentroidFloats];                             \
  struct BankName {                                                                                      \
    __device__ __forceinline__ static float load(int index) { return BankName##_symbol[index]; }        \
    /* The bank's address on the current device, for a ConstantBankTurn (constant_bank_turn.hpp). */    \
    static const void* address() {                                                                       \
      void* at = nullptr;                                                                                \
      ::mk::gpu::check(cudaGetSymbolAddress(&at, BankName##_symbol), "constant bank address");          \
      return at;                                                                                         \
    }                                                                                                    \
    /* Device-to-device copy of `count` floats, ordered on `stream` before the next kernel. */           \
    static void upload(const float* device_centroids, size_t count, cudaStream_t stream) {              \
      if (count > size_t(::mk::gpu::kConstantCentroidFloats))                                           \
        throw ::mk::UnsupportedError("centroids (" + std::to_string(count) +                            \
                                     " floats) exceed the 64 KB constant bank");                        \
      ::mk::gpu::check(cudaMemcpyToSymbolAsync(BankName##_symbol, device_centroids, count * sizeof(float), \
                                               0, cudaMemcpyDeviceToDevice, stream),                    \
                       "copy centroids to constant memory");                                            \
    }                                                                                                    \
  }
