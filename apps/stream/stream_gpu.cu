// The streaming k-means on the GPU: the host side (the chunks' way to the device, batches on two
// streams, the reduce phase's Lloyd loop). The kernels are in stream_kernels.cuh.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "apps/stream/sharp_math.hpp"
#include "apps/stream/stream.hpp"
#include "apps/stream/stream_kernels.cuh"
#include "core/errors.hpp"
#include "variants/chunked/rows_to_device.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/common/pinned_staging.hpp"

namespace mk::stream {
namespace {

using mk::gpu::check;
using mk::gpu::check_launch;
using mk::gpu::DeviceBuffer;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A device batch holds at most this much of the data (two batches are in flight).
constexpr size_t kBatchBytes = size_t(512) << 20;
constexpr int kFinalBlocks = 1024;  // final_pass blocks a batch (block sums added in order)

// The file's stream: variants/common's owner, with this file's name in its errors.
class Stream : public mk::gpu::OwnedStream {
 public:
  Stream() : OwnedStream("stream: cudaStreamCreate") {}
};

void check_failed(const DeviceBuffer<int>& failed, const char* phase) {
  int status = 0;
  check(cudaMemcpy(&status, failed.get(), sizeof(int), cudaMemcpyDeviceToHost), phase);
  if (status == 2) throw InputError("--stream: a weighted squared distance overflows float32 (scale the data)");
  if (status != 0) throw std::logic_error(std::string("streaming k-means on the GPU: a draw was not found (") + phase + ")");
}

}  // namespace

StreamResult stream_fit_gpu(const Dataset& data, const StreamSettings& settings, const DeviceInfo& device) {
  check_stream_request(data, settings);
  check(cudaSetDevice(device.ordinal), "stream: cudaSetDevice");
  StreamResult result;
  result.path = "gpu";
  const int n = data.n;
  const int k = settings.k;
  result.per_round = draws_per_round(k);
  if (result.per_round > gpu::kMaxPerRound)
    throw UnsupportedError("--stream on the GPU draws at most " + std::to_string(gpu::kMaxPerRound) +
                           " points a round; K=" + std::to_string(k) + " needs " + std::to_string(result.per_round));
  result.chunk_points = chunk_size(settings, data.m);
  result.chunks = (data.m + result.chunk_points - 1) / result.chunk_points;
  const int64_t slots = int64_t(k) * result.per_round;
  result.intermediate = result.chunks * slots;
  const size_t chunk_bytes = size_t(result.chunk_points) * size_t(n) * sizeof(float);
  const int64_t batch_chunks =
      std::max<int64_t>(1, std::min<int64_t>(result.chunks, int64_t(kBatchBytes / std::max<size_t>(1, chunk_bytes))));
  const int64_t batch_rows = batch_chunks * result.chunk_points;

  auto start = std::chrono::steady_clock::now();
  Stream streams[2];
  // The batches reach the device through the current device's pinned ring, or are generated
  // there (variants/chunked/rows_to_device.hpp).
  const ChunkSource source = chunk_source_of(data);
  mk::gpu::PinnedStaging* ring =
      chunked::rows_need_staging(source) ? &mk::gpu::pinned_staging_for_current_device() : nullptr;
  DeviceBuffer<float> points[2];
  DeviceBuffer<float> d2[2];
  DeviceBuffer<int32_t> label[2];
  DeviceBuffer<int64_t> chosen[2];
  for (int b = 0; b < 2; ++b) {
    points[b].allocate(size_t(batch_rows) * size_t(n), "stream: batch points");
    d2[b].allocate(size_t(batch_rows), "stream: batch D²");
    label[b].allocate(size_t(batch_rows), "stream: batch labels");
    chosen[b].allocate(size_t(batch_chunks) * size_t(slots), "stream: batch draws");
  }
  DeviceBuffer<unsigned> counts(size_t(result.intermediate), "stream: intermediate counts");
  DeviceBuffer<float> inter_points(size_t(result.intermediate) * size_t(n), "stream: intermediate centres");
  DeviceBuffer<float> inter_weights(size_t(result.intermediate), "stream: intermediate weights");
  DeviceBuffer<int> failed(1, "stream: status");
  check(cudaMemset(counts.get(), 0, counts.bytes()), "stream: memset");
  check(cudaMemset(inter_points.get(), 0, inter_points.bytes()), "stream: memset");
  check(cudaMemset(inter_weights.get(), 0, inter_weights.bytes()), "stream: memset");
  check(cudaMemset(failed.get(), 0, sizeof(int)), "stream: memset");
  result.seconds.setup = seconds_since(start);

  // chunks: batch i on stream i % 2; a stream's copy waits for its previous kernel by order.
  start = std::chrono::steady_clock::now();
  const uint64_t seed_key = seeding::make_draws(settings.seed).key;
  int64_t batch_index = 0;
  for (int64_t first_chunk = 0; first_chunk < result.chunks; first_chunk += batch_chunks, ++batch_index) {
    const int b = int(batch_index & 1);
    const int64_t row_begin = first_chunk * result.chunk_points;
    const int64_t rows = std::min(batch_rows, data.m - row_begin);
    chunked::rows_to_device(source, row_begin, rows, points[b].get(), streams[b].get(), ring);
    gpu::ChunkBatch batch{points[b].get(), rows, result.chunk_points, n, first_chunk, k, result.per_round, seed_key,
                          d2[b].get(), label[b].get(), chosen[b].get(), counts.get(), inter_points.get(),
                          inter_weights.get(), failed.get()};
    const int blocks = int((rows + result.chunk_points - 1) / result.chunk_points);
    gpu::reduce_chunks<<<blocks, gpu::kThreads, 0, streams[b].get()>>>(batch);
    check_launch("stream: reduce_chunks");
  }
  for (auto& stream : streams) check(cudaStreamSynchronize(stream.get()), "stream: chunks");
  result.seconds.chunks = seconds_since(start);
  check_failed(failed, "chunks");

  // reduce: weighted greedy k-means++ (one block) and weighted Lloyd on the intermediate
  // centres, --n-init times; the lowest weighted inertia there wins.
  start = std::chrono::steady_clock::now();
  cudaStream_t stream = streams[0].get();
  const int64_t count = result.intermediate;
  DeviceBuffer<float> inter_d2(size_t(count), "stream: intermediate D²");
  DeviceBuffer<int32_t> inter_label(size_t(count), "stream: intermediate labels");
  DeviceBuffer<int64_t> seeds(size_t(k), "stream: final seeds");
  // The intermediate set comes back for the host's tolerance and for fit.json's checks; it is
  // chunks x S x N floats (26 MiB at seed 001's case).
  result.intermediate_points.resize(size_t(count) * n);
  result.intermediate_weights.resize(size_t(count));
  check(cudaMemcpyAsync(result.intermediate_points.data(), inter_points.get(), inter_points.bytes(),
                        cudaMemcpyDeviceToHost, stream), "stream: intermediate centres");
  check(cudaMemcpyAsync(result.intermediate_weights.data(), inter_weights.get(), inter_weights.bytes(),
                        cudaMemcpyDeviceToHost, stream), "stream: intermediate weights");
  check(cudaStreamSynchronize(stream), "stream: intermediate set");
  for (float w : result.intermediate_weights) result.intermediate_weight_check += w;
  result.tol_threshold =
      weighted_tolerance(result.intermediate_points.data(), result.intermediate_weights.data(), count, n, settings.tol);
  DeviceBuffer<float> centres(size_t(k) * size_t(n), "stream: centres");
  const int columns = n + 2;
  DeviceBuffer<double> sums_device(size_t(k) * size_t(columns), "stream: cluster sums");
  std::vector<double> sums(static_cast<size_t>(k) * size_t(columns));
  const int assign_blocks =
      int(std::min<int64_t>((count + 255) / 256, int64_t(device.sm_count > 0 ? device.sm_count : 132) * 8));
  const dim3 sum_grid(unsigned(k), unsigned((columns + gpu::kSumColumns - 1) / gpu::kSumColumns));
  // One weighted Lloyd pass: sums of the points nearest to each centre (host `centres_host`).
  auto lloyd_pass = [&](const std::vector<float>& centres_host) {
    check(cudaMemcpyAsync(centres.get(), centres_host.data(), centres.bytes(), cudaMemcpyHostToDevice, stream),
          "stream: centres");
    gpu::assign_nearest<<<assign_blocks, 256, 0, stream>>>(inter_points.get(), count, n, centres.get(), k,
                                                         inter_label.get(), inter_d2.get());
    gpu::cluster_sums<<<sum_grid, gpu::kSumThreads, 0, stream>>>(inter_points.get(), inter_weights.get(), count, n,
                                                                inter_label.get(), inter_d2.get(), sums_device.get());
    check_launch("stream: Lloyd");
    check(cudaMemcpyAsync(sums.data(), sums_device.get(), sums_device.bytes(), cudaMemcpyDeviceToHost, stream),
          "stream: sums");
    check(cudaStreamSynchronize(stream), "stream: Lloyd step");
  };
  for (int restart = 0; restart < settings.restarts; ++restart) {
    gpu::Sampling sampling{inter_points.get(), count, n, inter_weights.get(), k, 1, greedy_candidates(k),
                           stage_draws(settings.seed, reduce_stage(restart)), inter_d2.get(), inter_label.get(),
                           seeds.get(), failed.get()};
    gpu::seed_final<<<1, gpu::kThreads, 0, stream>>>(sampling);
    check_launch("stream: seed_final");
    std::vector<int64_t> chosen_seeds(static_cast<size_t>(k));
    check(cudaMemcpyAsync(chosen_seeds.data(), seeds.get(), seeds.bytes(), cudaMemcpyDeviceToHost, stream), "seeds");
    check(cudaStreamSynchronize(stream), "stream: seed_final");
    check_failed(failed, "reduce");
    std::vector<float> centres_host(size_t(k) * n);
    for (int c = 0; c < k; ++c)
      std::memcpy(centres_host.data() + size_t(c) * n,
                  result.intermediate_points.data() + size_t(chosen_seeds[size_t(c)]) * n, size_t(n) * sizeof(float));
    int iterations = 0;
    bool converged = false;
    while (iterations < settings.max_iter && !converged) {
      lloyd_pass(centres_host);
      ++iterations;
      converged = weighted_centres_from_sums(sums, k, n, centres_host) <= result.tol_threshold;
    }
    lloyd_pass(centres_host);
    const double inertia = weighted_inertia(sums, k, n);
    if (restart == 0 || inertia < result.reduce_inertia) {
      result.reduce_inertia = inertia;
      result.restart = restart;
      result.centroids = std::move(centres_host);
      result.lloyd_iterations = iterations;
      result.converged = converged;
    }
  }
  result.seconds.reduce = seconds_since(start);

  // final: the data streams through once more for the labels and the inertia.
  start = std::chrono::steady_clock::now();
  check(cudaMemcpy(centres.get(), result.centroids.data(), centres.bytes(), cudaMemcpyHostToDevice), "stream: centres");
  if (settings.keep_labels) result.labels.assign(size_t(data.m), 0);
  DeviceBuffer<double> block_sums[2];
  std::vector<std::vector<double>> host_sums;
  for (int b = 0; b < 2; ++b) block_sums[b].allocate(kFinalBlocks, "stream: inertia block sums");
  batch_index = 0;
  for (int64_t row_begin = 0; row_begin < data.m; row_begin += batch_rows, ++batch_index) {
    const int b = int(batch_index & 1);
    const int64_t rows = std::min(batch_rows, data.m - row_begin);
    chunked::rows_to_device(source, row_begin, rows, points[b].get(), streams[b].get(), ring);
    gpu::final_pass<<<kFinalBlocks, gpu::kSumThreads, 0, streams[b].get()>>>(
        points[b].get(), rows, n, centres.get(), k, settings.keep_labels ? label[b].get() : nullptr,
        block_sums[b].get());
    check_launch("stream: final_pass");
    host_sums.emplace_back(kFinalBlocks);
    check(cudaMemcpyAsync(host_sums.back().data(), block_sums[b].get(), block_sums[b].bytes(), cudaMemcpyDeviceToHost,
                          streams[b].get()),
          "stream: inertia");
    if (settings.keep_labels)
      check(cudaMemcpyAsync(result.labels.data() + row_begin, label[b].get(), size_t(rows) * sizeof(int32_t),
                            cudaMemcpyDeviceToHost, streams[b].get()),
            "stream: labels");
    // A stream's buffers (points, labels, block sums) are reused two batches later, after its
    // copies by stream order.
  }
  for (auto& s : streams) check(cudaStreamSynchronize(s.get()), "stream: final pass");
  for (const auto& batch : host_sums)
    for (double part : batch) result.inertia += part;
  result.seconds.final_pass = seconds_since(start);
  return result;
}

}  // namespace mk::stream
