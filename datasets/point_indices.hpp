#pragma once
// The point indices behind initial_centroids' seeds (dataset.hpp), for callers that hold the
// points elsewhere: the Python package's device arrays gather those rows on the GPU.
#include <cstdint>
#include <vector>

#include "core/problem.hpp"

namespace mk {

// For K = kmax (every K of a range takes a prefix): 0..kmax-1 for FirstK, RandomSample's draw
// with the seed. InputError when kmax is below 1 or above m.
std::vector<int64_t> initial_point_indices(int64_t m, int kmax, InitMethod method, uint64_t seed);

}  // namespace mk
