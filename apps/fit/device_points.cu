// A fit on points already in GPU memory (apps/fit/device_points.hpp says what stays on the
// device and why). The kernels here are one-off passes over M x N values: the copy into the
// run's buffer (a strided or float64 source, converted), and the moments with the non-finite
// check; each is a small fraction of one Lloyd step's traffic.
#include "apps/fit/device_points.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "apps/fit/data_moments.hpp"
#include "apps/seeding/kmeanspp.hpp"
#include "datasets/point_indices.hpp"
#include "core/errors.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/common/pinned_staging.hpp"

namespace mk {
namespace {

using gpu::check;
using gpu::check_launch;
using gpu::DeviceBuffer;

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

// The moments kernels' tiling: a block takes `rows` consecutive rows of the row-major points, its
// threads spread over (row, feature) so a warp reads consecutive addresses: for N <= kThreads,
// kThreads / N rows a pass (N = 32: 8 rows, every thread busy); for a wider N, grid.y tiles the
// features, one row a pass. One thread a feature, walking its rows alone, took 2.5 ms for both
// passes over 10M x 32 on an H200 (python-bench.json at b36ae50, "moments").
struct MomentsTile {
  int f;             // this thread's feature, or -1 when idle
  int row_lane;      // its first row within the pass
  int rows_a_pass;   // rows the block advances by
};

__device__ MomentsTile moments_tile(int n) {
  if (n <= kThreads) {
    const int rows_a_pass = kThreads / n;
    const int t = threadIdx.x;
    if (t >= rows_a_pass * n) return {-1, 0, rows_a_pass};
    return {t % n, t / n, rows_a_pass};
  }
  const int f = blockIdx.y * kThreads + threadIdx.x;
  return {f < n ? f : -1, 0, 1};
}

// The block's per-thread partials of feature f (slot threadIdx.x) summed per feature, then one
// atomic a feature a block.
__device__ void add_block_partials(double* partial, const MomentsTile& tile, int n, double value, double* total) {
  partial[threadIdx.x] = value;
  __syncthreads();
  if (tile.f >= 0 && tile.row_lane == 0) {
    double sum = 0;
    for (int lane = 0; lane < tile.rows_a_pass; ++lane) sum += partial[threadIdx.x + lane * n];
    atomicAdd(total + tile.f, sum);
  }
}

// Per feature: the FP64 sum, the largest |x|, and the first non-finite value's flat index.
// Non-negative floats order as their bit patterns.
__global__ void __launch_bounds__(kThreads) column_sums(const float* __restrict__ x, int64_t m, int n, int64_t rows,
                                                       double* sum, unsigned* max_abs_bits,
                                                       unsigned long long* first_bad) {
  __shared__ double partial[kThreads];
  const MomentsTile tile = moments_tile(n);
  const int64_t begin = int64_t(blockIdx.x) * rows;
  const int64_t end = begin + rows < m ? begin + rows : m;
  double s = 0;
  float largest = 0;
  if (tile.f >= 0)
    for (int64_t r = begin + tile.row_lane; r < end; r += tile.rows_a_pass) {
      const float v = x[r * n + tile.f];
      if (!isfinite(v)) {
        atomicMin(first_bad, (unsigned long long)(r * n + tile.f));
        break;
      }
      s += v;
      largest = fmaxf(largest, fabsf(v));
    }
  if (tile.f >= 0) atomicMax(max_abs_bits, __float_as_uint(largest));
  add_block_partials(partial, tile, n, s, sum);
}

// Per feature: Σ (x - mean)², the second of data_moments' two passes (a large offset does not
// cancel the variance).
__global__ void __launch_bounds__(kThreads) column_squares(const float* __restrict__ x, int64_t m, int n, int64_t rows,
                                                          const double* __restrict__ mean, double* squares) {
  __shared__ double partial[kThreads];
  const MomentsTile tile = moments_tile(n);
  const int64_t begin = int64_t(blockIdx.x) * rows;
  const int64_t end = begin + rows < m ? begin + rows : m;
  double s = 0;
  if (tile.f >= 0) {
    const double mu = mean[tile.f];
    for (int64_t r = begin + tile.row_lane; r < end; r += tile.rows_a_pass) {
      const double d = double(x[r * n + tile.f]) - mu;
      s += d * d;
    }
  }
  add_block_partials(partial, tile, n, s, squares);
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
void upload_host_rows(const DevicePoints& points, float* destination, cudaStream_t stream) {
  if (points.float64 || points.col_stride != 1 || points.row_stride != points.n)
    throw InputError("host rows must be C-ordered float32 (the module converts other arrays first)");
  const size_t bytes = size_t(points.m) * size_t(points.n) * sizeof(float);
  gpu::pinned_staging_for_current_device().upload(destination, points.data, bytes, stream);
  check(cudaStreamSynchronize(stream), "uploading the host rows into the run");
}

// The points into the run's buffer (row-major, stride n), after the producer's pending work.
void copy_into_run(const DevicePoints& points, float* destination, cudaStream_t stream) {
  if (points.on_host) return upload_host_rows(points, destination, stream);
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

// data_moments and check_finite on the device; the message is check_finite's.
DataMoments device_moments(const float* x, int64_t m, int n) {
  const int64_t rows = std::max<int64_t>(256, (m + 4095) / 4096);  // at most 4096 row blocks
  const dim3 grid(unsigned((m + rows - 1) / rows), n <= kThreads ? 1u : unsigned((n + kThreads - 1) / kThreads));
  DeviceBuffer<double> sums(size_t(n) * 2, "moments");
  DeviceBuffer<unsigned> largest(1, "moments: largest |x|");
  DeviceBuffer<unsigned long long> bad(1, "moments: first non-finite");
  check(cudaMemset(sums.get(), 0, sums.bytes()), "moments");
  check(cudaMemset(largest.get(), 0, largest.bytes()), "moments");
  check(cudaMemset(bad.get(), 0xff, bad.bytes()), "moments");
  column_sums<<<grid, kThreads>>>(x, m, n, rows, sums.get(), largest.get(), bad.get());
  check_launch("column_sums");
  unsigned long long first_bad = ULLONG_MAX;
  check(cudaMemcpy(&first_bad, bad.get(), sizeof(first_bad), cudaMemcpyDeviceToHost), "moments");
  if (first_bad != ULLONG_MAX) {
    float value = 0;
    check(cudaMemcpy(&value, x + first_bad, sizeof(float), cudaMemcpyDeviceToHost), "moments");
    const char* what = std::isnan(value) ? "NaN" : (value > 0 ? "Inf" : "-Inf");
    throw InputError(std::string("dataset contains ") + what + " at row " + std::to_string(first_bad / n) +
                     ", column " + std::to_string(first_bad % n));
  }
  DataMoments moments;
  moments.mean.resize(size_t(n));
  check(cudaMemcpy(moments.mean.data(), sums.get(), size_t(n) * sizeof(double), cudaMemcpyDeviceToHost), "moments");
  for (double& mean : moments.mean) mean /= double(m);
  check(cudaMemcpy(sums.get(), moments.mean.data(), size_t(n) * sizeof(double), cudaMemcpyHostToDevice), "moments");
  column_squares<<<grid, kThreads>>>(x, m, n, rows, sums.get(), sums.get() + n);
  check_launch("column_squares");
  moments.variance.resize(size_t(n));
  check(cudaMemcpy(moments.variance.data(), sums.get() + n, size_t(n) * sizeof(double), cudaMemcpyDeviceToHost),
        "moments");
  for (double& variance : moments.variance) variance /= double(m);
  unsigned bits = 0;
  check(cudaMemcpy(&bits, largest.get(), sizeof(bits), cudaMemcpyDeviceToHost), "moments");
  float largest_abs = 0;
  std::memcpy(&largest_abs, &bits, sizeof(largest_abs));
  moments.max_abs = largest_abs;
  return moments;
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
  copy_into_run(points, slot.points, static_cast<cudaStream_t>(slot.stream));
  run.set_point_count(points.m);
  (points.on_host ? point_copy_counters().host_to_device : point_copy_counters().device_to_device) +=
      points.m * int64_t(points.n) * int64_t(points.float64 ? 8 : 4);
  const double copy_seconds = seconds_since(copy_start);

  const auto moments_start = std::chrono::steady_clock::now();
  const DataMoments moments = device_moments(slot.points, points.m, points.n);
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
