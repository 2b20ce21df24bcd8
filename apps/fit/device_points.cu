// A fit on points already in GPU memory (apps/fit/device_points.hpp says what stays on the
// device and why). The kernels here are one-off passes over M x N values: the copy into the
// run's buffer (a strided or float64 source, converted), and the moments with the non-finite
// check; each is a small fraction of one Lloyd step's traffic.
#include "apps/fit/device_points.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "apps/fit/data_moments.hpp"
#include "apps/fit/device_moments.hpp"
#include "apps/seeding/kmeanspp.hpp"
#include "datasets/point_indices.hpp"
#include "core/errors.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/common/pinned_staging.hpp"

namespace mk {
namespace {

using gpu::check;
using gpu::check_launch;

constexpr int kThreads = 256;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// dst[r * n + c] = float(src[r * row_stride + c * col_stride]): a source that is not C-ordered
// float32 (Fortran order, a sliced view, float64) lands in the run's row-major buffer.
template <typename T>
__global__ void gather_rows(const T* __restrict__ src, int64_t m, int n, int64_t row_stride, int64_t col_stride,
                            float* __restrict__ dst) {
  const int64_t total = m * int64_t(n);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / n;
    const int64_t c = i - r * n;
    dst[i] = float(src[r * row_stride + c * col_stride]);
  }
}

cudaStream_t producer_stream(uintptr_t stream) {
  if (stream == 1) return cudaStreamLegacy;
  if (stream == 2) return cudaStreamPerThread;
  return reinterpret_cast<cudaStream_t>(stream);
}

// Host rows into the run's buffer through the device's pinned ring
// (variants/common/pinned_staging.hpp): 24 ms for 10M x 32 floats on an H200 host, against 46–57 ms
// for page-locking them in place in 64 MiB pieces (the way up to 8f3971d) and 146–191 ms from
// pageable memory (reports/results/nvidia-h200/ab/host-transfer.txt).
// The data's moments are taken as the rows land (apps/fit/device_moments.hpp), a group of pieces
// at a time: each group's passes cost a few launches on the thread that copies the next pieces.
constexpr size_t kMomentsGroupBytes = size_t(128) << 20;

int64_t moments_groups(const DevicePoints& points) {  // a group closes at 128 MiB or at the end
  return int64_t(size_t(points.m) * size_t(points.n) * sizeof(float) / kMomentsGroupBytes) + 2;
}

void upload_host_rows(const DevicePoints& points, float* destination, cudaStream_t stream, LandingMoments& moments) {
  if (points.float64 || points.col_stride != 1 || points.row_stride != points.n)
    throw InputError("host rows must be C-ordered float32 (the module converts other arrays first)");
  const size_t row_bytes = size_t(points.n) * sizeof(float);
  const size_t bytes = size_t(points.m) * row_bytes;
  int64_t group_first = 0, landed_rows = 0;
  gpu::pinned_staging_for_current_device().upload_rows(
      destination, points.data, bytes, row_bytes, stream, [&](size_t offset, size_t length) {
        landed_rows = int64_t((offset + length) / row_bytes);
        if (size_t(landed_rows - group_first) * row_bytes >= kMomentsGroupBytes || landed_rows == points.m) {
          moments.add(group_first, landed_rows - group_first);
          group_first = landed_rows;
        }
      });
  check(cudaStreamSynchronize(stream), "uploading the host rows into the run");
}

// The points into the run's buffer (row-major, stride n), after the producer's pending work.
void copy_into_run(const DevicePoints& points, float* destination, cudaStream_t stream) {
  if (points.stream) check(cudaStreamSynchronize(producer_stream(points.stream)), "waiting for the array's stream");
  const int64_t total = points.m * int64_t(points.n);
  const int blocks = int(std::min<int64_t>((total + kThreads - 1) / kThreads, 65535));
  if (!points.float64 && points.col_stride == 1 && points.row_stride >= points.n) {
    check(cudaMemcpy2DAsync(destination, size_t(points.n) * sizeof(float), points.data,
                            size_t(points.row_stride) * sizeof(float), size_t(points.n) * sizeof(float),
                            size_t(points.m), cudaMemcpyDeviceToDevice, stream),
          "copying the device array into the run");
  } else if (points.float64) {
    gather_rows<<<blocks, kThreads, 0, stream>>>(static_cast<const double*>(points.data), points.m, points.n,
                                                 points.row_stride, points.col_stride, destination);
    check_launch("gather_rows<double>");
  } else {
    gather_rows<<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(points.data), points.m, points.n,
                                                 points.row_stride, points.col_stride, destination);
    check_launch("gather_rows<float>");
  }
  check(cudaStreamSynchronize(stream), "copying the device array into the run");
}

// The seeds of every K of the range (packed per KRange::slot_offset) from chosen point indices:
// each K takes the first K of them, as seed_centroids packs them. Only these rows leave the device.
std::vector<float> gather_seeds(const float* x, int n, const KRange& k, const std::vector<int64_t>& chosen) {
  std::vector<float> rows(size_t(k.kmax) * size_t(n));
  for (int c = 0; c < k.kmax; ++c)
    check(cudaMemcpy(rows.data() + size_t(c) * n, x + size_t(chosen[size_t(c)]) * n, size_t(n) * sizeof(float),
                     cudaMemcpyDeviceToHost),
          "copying a seed row");
  std::vector<float> packed(size_t(k.sum()) * size_t(n));
  for (int kk = k.kmin; kk <= k.kmax; ++kk)
    std::copy(rows.begin(), rows.begin() + size_t(kk) * n, packed.begin() + size_t(k.slot_offset(kk)) * n);
  return packed;
}

}  // namespace

