// k-means|| on the GPU: the host side (buffers, the rounds, the reclustering). The kernels are
// in kmeans_parallel_kernels.cuh; the values are the CPU path's (kmeans_parallel_math.hpp), so
// both paths draw the same candidates, give them the same weights and choose the same centres.
// Two host round trips a round (the potential, then the number drawn): five rounds, not kmax
// dependent steps.
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "apps/seeding/kmeans_parallel.hpp"
#include "apps/seeding/kmeans_parallel_kernels.cuh"
#include "apps/seeding/kmeans_parallel_math.hpp"
#include "apps/seeding/kmeanspp.hpp"
#include "core/errors.hpp"
#include "datasets/counter_rng.hpp"
#include "variants/common/gpu_lloyd_state.cuh"

namespace mk::seeding {
namespace {

using mk::gpu::check;
using mk::gpu::check_launch;
using mk::gpu::DeviceBuffer;

class Stream : public mk::gpu::OwnedStream {
 public:
  Stream() : OwnedStream("k-means||: cudaStreamCreate") {}
};

// Blocks of a grid-stride kernel over `items`.
int grid_for(int64_t items, int threads, int sm_count) {
  return int(std::max<int64_t>(1, std::min<int64_t>((items + threads - 1) / threads, int64_t(sm_count) * 16)));
}

// The candidates drawn so far: their row numbers and rows, on the device, in the order drawn.
class Candidates {
 public:
  Candidates(int n, int64_t capacity) : n_(n) { grow(capacity); }
  void reserve(int64_t count, cudaStream_t stream) {
    if (count <= capacity_) return;
    auto index = std::make_unique<DeviceBuffer<int64_t>>(size_t(std::max(count, 2 * capacity_)), "k-means|| candidates");
    auto rows = std::make_unique<DeviceBuffer<float>>(index->size() * size_t(n_), "k-means|| candidate rows");
    check(cudaMemcpyAsync(index->get(), index_->get(), size_t(size_) * sizeof(int64_t), cudaMemcpyDeviceToDevice, stream),
          "k-means||: candidates");
    check(cudaMemcpyAsync(rows->get(), rows_->get(), size_t(size_) * size_t(n_) * sizeof(float),
                          cudaMemcpyDeviceToDevice, stream),
          "k-means||: candidate rows");
    check(cudaStreamSynchronize(stream), "k-means||: candidates");
    index_.swap(index);
    rows_.swap(rows);
    capacity_ = int64_t(index_->size());
  }
  int64_t* index() const { return index_->get(); }
  float* rows() const { return rows_->get(); }
  int64_t size() const { return size_; }
  void added(int64_t count) { size_ += count; }

 private:
  void grow(int64_t capacity) {
    index_ = std::make_unique<DeviceBuffer<int64_t>>(size_t(capacity), "k-means|| candidates");
    rows_ = std::make_unique<DeviceBuffer<float>>(size_t(capacity) * size_t(n_), "k-means|| candidate rows");
    capacity_ = capacity;
  }
  int n_;
  int64_t capacity_ = 0;
  int64_t size_ = 0;
  std::unique_ptr<DeviceBuffer<int64_t>> index_;
  std::unique_ptr<DeviceBuffer<float>> rows_;
};

template <int NV>
void launch_vec4(const float* points, int64_t m, const float* rows, int first, int count, float* d2, int* nearest,
                 cudaStream_t stream) {
  constexpr int per_block = parallel_gpu::kUpdateBlock * parallel_gpu::points_per_thread(NV);
  const int blocks = int((m + per_block - 1) / per_block);
  parallel_gpu::update_nearest_vec4<NV>
      <<<blocks, parallel_gpu::kUpdateBlock, 0, stream>>>(points, m, rows, first, count, d2, nearest);
}

using Vec4Launch = void (*)(const float*, int64_t, const float*, int, int, float*, int*, cudaStream_t);

template <int... NV>
Vec4Launch vec4_launch(int nv, std::integer_sequence<int, NV...>) {
  Vec4Launch launch = nullptr;
  ((nv == NV + 1 ? (launch = &launch_vec4<NV + 1>, 0) : 0), ...);
  return launch;
}

// The update pass against candidates [first, first + count): points in registers where N is a
// multiple of 4 up to 64 and the points are 16-byte aligned, else the any-N pass.
void update_nearest(const float* points, int64_t m, int n, const Candidates& candidates, int64_t first, int64_t count,
                    float* d2, int* nearest, cudaStream_t stream) {
  if (count == 0) return;
  const float* rows = candidates.rows() + first * n;
  const bool vec4 = n % 4 == 0 && n <= 64 && reinterpret_cast<uintptr_t>(points) % 16 == 0;
  if (vec4) {
    vec4_launch(n / 4, std::make_integer_sequence<int, 16>{})(points, m, rows, int(first), int(count), d2, nearest,
                                                              stream);
  } else {
    // As many candidates a tile as 48 KiB hold (at least one).
    const int tile = int(std::max<int64_t>(1, std::min<int64_t>(parallel_gpu::kTileCandidates,
                                                                (48 * 1024 / int64_t(sizeof(float))) / n)));
    const size_t bytes = size_t(tile) * size_t(n) * sizeof(float);
    if (bytes > 48 * 1024)
      throw UnsupportedError("k-means|| on the GPU keeps a candidate row of " + std::to_string(n) +
                             " dimensions in shared memory (" + std::to_string(bytes >> 10) +
                             " KiB, 48 KiB at most): seed on the CPU or with k-means++");
    const int blocks = int((m + parallel_gpu::kUpdateBlock - 1) / parallel_gpu::kUpdateBlock);
    parallel_gpu::update_nearest_rows<<<blocks, parallel_gpu::kUpdateBlock, bytes, stream>>>(
        points, m, n, rows, int(first), int(count), tile, d2, nearest);
  }
  check_launch("k-means|| update_nearest");
}

}  // namespace

KmeansParallelRun kmeans_parallel_gpu(const Dataset& data, int kmax, uint64_t seed,
                                      const KmeansParallelOptions& options, const DeviceInfo& device) {
  check_parallel_request(data, kmax, options);
  check(cudaSetDevice(device.ordinal), "k-means||: cudaSetDevice");
  const int64_t m = data.m;
  const int n = data.n;
  if (m > int64_t(INT32_MAX))
    throw UnsupportedError("k-means|| on the GPU numbers candidates with 32-bit integers: " + std::to_string(m) +
                           " rows are too many (seed from a sample: --init-sample)");
  const double ell = options.oversampling > 0 ? options.oversampling : 2.0 * kmax;
  const CounterRng rng(seed, RandomStream::SeedingParallel);
  int sm_count = device.sm_count;
  if (sm_count <= 0) check(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device.ordinal), "SMs");

