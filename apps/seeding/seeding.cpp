// seed_centroids: checks the request, runs the method, and packs one prefix of one sequence of
// centres per K (KRange::slot_offset), so that K and K+1 share their first K centres.
#include "apps/seeding/seeding.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "apps/seeding/kmeans_parallel.hpp"
#include "apps/seeding/kmeanspp.hpp"
#include "apps/seeding/kmeanspp_math.hpp"
#include "core/errors.hpp"
#include "datasets/counter_rng.hpp"
#include "datasets/generated_rows.hpp"
#include "harness/memory_plan.hpp"

namespace mk {

static_assert(static_cast<uint64_t>(RandomStream::Seeding) == seeding::kSeedingStream,
              "kmeanspp_math.hpp's device copy of the counter RNG must use RandomStream::Seeding");

namespace seeding {

int candidate_count(int kmax, int requested) {
  if (requested < 0 || requested > kMaxCandidates)
    throw InputError("k-means++ candidates per step must be 0 (automatic: 2 + floor(ln K)) or 1.." +
                     std::to_string(kMaxCandidates) + ", got " + std::to_string(requested));
  if (requested > 0) return requested;
  return 2 + int(std::floor(std::log(double(kmax))));
}

}  // namespace seeding

namespace {

void check_request(const Dataset& data, const KRange& k) {
  if (k.kmin < 1 || k.kmax < k.kmin) throw InputError("invalid K range " + k.str() + " for seeding");
  if (data.n < 1 || data.m < 1) throw InputError("cannot seed centroids from an empty dataset");
  if (!data.holds_rows() && !data.is_on_demand())
    throw InputError("dataset holds " + std::to_string(data.values.size()) + " values but claims " +
                     std::to_string(data.m) + " x " + std::to_string(data.n));
  if (k.kmax > data.m)
    throw InputError("K=" + std::to_string(k.kmax) + " exceeds the number of points M=" + std::to_string(data.m));
}

// Rows `row(0..kmax-1)` packed so that K's block holds the first K of them.
template <typename RowOf>
std::vector<float> pack_prefixes(const KRange& k, int n, RowOf row) {
  std::vector<float> packed(size_t(k.sum()) * size_t(n));
  for (int kk = k.kmin; kk <= k.kmax; ++kk) {
    float* block = packed.data() + size_t(k.slot_offset(kk)) * size_t(n);
    for (int c = 0; c < kk; ++c) std::memcpy(block + size_t(c) * size_t(n), row(c), size_t(n) * sizeof(float));
  }
  return packed;
}

SeedingResult from_file(const Dataset& data, const KRange& k, const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  const Dataset file = load_npy(path);
  if (file.m != k.kmax || file.n != data.n)
    throw InputError("--init npy:" + path + ": expected a " + std::to_string(k.kmax) + " x " + std::to_string(data.n) +
                     " float32 array (kmax x N: the first k rows seed each K of " + k.str() + "), the file is " +
                     std::to_string(file.m) + " x " + std::to_string(file.n));
  try {
    check_finite(file);
  } catch (const InputError& error) {
    throw InputError("--init npy:" + path + ": " + error.what());
  }
  SeedingResult result;
  result.packed = pack_prefixes(k, data.n, [&](int c) { return file.row(c); });
  result.method = "npy:" + path;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

// The rows `rows` of `data`, as a Dataset of their own (copied on all cores).
Dataset gather_rows(const Dataset& data, const std::vector<int64_t>& rows) {
  Dataset sample;
  sample.m = int64_t(rows.size());
  sample.n = data.n;
  sample.values.resize(rows.size() * size_t(data.n));
  sample.finite_checked = data.finite_checked;
  copy_rows_at(data, rows, sample.values.data());
  return sample;
}

// The rows a seeding draws from: `data` itself, or a stratified sample of `rows` of its rows
// gathered into `sample` (also every row of data made on demand: the passes read held rows).
// `sample_rows` gets the sample's row numbers.
const Dataset& rows_to_seed(const Dataset& data, int64_t rows, uint64_t seed, Dataset& sample,
                            std::vector<int64_t>& sample_rows) {
  if (rows == data.m && data.holds_rows()) return data;
  sample_rows = stratified_rows(data.m, rows, seed);
  sample = gather_rows(data, sample_rows);
  return sample;
}

// Data made on demand is seeded from at most kMaxSeedingSampleRows of its rows.
void cap_unheld_rows(const Dataset& data, int64_t& rows, std::string& reason) {
  if (!data.holds_rows() && rows == data.m && data.m > kMaxSeedingSampleRows) {
    rows = kMaxSeedingSampleRows;
    reason = "the " + std::to_string(data.m) + " rows are generated chunk by chunk, not held";
  }
}

SeedingResult kmeans_parallel(const Dataset& data, const KRange& k, const SeedingOptions& options,
                              const DeviceInfo& device) {
  check_finite(data);
  if (options.weights)
    throw InputError("k-means|| takes no sample weights: seed a weighted fit with k-means++ (its default)");
  if (options.sample_rows < 0)
    throw InputError("k-means||: a sample of " + std::to_string(options.sample_rows) + " rows");
  int64_t rows = options.sample_rows > 0 ? std::min(options.sample_rows, data.m) : data.m;
  std::string reason = rows < data.m ? "asked for" : "";
  if (options.sample_rows == 0 && device.is_gpu) {
    // Per row the GPU path keeps the point, D², the nearest candidate and two 8-byte scan words:
    // N + 6 floats' worth, which seeding_rows_that_fit(N + 5) counts.
    const int64_t fit = seeding_rows_that_fit(data.n + 5, device);
    if (fit < data.m) {
      rows = std::min(fit, kMaxSeedingSampleRows);
      reason = "the " + std::to_string(data.m) + " rows exceed what " + device.name + " holds now (" +
               std::to_string(fit) + " rows)";
    }
  }
  cap_unheld_rows(data, rows, reason);
  if (rows < k.kmax)
    throw InputError("k-means|| cannot seed K=" + std::to_string(k.kmax) + " from a sample of " +
                     std::to_string(rows) + " rows" + (reason.empty() ? "" : ": " + reason));
  Dataset sample;
  std::vector<int64_t> sample_rows;
  const Dataset& from = rows_to_seed(data, rows, options.seed, sample, sample_rows);
  seeding::KmeansParallelOptions parallel;
  parallel.rounds = options.parallel_rounds;
  parallel.oversampling = options.oversampling;
  parallel.candidates = seeding::candidate_count(k.kmax, options.candidates);
  const seeding::KmeansParallelRun run = device.is_gpu
                                             ? seeding::kmeans_parallel_gpu(from, k.kmax, options.seed, parallel, device)
                                             : seeding::kmeans_parallel_cpu(from, k.kmax, options.seed, parallel);
  SeedingResult result;
  result.packed = pack_prefixes(k, data.n, [&](int c) { return from.row(run.chosen[size_t(c)]); });
  result.seconds = run.seconds;
  result.upload_seconds = run.upload_seconds;
  result.method = options.method;
  result.path = run.path;
  result.rows_seen = rows;
  result.sample_reason = reason;
  return result;
}

}  // namespace

std::vector<int64_t> stratified_rows(int64_t m, int64_t count, uint64_t seed) {
  std::vector<int64_t> rows;
  if (m <= 0 || count <= 0) return rows;
  if (count >= m) {
    rows.resize(size_t(m));
    for (int64_t i = 0; i < m; ++i) rows[size_t(i)] = i;
    return rows;
  }
  rows.resize(size_t(count));
  const CounterRng rng(seed, RandomStream::SeedingSample);
  // Stratum j is [floor(j·m/count), floor((j+1)·m/count)): every stratum is non-empty (m > count)
  // and the strata tile 0..m-1, so the rows are distinct and ascending.
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < count; ++j) {
    const auto first = int64_t((unsigned __int128)(uint64_t(j)) * uint64_t(m) / uint64_t(count));
    const auto end = int64_t((unsigned __int128)(uint64_t(j) + 1) * uint64_t(m) / uint64_t(count));
    rows[size_t(j)] = first + int64_t(rng.below(uint64_t(j), uint64_t(end - first)));
  }
  return rows;
}

int64_t seeding_rows_that_fit(int n, const DeviceInfo& device) {
  if (!device.is_gpu) return std::numeric_limits<int64_t>::max();
  const MemoryLimits limits = current_memory_limits(device);
  // Per row: the point and its D² (float each); the per-tile sums and the fixed buffers are
  // inside the reserve.
  const int64_t per_row = int64_t(n + 1) * int64_t(sizeof(float));
  return std::max<int64_t>(0, limits.gpu_free_bytes - kGpuReserveBytes) / per_row;
}

SeedingResult seed_centroids(const Dataset& data, const KRange& k, const SeedingOptions& options,
                             const DeviceInfo& device) {
  check_request(data, k);
  const std::string& method = options.method;
  if (method == "first" || method == "random") {
    const auto start = std::chrono::steady_clock::now();
    SeedingResult result;
    result.packed = initial_centroids(data, k, parse_init(method), options.seed);
    result.method = method;
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  }
  if (method.rfind("npy:", 0) == 0) {
    if (method.size() == 4) throw InputError("--init npy: needs a path (npy:PATH)");
    return from_file(data, k, method.substr(4));
  }
  if (method == "k-means++") {
    check_finite(data);
    const int candidates = seeding::candidate_count(k.kmax, options.candidates);
    const std::vector<float>* weights = options.weights;
    if (weights && weights->size() != size_t(data.m))
      throw InputError("k-means++: " + std::to_string(weights->size()) + " sample weights for " +
                       std::to_string(data.m) + " points");
    if (options.sample_rows < 0)
      throw InputError("k-means++: a sample of " + std::to_string(options.sample_rows) + " rows");
    const bool on_gpu = device.is_gpu && !weights;  // the GPU kernels have no weights
    // Data beyond the seeding GPU (a fit sharded over several GPUs, or one whose run already
    // holds most of its GPU) seeds from the largest sample that fits, as scikit-learn's
    // MiniBatchKMeans seeds from init_size rows; the CPU path has every row in memory already.
    int64_t rows = options.sample_rows > 0 ? std::min(options.sample_rows, data.m) : data.m;
    std::string reason = options.sample_rows > 0 && rows < data.m ? "asked for" : "";
    if (options.sample_rows == 0 && on_gpu) {
      const int64_t fit = seeding_rows_that_fit(data.n, device);
      if (fit < data.m) {
        rows = std::min(fit, kMaxSeedingSampleRows);
        reason = "the " + std::to_string(data.m) + " rows exceed what " + device.name + " holds now (" +
                 std::to_string(fit) + " rows)";
      }
    }
    cap_unheld_rows(data, rows, reason);
    if (rows < k.kmax)
      throw InputError("k-means++ cannot seed K=" + std::to_string(k.kmax) + " from a sample of " +
                       std::to_string(rows) + " rows" + (reason.empty() ? "" : ": " + reason));
    std::vector<int64_t> sample_rows;
    Dataset sample;
    std::vector<float> sample_weights;
    const Dataset* from = &rows_to_seed(data, rows, options.seed, sample, sample_rows);
    if (weights && from != &data) {
      sample_weights.resize(sample_rows.size());
      for (size_t j = 0; j < sample_rows.size(); ++j) sample_weights[j] = (*weights)[size_t(sample_rows[j])];
      weights = &sample_weights;
    }
    const seeding::KmeansppRun run =
        weights  ? seeding::kmeanspp_cpu(*from, k.kmax, candidates, options.seed, weights->data())
        : on_gpu ? seeding::kmeanspp_gpu(*from, k.kmax, candidates, options.seed, device)
                 : seeding::kmeanspp_cpu(*from, k.kmax, candidates, options.seed);
    SeedingResult result;
    result.packed = pack_prefixes(k, data.n, [&](int c) { return from->row(run.chosen[size_t(c)]); });
    result.seconds = run.seconds;
    result.upload_seconds = run.upload_seconds;
    result.method = method;
    result.path = run.path;
    result.rows_seen = rows;
    result.sample_reason = reason;
    return result;
  }
  if (method == "k-means||") return kmeans_parallel(data, k, options, device);
  throw InputError("unknown initialisation '" + method + "': expected first, random, k-means++, k-means|| or npy:PATH");
}

}  // namespace mk
