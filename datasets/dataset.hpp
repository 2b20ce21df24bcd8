#pragma once
// Host-side point sets and their identity. Points are always held row-major (AoS) on the
// host; variants that want SoA transpose on upload, so layout is a variant parameter.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/problem.hpp"

namespace mk {

struct Dataset {
  int64_t m = 0;
  int n = 0;
  std::vector<float> values;  // m*n, row-major
  // Enough to regenerate or re-find the data: {"kind":"generator","generator":...,
  // "params":{...},"seed":...} or {"kind":"file","path":...,"bytes":...,"sha256":...}.
  nlohmann::json identity;
  double sparsity = 0.0;  // fraction of exact zeros, measured at load/generation time

  float at(int64_t i, int d) const { return values[static_cast<size_t>(i) * n + d]; }
  const float* row(int64_t i) const { return values.data() + static_cast<size_t>(i) * n; }
};

struct GeneratorSpec {
  std::string kind = "uniform";  // uniform | blobs
  int64_t m = 0;
  int n = 0;
  uint64_t seed = 42;
  int centers = 8;          // blobs
  double spread = 1.0;      // blobs: per-dimension standard deviation
  double box = 10.0;        // blobs: centres uniform in [-box, box]
  double zero_fraction = 0; // sparse variant: fraction of entries forced to exactly 0
};

// Deterministic for a given spec; parallel generation uses counter-based streams so the
// result does not depend on the thread count.
Dataset generate(const GeneratorSpec& spec);
// The centres generate() places the blobs around (centers x n, row-major); tests and
// reports use them to judge how well a clustering recovered the blobs.
std::vector<float> blob_centers(const GeneratorSpec& spec);
// Fraction of entries that are exactly zero (either sign).
double measure_sparsity(const std::vector<float>& values);

struct CsvOptions {
  bool header = false;
  int label_column = -1;           // dropped from the features when >= 0
  std::vector<int> columns;        // feature columns to keep (after dropping nothing); empty = all
  char delimiter = ',';
};
Dataset load_csv(const std::string& path, const CsvOptions& options);

// float32 little-endian .npy, 2-D, C or Fortran order (Fortran is converted to row-major).
Dataset load_npy(const std::string& path);
void save_npy(const std::string& path, const Dataset& data);

// Throws InputError naming the first offending row/column for NaN or Inf.
void check_finite(const Dataset& data);

// Centroid seeds for every K of the range, packed as KRange::slot_offset describes:
// FirstK takes points 0..K-1 (the seeds' choice); RandomSample draws K distinct points
// with the given seed.
std::vector<float> initial_centroids(const Dataset& data, const KRange& k, InitMethod method,
                                     uint64_t seed);

// Parse a --dataset spec: "uniform", "blobs:centers=10,spread=1.5,zeros=0.9",
// "csv:PATH[:header][:label=COL][:cols=0,2,3]", "npy:PATH".
Dataset load_dataset_spec(const std::string& spec, int64_t m, int n, uint64_t seed);

std::string sha256_hex(const void* data, size_t bytes);

}  // namespace mk
