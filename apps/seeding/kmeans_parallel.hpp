#pragma once
// k-means|| (Bahmani, Moseley, Vattani, Kumar, Vassilvitskii, "Scalable K-Means++", VLDB 2012):
// a few oversampling rounds replace k-means++'s kmax dependent steps. The first centre is a
// uniform point; each round draws every point independently with probability
// min(1, ℓ·D²(x) / Σ D²) and adds the drawn points to the candidates; each candidate is then
// weighted by the points nearest to it, and greedy k-means++ on the weighted candidates
// (kmeanspp_cpu with weights) chooses the kmax centres, in order, so that the first k seed
// each k of a range as k-means++'s do. docs/seeding.md ("k-means||") has the design and the
// measurements.
#include <cstdint>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "datasets/dataset.hpp"

namespace mk::seeding {

struct KmeansParallelOptions {
  int rounds = 5;             // Bahmani et al.: 5 rounds suffice in practice
  double oversampling = 0;    // ℓ, the expected new candidates a round; 0: 2·kmax
  int candidates = 0;         // the reclustering k-means++'s candidates a step (candidate_count)
};

struct KmeansParallelRun {
  std::vector<int64_t> chosen;            // kmax point indices, in the order chosen
  std::vector<int64_t> candidates;        // the oversampled points, in the order drawn
  std::vector<int64_t> candidate_weights; // points whose nearest candidate each is (ties: the first)
  int rounds = 0;                         // rounds run (more than asked while fewer than kmax)
  double seconds = 0;
  std::string path = "cpu-openmp";
  double upload_seconds = 0;              // GPU: allocating and copying the points
};

// On every point of `data` (validated: finite, m >= kmax >= 1). The draws are the counter RNG's
// (RandomStream::SeedingParallel), the sums fixed-order, so the result does not depend on the
// thread count. InputError for rounds < 1 or a negative or non-finite oversampling.
KmeansParallelRun kmeans_parallel_cpu(const Dataset& data, int kmax, uint64_t seed,
                                      const KmeansParallelOptions& options = {});

// The same on device.ordinal (kmeans_parallel_gpu.cu): the same candidates, weights and centres
// as kmeans_parallel_cpu for the same seed. `seconds` is the host's wall time of the rounds and
// the reclustering (the upload apart). UnsupportedError beyond 2^31 - 1 rows.
KmeansParallelRun kmeans_parallel_gpu(const Dataset& data, int kmax, uint64_t seed,
                                      const KmeansParallelOptions& options, const DeviceInfo& device);

}  // namespace mk::seeding