  KmeansParallelRun run;
  run.path = "gpu";
  Stream stream;
  const auto upload_start = std::chrono::steady_clock::now();
  DeviceBuffer<float> points(size_t(m) * size_t(n), "k-means|| points");
  check(cudaMemcpyAsync(points.get(), data.points(), points.bytes(), cudaMemcpyHostToDevice, stream.get()),
        "k-means||: upload");
  const int64_t sum_blocks = (m + kParallelSumBlock - 1) / kParallelSumBlock;
  DeviceBuffer<float> d2(size_t(m), "k-means|| D²");
  DeviceBuffer<int> nearest(size_t(m), "k-means|| nearest candidate");
  DeviceBuffer<int64_t> drawn(size_t(m), "k-means|| draws");
  DeviceBuffer<int64_t> prefix(size_t(m), "k-means|| draw prefix");
  DeviceBuffer<double> partial(size_t(sum_blocks), "k-means|| potential blocks");
  size_t scan_bytes = 0;
  check(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, drawn.get(), prefix.get(), m, stream.get()),
        "k-means||: scan size");
  DeviceBuffer<unsigned char> scan_space(std::max<size_t>(1, scan_bytes), "k-means|| scan");
  // About 1 + rounds·ℓ candidates, never more than the rows (a large --oversampling draws every
  // row); the buffer grows if a round draws more.
  const double expected = std::min(double(m), 1.25 * ell * double(options.rounds) + 64.0);
  Candidates candidates(n, std::max<int64_t>(kmax, int64_t(expected)));
  check(cudaStreamSynchronize(stream.get()), "k-means||: upload");
  run.upload_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - upload_start).count();

  const auto start = std::chrono::steady_clock::now();
  const int threads = 256;
  const int row_grid = grid_for(m, threads, sm_count);
  const int64_t first_centre = parallel_first_centre(rng, m);
  check(cudaMemcpyAsync(candidates.index(), &first_centre, sizeof(first_centre), cudaMemcpyHostToDevice, stream.get()),
        "k-means||: first centre");
  parallel_gpu::gather_rows<<<1, threads, 0, stream.get()>>>(points.get(), n, candidates.index(), 1, candidates.rows());
  candidates.added(1);
  parallel_gpu::fill_infinity<<<row_grid, threads, 0, stream.get()>>>(d2.get(), m);
  check(cudaMemsetAsync(nearest.get(), 0, nearest.bytes(), stream.get()), "k-means||: memset");
  update_nearest(points.get(), m, n, candidates, 0, 1, d2.get(), nearest.get(), stream.get());

  std::vector<double> block_sums(static_cast<size_t>(sum_blocks));
  for (int round = 1; round <= options.rounds + kParallelExtraRounds; ++round) {
    if (round > options.rounds && candidates.size() >= kmax) break;
    parallel_gpu::potential_blocks<<<unsigned(sum_blocks), parallel_gpu::kSumThreads, 0, stream.get()>>>(
        d2.get(), m, partial.get());
    check_launch("k-means|| potential_blocks");
    check(cudaMemcpyAsync(block_sums.data(), partial.get(), partial.bytes(), cudaMemcpyDeviceToHost, stream.get()),
          "k-means||: potential");
    check(cudaStreamSynchronize(stream.get()), "k-means||: potential");
    double potential = 0;
    for (double value : block_sums) potential += value;
    check_potential(potential);
    if (!(potential > 0)) break;  // every point is a copy of a candidate: no draw adds one
    parallel_gpu::draw_rows<<<row_grid, threads, 0, stream.get()>>>(d2.get(), m, rng, round, ell / potential,
                                                                    drawn.get());
    check_launch("k-means|| draw_rows");
    check(cub::DeviceScan::InclusiveSum(scan_space.get(), scan_bytes, drawn.get(), prefix.get(), m, stream.get()),
          "k-means||: scan");
    int64_t count = 0;
    check(cudaMemcpyAsync(&count, prefix.get() + (m - 1), sizeof(count), cudaMemcpyDeviceToHost, stream.get()),
          "k-means||: drawn");
    check(cudaStreamSynchronize(stream.get()), "k-means||: drawn");
    const int64_t first = candidates.size();
    candidates.reserve(first + count, stream.get());
    parallel_gpu::number_drawn<<<row_grid, threads, 0, stream.get()>>>(drawn.get(), prefix.get(), m, first,
                                                                       candidates.index());
    parallel_gpu::gather_rows<<<grid_for(count * n, threads, sm_count), threads, 0, stream.get()>>>(
        points.get(), n, candidates.index() + first, count, candidates.rows() + first * n);
    check_launch("k-means|| number_drawn/gather_rows");
    candidates.added(count);
    update_nearest(points.get(), m, n, candidates, first, count, d2.get(), nearest.get(), stream.get());
    run.rounds = round;
  }

  run.candidates.resize(size_t(candidates.size()));
  check(cudaMemcpyAsync(run.candidates.data(), candidates.index(), run.candidates.size() * sizeof(int64_t),
                        cudaMemcpyDeviceToHost, stream.get()),
        "k-means||: candidates");
  check(cudaStreamSynchronize(stream.get()), "k-means||: candidates");
  // Fewer candidates than kmax only where the points coincide with the candidates: the first
  // other rows fill in, as on the CPU path.
  if (candidates.size() < kmax) {
    std::vector<unsigned char> taken(size_t(m), 0);
    for (int64_t c : run.candidates) taken[size_t(c)] = 1;
    const int64_t first = candidates.size();
    for (int64_t i = 0; i < m && int64_t(run.candidates.size()) < kmax; ++i)
      if (!taken[size_t(i)]) run.candidates.push_back(i);
    const int64_t count = int64_t(run.candidates.size()) - first;
    candidates.reserve(first + count, stream.get());
    check(cudaMemcpyAsync(candidates.index() + first, run.candidates.data() + first, size_t(count) * sizeof(int64_t),
                          cudaMemcpyHostToDevice, stream.get()),
          "k-means||: filled-in candidates");
    parallel_gpu::gather_rows<<<grid_for(count * n, threads, sm_count), threads, 0, stream.get()>>>(
        points.get(), n, candidates.index() + first, count, candidates.rows() + first * n);
    candidates.added(count);
    update_nearest(points.get(), m, n, candidates, first, count, d2.get(), nearest.get(), stream.get());
  }

  const int64_t pool = candidates.size();
  DeviceBuffer<unsigned long long> counts(size_t(pool), "k-means|| candidate weights");
  check(cudaMemsetAsync(counts.get(), 0, counts.bytes(), stream.get()), "k-means||: memset");
  parallel_gpu::count_nearest<<<row_grid, threads, 0, stream.get()>>>(nearest.get(), m, counts.get());
  check_launch("k-means|| count_nearest");
  std::vector<unsigned long long> host_counts(static_cast<size_t>(pool));
  check(cudaMemcpyAsync(host_counts.data(), counts.get(), counts.bytes(), cudaMemcpyDeviceToHost, stream.get()),
        "k-means||: candidate weights");
  check(cudaStreamSynchronize(stream.get()), "k-means||: candidate weights");
  run.candidate_weights.assign(host_counts.begin(), host_counts.end());

  // Greedy k-means++ on the weighted candidates, on the device rows they already have.
  const std::vector<float> weights(run.candidate_weights.begin(), run.candidate_weights.end());
  DeviceBuffer<float> device_weights(weights.size(), "k-means|| reclustering weights");
  check(cudaMemcpy(device_weights.get(), weights.data(), device_weights.bytes(), cudaMemcpyHostToDevice),
        "k-means||: reclustering weights");
  const KmeansppRun recluster = kmeanspp_gpu_on_device(candidates.rows(), pool, n, kmax,
                                                       candidate_count(kmax, options.candidates), seed, device,
                                                       device_weights.get());
  for (int64_t index : recluster.chosen) run.chosen.push_back(run.candidates[size_t(index)]);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace mk::seeding
