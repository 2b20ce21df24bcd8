#pragma once
// Initial centroids for `mkbench fit` and `mkbench seed`: first, random, greedy k-means++
// (scikit-learn's default) on the CPU or the GPU, or a file. docs/seeding.md describes the
// methods, the GPU design and what was measured.
#include <cstdint>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "datasets/dataset.hpp"

namespace mk {

struct SeedingOptions {
  // "first" | "random" | "k-means++" | "k-means||" | "npy:PATH"
  std::string method = "k-means++";
  uint64_t seed = 0;
  // k-means++ candidates per step; 0 = 2 + floor(ln kmax) (scikit-learn's greedy choice),
  // 1 = plain (non-greedy) k-means++.
  int candidates = 0;
  // Sample weights (m values, checked by the caller), or null. k-means++ then samples w·D²
  // (kmeanspp.hpp) and runs on the host even for a GPU fit: the GPU kernels have no weights.
  // first, random and npy:PATH do not look at them.
  const std::vector<float>* weights = nullptr;
  // k-means++ draws from a stratified sample of this many rows (stratified_rows) instead of all
  // of them; 0: every row, unless the GPU path cannot hold them (seeding_rows_that_fit), then
  // the largest sample it can hold, at most kMaxSeedingSampleRows.
  int64_t sample_rows = 0;
  // k-means|| (kmeans_parallel.hpp): oversampling rounds, and ℓ, the expected candidates a round
  // (0: 2·kmax). Its reclustering k-means++ takes `candidates` too.
  int parallel_rounds = 5;
  double oversampling = 0;
};

// The auto sample's cap: 2^26 rows (4 GiB at N=16) gather, upload and seed in about a second,
// and still give a cluster of 1e-5 of the data hundreds of rows to be drawn from.
inline constexpr int64_t kMaxSeedingSampleRows = int64_t(1) << 26;

struct SeedingResult {
  std::vector<float> packed;  // centroids of every K, packed per KRange::slot_offset
  double seconds = 0;         // the seeding itself: on a GPU, device time without the upload
  std::string method;         // the method that ran, e.g. "k-means++" or "npy:PATH"
  std::string path;           // where k-means++ or k-means|| ran: "gpu" or "cpu-openmp" (else empty)
  double upload_seconds = 0;  // GPU path: allocating and copying the points (0 on the CPU)
  // Rows k-means++ drew from: m, or the sample's size (then `sample_reason` says why).
  int64_t rows_seen = 0;
  std::string sample_reason;
};

// `count` distinct rows of 0..m-1, ascending: one drawn uniformly (with `seed`) from each of
// `count` strata of equal size (up to one row), so every row is as likely to be chosen and a
// sorted file's classes are all represented. Every row when count >= m.
std::vector<int64_t> stratified_rows(int64_t m, int64_t count, uint64_t seed);

// How many rows of N dimensions GPU k-means++ can hold on `device` now: its free memory less
// the planner's reserve, over the points and the D² it keeps per row.
int64_t seeding_rows_that_fit(int n, const DeviceInfo& device);

// Centroids for every K of the range, packed per KRange::slot_offset.
//   first / random: datasets' initial_centroids (points 0..K-1, or K distinct random points).
//   k-means++: greedy D² sampling; for a K range it seeds kmax once and the first k centres
//     seed each k (a valid k-means++ prefix). The CPU and GPU paths draw the same centres
//     for the same seed (exact integer potentials, docs/seeding.md), independent of the
//     thread count and the launch shape.
//   k-means||: oversampling rounds, then greedy k-means++ on the weighted candidates
//     (kmeans_parallel.hpp); the first k of its kmax centres seed each k. The CPU and GPU
//     paths draw the same candidates and choose the same centres; no sample weights (InputError).
//   npy:PATH: a kmax×N float32 file whose first k rows seed each k.
// k-means++ on a sample (options.sample_rows, or data beyond the seeding GPU) is k-means++ on
// those rows: the same centres as seeding a Dataset of just them, with their row numbers.
// `device`: is_gpu -> the GPU path on that ordinal; else the CPU path (OpenMP).
// Throws InputError (exit 2) for an unknown method, K > M, an empty or non-finite dataset,
// squared distances that overflow float32, and an npy file of the wrong shape.
SeedingResult seed_centroids(const Dataset& data, const KRange& k, const SeedingOptions& options,
                             const DeviceInfo& device);

}  // namespace mk
