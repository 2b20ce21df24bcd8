// seed_centroids: checks the request, runs the method, and packs one prefix of one sequence of
// centres per K (KRange::slot_offset), so that K and K+1 share their first K centres.
#include "apps/seeding/seeding.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <string>

#include "apps/seeding/kmeanspp.hpp"
#include "apps/seeding/kmeanspp_math.hpp"
#include "core/errors.hpp"
#include "datasets/counter_rng.hpp"

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

GpuSchedule parse_gpu_schedule(const std::string& text) {
  if (text == "auto") return GpuSchedule::Auto;
  if (text == "persistent") return GpuSchedule::Persistent;
  if (text == "stepwise") return GpuSchedule::Stepwise;
  throw InputError("unknown GPU schedule '" + text + "': expected auto, persistent or stepwise");
}

}  // namespace seeding

namespace {

void check_request(const Dataset& data, const KRange& k) {
  if (k.kmin < 1 || k.kmax < k.kmin) throw InputError("invalid K range " + k.str() + " for seeding");
  if (data.n < 1 || data.m < 1) throw InputError("cannot seed centroids from an empty dataset");
  if (data.values.size() != size_t(data.m) * size_t(data.n))
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

}  // namespace

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
    const seeding::KmeansppRun run =
        weights ? seeding::kmeanspp_cpu(data, k.kmax, candidates, options.seed, weights->data())
        : device.is_gpu ? seeding::kmeanspp_gpu(data, k.kmax, candidates, options.seed, device)
                        : seeding::kmeanspp_cpu(data, k.kmax, candidates, options.seed);
    SeedingResult result;
    result.packed = pack_prefixes(k, data.n, [&](int c) { return data.row(run.chosen[size_t(c)]); });
    result.seconds = run.seconds;
    result.upload_seconds = run.upload_seconds;
    result.method = method;
    return result;
  }
  throw InputError("unknown initialisation '" + method + "': expected first, random, k-means++ or npy:PATH");
}

}  // namespace mk
