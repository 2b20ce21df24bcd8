#pragma once
// Counter-based random numbers: every value is a pure function of (seed, stream, index),
// so OpenMP threads can generate any slice of a dataset in any order and the bytes still do
// not depend on the thread count or schedule.
#include <cstdint>

// The mixer and the unit draws also compile for the device (nvcc), where they give the same bits:
// variants/chunked/ makes a generator's out-of-core chunks on the GPU with them.
#ifdef __CUDACC__
#define MK_HOST_DEVICE __host__ __device__
#else
#define MK_HOST_DEVICE
#endif

namespace mk {

// SplitMix64's output function: a bijective 64-bit mixer with good avalanche.
MK_HOST_DEVICE inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Purposes that draw from the same seed get separate streams so their values are not
// correlated (e.g. the zero mask must not pick the entries whose value happens to be small).
enum class RandomStream : uint64_t {
  UniformValue = 1,
  NormalRadius = 2,
  NormalAngle = 3,
  ZeroMask = 4,
  BlobCentre = 5,
  BlobAssignment = 6,
  InitialSample = 7,
  EmptyRelocation = 8,  // the random empty-cluster policy's draws
  Seeding = 9,          // k-means++ and its variants
  SusyClass = 10,       // the susy: generator's class of each row
  ExploreSubset = 11,   // mkbench explore: each copy's attributes
  ExploreInit = 12,     // mkbench explore: each copy's initial centroids (rows drawn)
  SeedingSample = 13,   // the rows k-means++ seeds from when it takes a sample
  SeedingParallel = 14, // k-means||: its first centre and its oversampling rounds' draws
};

class CounterRng {
 public:
  CounterRng(uint64_t seed, RandomStream stream)
      : key_(mix64(seed ^ mix64(static_cast<uint64_t>(stream) * kIncrement))) {}

  // SplitMix64's increment: the counter of index i + 1 is the counter of i plus this.
  static constexpr uint64_t kIncrement = 0x9e3779b97f4a7c15ULL;
  // The mixer's input for `index`: a loop over consecutive indices may add kIncrement instead.
  MK_HOST_DEVICE uint64_t counter(uint64_t index) const { return key_ + (index + 1) * kIncrement; }
  // Equivalent to jumping a SplitMix64 generator straight to position `index`.
  MK_HOST_DEVICE uint64_t bits(uint64_t index) const { return mix64(counter(index)); }
  // unit_float of the bits of a counter: 24 bits, exact in a float (so converted from 32 bits,
  // the same value as from 64), scaled by 2^-24.
  MK_HOST_DEVICE static float unit_float_of_counter(uint64_t counter) {
    return float(uint32_t(mix64(counter) >> 40)) * 0x1p-24f;
  }

  // 24 random bits scaled by 2^-24: every result is an exact float in [0, 1).
  MK_HOST_DEVICE float unit_float(uint64_t index) const { return unit_float_of_counter(counter(index)); }
  // 53 random bits: a double in [0, 1).
  MK_HOST_DEVICE double unit_double(uint64_t index) const { return double(bits(index) >> 11) * 0x1p-53; }
  // Uniform integer in [0, bound) by multiply-high (bias below 2^-32 for bounds < 2^32).
  uint64_t below(uint64_t index, uint64_t bound) const {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(bits(index)) * bound) >> 64);
  }

 private:
  uint64_t key_;
};

}  // namespace mk
