#pragma once
// Greedy k-means++ (scikit-learn's _kmeans_plusplus): the first centre uniform; then each step
// draws L candidates by D² sampling, keeps the one whose potential Σ min(D², d²(x, cand)) is
// lowest (the lowest candidate number on a tie), and updates D². Both paths return the chosen
// point indices and draw the same ones for the same seed (kmeanspp_math.hpp says why).
#include <cstdint>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "datasets/dataset.hpp"

namespace mk::seeding {

// A step's candidates live in registers of the GPU pass (kmeanspp_kernels.cuh).
constexpr int kMaxCandidates = 32;

// 2 + floor(ln kmax) (scikit-learn's n_local_trials) when requested is 0; else requested,
// which must lie in 1..kMaxCandidates (InputError otherwise).
int candidate_count(int kmax, int requested);

struct KmeansppRun {
  std::vector<int64_t> chosen;  // kmax point indices, in the order chosen
  double seconds = 0;           // the seeding: host wall time (CPU), device time (GPU)
  double upload_seconds = 0;    // GPU: allocating and copying the points
  std::string path;             // "cpu-openmp" or "gpu"
};

// Both expect a validated dataset (finite, m >= kmax >= 1). InputError when squared distances
// overflow float32.
// `weights` (m, non-negative, finite, or null for all 1): D² sampling draws point i with
// probability w_i·D²_i / Σ w·D², the first centre with probability w_i / Σ w, and the greedy
// potential is Σ w·min(D², d²): scikit-learn's kmeans_plusplus with sample_weight. A weighted
// fit seeds here (docs/fit.md "Sample weights"); on the GPU only k-means||'s reclustering
// passes weights (kmeanspp_gpu_on_device).
KmeansppRun kmeanspp_cpu(const Dataset& data, int kmax, int candidates, uint64_t seed,
                         const float* weights = nullptr);

// The GPU path runs its kmax dependent steps as two kernels a step on one stream, with no host
// synchronisation between them.
KmeansppRun kmeanspp_gpu(const Dataset& data, int kmax, int candidates, uint64_t seed, const DeviceInfo& device);
// The same on m × n row-major points already on device.ordinal (the Python package's CuPy or
// torch arrays, k-means||'s candidates): nothing is uploaded, and the same points draw the same
// centres. `weights`: m device weights (as kmeanspp_cpu's), or null; a weighted run takes the
// per-thread pass and copies the weights back once for the first draw.
KmeansppRun kmeanspp_gpu_on_device(const float* points, int64_t m, int n, int kmax, int candidates, uint64_t seed,
                                   const DeviceInfo& device, const float* weights = nullptr);

}  // namespace mk::seeding