int device_of_pointer(const void* pointer) {
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, pointer);
  if (status != cudaSuccess) {
    cudaGetLastError();  // not a pointer CUDA knows: clear the error, it is the caller's
    throw InputError(std::string("the array's pointer is not CUDA memory (") + cudaGetErrorString(status) + ")");
  }
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged)
    throw InputError("the array's pointer is host memory, not device memory");
  return attributes.device;
}

PointCopyCounters& point_copy_counters() {
  static PointCopyCounters counters;
  return counters;
}

std::vector<DeviceFit> fit_device_points(const DevicePoints& points, PreparedRun& run, const FitSettings& settings,
                                         const DeviceInfo& device) {
  const KRange& k = settings.k;
  if (!device.is_gpu) throw UnsupportedError("device arrays need a GPU variant; this fit runs on " + device.name);
  if (points.m < 1 || points.n < 1 || !points.data)
    throw InputError("expected at least one point of at least one dimension, got " + std::to_string(points.m) +
                     " x " + std::to_string(points.n));
  const int holder = points.on_host ? device.ordinal : device_of_pointer(points.data);
  if (holder != device.ordinal)
    throw InputError("the array is on CUDA device " + std::to_string(holder) + ", the fit on device " +
                     std::to_string(device.ordinal) + ": pass device=" + std::to_string(holder));
  check(cudaSetDevice(device.ordinal), "cudaSetDevice");
  const PointsSlot slot = run.points_slot();  // UnsupportedError for a run that cannot take new points
  if (!slot.on_device || slot.capacity < points.m || slot.n != points.n)
    throw UnsupportedError("the run's points buffer holds " + std::to_string(slot.capacity) + " x " +
                           std::to_string(slot.n) + (slot.on_device ? "" : " in host memory") + ", not " +
                           std::to_string(points.m) + " x " + std::to_string(points.n) + " on the device");

  const auto copy_start = std::chrono::steady_clock::now();
  std::optional<LandingMoments> landing;  // host rows: their moments taken as they land
  const auto stream = static_cast<cudaStream_t>(slot.stream);
  if (points.on_host) {
    landing.emplace(slot.points, points.m, points.n, moments_groups(points), stream);
    upload_host_rows(points, slot.points, stream, *landing);
  } else {
    copy_into_run(points, slot.points, stream);
  }
  run.set_point_count(points.m);
  (points.on_host ? point_copy_counters().host_to_device : point_copy_counters().device_to_device) +=
      points.m * int64_t(points.n) * int64_t(points.float64 ? 8 : 4);
  const double copy_seconds = seconds_since(copy_start);

  const auto moments_start = std::chrono::steady_clock::now();
  const DataMoments moments = landing ? landing->finish() : device_moments(slot.points, points.m, points.n);
  const double moments_seconds = seconds_since(moments_start);
  const double threshold = shift_threshold(moments, settings.tol);

  std::vector<DeviceFit> best;
  const int restarts = settings.initial_centroids.empty() ? settings.n_init : 1;
  for (int restart = 0; restart < restarts; ++restart) {
    const uint64_t seed = restart_seed(settings.seed, restart);
    const auto seeding_start = std::chrono::steady_clock::now();
    std::vector<float> seeds = settings.initial_centroids;
    if (seeds.empty()) {
      std::vector<int64_t> chosen;
      if (settings.init == "k-means++") {
        const int candidates = seeding::candidate_count(k.kmax, 0);
        chosen = seeding::kmeanspp_gpu_on_device(slot.points, points.m, points.n, k.kmax, candidates, seed, device)
                     .chosen;
      } else if (settings.init == "first" || settings.init == "random") {
        chosen = initial_point_indices(points.m, k.kmax, parse_init(settings.init), seed);
      } else {
        throw InputError("init " + settings.init + " is not available for device arrays: first, random, k-means++ "
                         "or an array");
      }
      seeds = gather_seeds(slot.points, points.n, k, chosen);
    }
    if (seeds.size() != size_t(k.sum()) * size_t(points.n))
      throw InputError("init gave " + std::to_string(seeds.size()) + " centroid values, expected " +
                       std::to_string(size_t(k.sum()) * size_t(points.n)));
    const double seeding_seconds = seconds_since(seeding_start);

    LoopSettings loop;
    loop.max_iter = settings.max_iter;
    loop.shift_threshold = threshold;
    loop.rounding_floor = summation_order_floor(moments);
    loop.empty = settings.empty;
    loop.seed = seed;
    LoopOutcome outcome = run_to_convergence(run, k, points.n, seeds, loop);
    for (size_t index = 0; index < outcome.per_k.size(); ++index) {
      if (restart > 0 && !(outcome.per_k[index].inertia < best[index].fit.inertia)) continue;
      if (restart == 0) best.emplace_back();
      DeviceFit& kept = best[index];
      kept.fit = std::move(outcome.per_k[index]);  // scikit-learn's n_init: the lowest inertia wins
      kept.tol_threshold = threshold;
      kept.copy_seconds = copy_seconds;
      kept.restart = restart;
      kept.moments = moments;
      kept.seconds.metrics = moments_seconds;  // the winning seeding's times
      kept.seconds.seeding = seeding_seconds;
      kept.seconds.prepare = outcome.prepare_seconds;
      kept.seconds.iterations = outcome.iteration_seconds;
      kept.seconds.labels = outcome.labels_seconds;
    }
  }
  return best;
}

}  // namespace mk
