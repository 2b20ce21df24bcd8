#pragma once
// The centroid groups of gpu-u8-norm's bounded steps (u8_norm_bounds.cuh): a plain struct the
// host fills and the kernels read, and the host code that fills it.
#include <cstdint>

namespace mk::u8norm {

constexpr int kMaxPaletteK = 256;  // a palette index is a byte
constexpr int kMaxGroups = 8;

// Table position p holds centroid order[p]; group g is positions start[g] .. start[g + 1] − 1.
struct Groups {
  int count;
  int start[kMaxGroups + 1];
  uint8_t order[kMaxPaletteK];
  uint8_t group_of[kMaxPaletteK];
};

// min(kMaxGroups, k) groups of near-equal size (sizes differ by at most one) of neighbouring
// colours: the centroids (k × 3 floats, 1 ≤ k ≤ kMaxPaletteK) in the Morton order of their
// colours rounded to bytes, ties by index. Neighbours in a group keep its lower bound tight: a
// pixel near one of them is far from the other groups.
Groups group_centroids(const float* centroids, int k);

}  // namespace mk::u8norm
