// GPU paths of the K-choice passes (metric_passes.hpp). They run once per fit, after the
// iterations, on a copy of the points made here (the variant's own copy is private to its
// run). Distances are FP32 (as the variants'), their sums FP64.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "apps/fit/metric_passes.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "harness/memory_plan.hpp"
#include "variants/common/gpu_lloyd_state.cuh"

namespace mk {

namespace {

using gpu::check;
using gpu::check_launch;
using gpu::DeviceBuffer;

constexpr unsigned kFullMask = 0xffffffffu;
// Cluster slots summed in shared memory (48 KiB, no opt-in needed); beyond, global atomics.
constexpr int kSharedSlots = 6144;

__device__ double warp_sum(double value) {
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(kFullMask, value, offset);
  return value;
}

// Adds every lane's value to sums[its slot] with one atomic per distinct slot of the warp:
// lanes of a warp mostly share a few clusters, and a double atomic per lane on the same
// shared address would serialise. slot < 0: nothing to add. Every lane must call it.
__device__ void add_by_slot(double* sums, int slot, double value) {
  const int lane = threadIdx.x & 31;
  unsigned pending = __ballot_sync(kFullMask, slot >= 0);
  while (pending) {
    const int leader = __ffs(pending) - 1;
    const int key = __shfl_sync(kFullMask, slot, leader);
    const unsigned same = __ballot_sync(kFullMask, slot == key);
    const double part = warp_sum(slot == key ? value : 0.0);
    if (lane == leader) atomicAdd(&sums[key], part);
    pending &= ~same;
  }
}

// Davies-Bouldin's pass: Σ ‖x − mean[slot]‖ per slot for every K. Lanes-per-point G = 1 for
// small N (a thread per point), 32 for wide points (a warp per point, lanes over dimensions).
template <int G>
__global__ void cluster_distance_kernel(const float* __restrict__ points, int64_t m, int n,
                                        const int32_t* __restrict__ labels, int kmin, int kmax,
                                        const float* __restrict__ means, double* __restrict__ out, bool in_shared) {
  extern __shared__ double shared_sums[];
  const int slots = (kmin + kmax) * (kmax - kmin + 1) / 2;
  double* sums = in_shared ? shared_sums : out;
  if (in_shared) {
    for (int s = threadIdx.x; s < slots; s += blockDim.x) shared_sums[s] = 0.0;
    __syncthreads();
  }
  const int groups_per_block = blockDim.x / G;
  const int lane = threadIdx.x % G;
  const int64_t first = int64_t(blockIdx.x) * groups_per_block + threadIdx.x / G;
  const int64_t stride = int64_t(gridDim.x) * groups_per_block;
  // Every warp runs the same number of rounds, so add_by_slot's shuffles see all 32 lanes.
  const int64_t rounds = (m + stride - 1) / stride;
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t i = first + round * stride;
    const bool valid = i < m;
    for (int k = kmin; k <= kmax; ++k) {
      const int offset = (kmin + k - 1) * (k - kmin) / 2;
      const int label = valid ? labels[int64_t(k - kmin) * m + i] : 0;
      const int slot = offset + label;
      float d2 = 0.f;
      if (valid)
        for (int d = lane; d < n; d += G) {
          const float diff = points[i * n + d] - means[int64_t(slot) * n + d];
          d2 = fmaf(diff, diff, d2);
        }
      if (G == 1) {
        add_by_slot(sums, valid ? slot : -1, sqrt(double(d2)));
      } else {
        for (int o = G / 2; o > 0; o >>= 1) d2 += __shfl_xor_sync(kFullMask, d2, o);
        if (lane == 0 && valid) atomicAdd(&sums[slot], sqrt(double(d2)));
      }
    }
  }
  if (in_shared) {
    __syncthreads();
    for (int s = threadIdx.x; s < slots; s += blockDim.x)
      if (shared_sums[s] != 0.0) atomicAdd(&out[s], shared_sums[s]);
  }
}

// Distances between sample rows [row0, row0 + rows) and every sample point, into
// out[(i − row0) * s + j]: 64 x 64 tiles, 4 x 4 per thread, dimensions staged 16 at a time.
constexpr int kTile = 64;
constexpr int kDepth = 16;
__global__ void __launch_bounds__(256) pairwise_distance_kernel(const float* __restrict__ x, int64_t s, int n,
                                                                int64_t row0, int64_t rows,
                                                                float* __restrict__ out) {
  __shared__ float a[kDepth][kTile + 1];
  __shared__ float b[kDepth][kTile + 1];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t i0 = row0 + int64_t(blockIdx.y) * kTile;
  const int64_t j0 = int64_t(blockIdx.x) * kTile;
  const int64_t row_end = row0 + rows;
  float acc[4][4] = {};
  for (int d0 = 0; d0 < n; d0 += kDepth) {
    for (int t = threadIdx.x; t < kTile * kDepth; t += blockDim.x) {
      const int r = t / kDepth, d = t % kDepth;
      const int64_t i = i0 + r, j = j0 + r;
      a[d][r] = i < row_end && d0 + d < n ? x[i * n + d0 + d] : 0.f;
      b[d][r] = j < s && d0 + d < n ? x[j * n + d0 + d] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      float av[4], bv[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        av[q] = a[d][ty + 16 * q];
        bv[q] = b[d][tx + 16 * q];
      }
#pragma unroll
      for (int p = 0; p < 4; ++p)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const float diff = av[p] - bv[q];
          acc[p][q] = fmaf(diff, diff, acc[p][q]);
        }
    }
    __syncthreads();
  }
#pragma unroll
  for (int p = 0; p < 4; ++p)
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int64_t i = i0 + ty + 16 * p, j = j0 + tx + 16 * q;
      if (i < row_end && j < s) out[(i - row0) * s + j] = sqrtf(acc[p][q]);
    }
}

__device__ double block_min(double value, double* scratch) {
  for (int offset = 16; offset > 0; offset >>= 1) value = fmin(value, __shfl_xor_sync(kFullMask, value, offset));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < int(blockDim.x / 32) ? scratch[lane] : INFINITY;
    for (int offset = 16; offset > 0; offset >>= 1) value = fmin(value, __shfl_xor_sync(kFullMask, value, offset));
  }
  return value;  // valid in thread 0
}

// One block per sample row of a distance chunk, one K: the row's distance sums per cluster
// (the sample sorted by label, so each thread's contiguous share of it meets few clusters
// and adds once per cluster met), then a, b and the row's silhouette, added to *total.
__global__ void silhouette_rows_kernel(const float* __restrict__ distances, int64_t s, int64_t row0, int64_t rows,
                                       int k, const int32_t* __restrict__ order,
                                       const int32_t* __restrict__ sorted_labels,
                                       const int32_t* __restrict__ labels, const int64_t* __restrict__ sizes,
                                       double* __restrict__ total) {
  extern __shared__ double sums[];  // k
  __shared__ double scratch[32];
  const int64_t local = blockIdx.x;
  if (local >= rows) return;
  for (int c = threadIdx.x; c < k; c += blockDim.x) sums[c] = 0.0;
  __syncthreads();
  const float* row = distances + local * s;
  const int64_t share = (s + blockDim.x - 1) / blockDim.x;
  const int64_t begin = int64_t(threadIdx.x) * share, end = min(s, begin + share);
  int current = -1;
  double running = 0;
  for (int64_t p = begin; p < end; ++p) {
    const int label = sorted_labels[p];
    if (label != current) {
      if (current >= 0) atomicAdd(&sums[current], running);
      current = label;
      running = 0;
    }
    running += double(row[order[p]]);
  }
  if (current >= 0) atomicAdd(&sums[current], running);
  __syncthreads();
  const int own = labels[row0 + local];
  double nearest_other = INFINITY;
  for (int c = threadIdx.x; c < k; c += blockDim.x)
    if (c != own && sizes[c] > 0) nearest_other = fmin(nearest_other, sums[c] / double(sizes[c]));
  const double b = block_min(nearest_other, scratch);
  if (threadIdx.x == 0 && sizes[own] > 1) {
    const double a = sums[own] / double(sizes[own] - 1);
    const double larger = fmax(a, b);
    if (larger > 0) atomicAdd(total, (b - a) / larger);
  }
}

// out[j * n + d] = points[rows[j] * n + d]: a sample's rows, gathered where the points lie.
__global__ void gather_rows_kernel(const float* __restrict__ points, int n, const int64_t* __restrict__ rows,
                                   int64_t count, float* __restrict__ out) {
  const int64_t total = count * n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = points[rows[i / n] * n + i % n];
}

int blocks_for(int64_t work, int per_block) {
  int device = 0, sms = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  const int64_t needed = (work + per_block - 1) / per_block;
  return int(std::max<int64_t>(1, std::min<int64_t>(needed, int64_t(sms) * 8)));
}

template <typename T>
void upload(DeviceBuffer<T>& buffer, const T* data, size_t count, const char* what) {
  buffer.allocate(std::max<size_t>(count, 1), what);
  if (count) check(cudaMemcpy(buffer.get(), data, count * sizeof(T), cudaMemcpyHostToDevice), what);
}

}  // namespace

std::vector<double> cluster_distance_sums_on_device(const float* points, int64_t m_points, int n, const KRange& k,
                                                    const std::vector<const int32_t*>& labels,
                                                    const std::vector<double>& means) {
  const int slots = k.sum();
  const size_t m = size_t(m_points);
  DeviceBuffer<float> device_means;
  DeviceBuffer<int32_t> device_labels;
  DeviceBuffer<double> out;
  const std::vector<float> means_f(means.begin(), means.end());
  upload(device_means, means_f.data(), means_f.size(), "cluster means (metrics pass)");
  device_labels.allocate(size_t(k.count()) * m, "labels (metrics pass)");
  for (int index = 0; index < k.count(); ++index)
    check(cudaMemcpy(device_labels.get() + size_t(index) * m, labels[size_t(index)], m * sizeof(int32_t),
                     cudaMemcpyHostToDevice),
          "labels (metrics pass)");
  out.allocate(size_t(slots), "cluster distance sums");
  check(cudaMemset(out.get(), 0, out.bytes()), "cudaMemset");
  const bool in_shared = slots <= kSharedSlots;
  const size_t shared_bytes = in_shared ? size_t(slots) * sizeof(double) : 0;
  constexpr int kBlock = 256;
  if (n >= 32) {
    cluster_distance_kernel<32><<<blocks_for(m_points, kBlock / 32), kBlock, shared_bytes>>>(
        points, m_points, n, device_labels.get(), k.kmin, k.kmax, device_means.get(), out.get(), in_shared);
  } else {
    cluster_distance_kernel<1><<<blocks_for(m_points, kBlock), kBlock, shared_bytes>>>(
        points, m_points, n, device_labels.get(), k.kmin, k.kmax, device_means.get(), out.get(), in_shared);
  }
  check_launch("cluster_distance_kernel");
  std::vector<double> sums(static_cast<size_t>(slots));
  check(cudaMemcpy(sums.data(), out.get(), out.bytes(), cudaMemcpyDeviceToHost), "cluster distance sums");
  return sums;
}

bool distance_sums_fit_gpu(int64_t m, int n, int k_count) {
  int ordinal = 0;
  check(cudaGetDevice(&ordinal), "metrics pass: cudaGetDevice");
  const MemoryLimits limits = current_memory_limits(query_device(ordinal));
  const double bytes = double(m) * (double(n) + double(k_count)) * 4.0;
  return bytes <= double(limits.gpu_free_bytes - kGpuReserveBytes);
}

std::vector<double> cluster_distance_sums_gpu(const Dataset& data, const KRange& k,
                                              const std::vector<const int32_t*>& labels,
                                              const std::vector<double>& means) {
  DeviceBuffer<float> points;
  upload(points, data.points(), size_t(data.m) * size_t(data.n), "points (metrics pass)");
  return cluster_distance_sums_on_device(points.get(), data.m, data.n, k, labels, means);
}

SampleLabels gather_sample_on_device(const float* points, int n, const std::vector<int64_t>& sample,
                                     const KRange& k, const std::vector<const int32_t*>& labels) {
  SampleLabels out;
  out.s = int64_t(sample.size());
  out.n = n;
  out.k = k;
  out.points.resize(sample.size() * size_t(n));
  out.labels.resize(size_t(k.count()) * sample.size());
  DeviceBuffer<int64_t> rows;
  DeviceBuffer<float> gathered;
  upload(rows, sample.data(), sample.size(), "silhouette sample rows");
  gathered.allocate(std::max<size_t>(out.points.size(), 1), "silhouette sample points");
  if (!sample.empty()) {
    gather_rows_kernel<<<blocks_for(out.s * n, 256), 256>>>(points, n, rows.get(), out.s, gathered.get());
    check_launch("gather_rows_kernel");
    check(cudaMemcpy(out.points.data(), gathered.get(), out.points.size() * sizeof(float), cudaMemcpyDeviceToHost),
          "silhouette sample points");
  }
  for (size_t j = 0; j < sample.size(); ++j)
    for (int index = 0; index < k.count(); ++index)
      out.labels[size_t(index) * sample.size() + j] = labels[size_t(index)][sample[j]];
  return out;
}

std::vector<std::optional<double>> sample_silhouettes_gpu(const SampleLabels& sample) {
  const int64_t s = sample.s;
  const KRange& k = sample.k;
  const int count = k.count();
  std::vector<std::optional<double>> result(static_cast<size_t>(count));
  if (s < 2) return result;

  DeviceBuffer<float> points, distances;
  upload(points, sample.points.data(), sample.points.size(), "silhouette sample");
  // Rows of the distance matrix per chunk: at most 256 MiB of it at a time, so any sample
  // size fits (a 10k sample needs 400 MB in all).
  const int64_t chunk_rows = std::max<int64_t>(1, std::min<int64_t>(s, (int64_t(256) << 20) / (s * 4)));
  distances.allocate(size_t(chunk_rows) * size_t(s), "silhouette distances");

  // Per K: the sample ordered by label, the labels in that order, the cluster sizes.
  struct PerK {
    DeviceBuffer<int32_t> order, sorted_labels, labels;
    DeviceBuffer<int64_t> sizes;
    bool defined = false;
    bool on_device = false;
  };
  std::vector<PerK> per_k(static_cast<size_t>(count));
  DeviceBuffer<double> totals;
  totals.allocate(size_t(count), "silhouette totals");
  check(cudaMemset(totals.get(), 0, totals.bytes()), "cudaMemset");
  for (int index = 0; index < count; ++index) {
    const int kk = k.kmin + index;
    const int32_t* labels = sample.labels.data() + size_t(index) * size_t(s);
    std::vector<int64_t> sizes(static_cast<size_t>(kk), 0);
    for (int64_t j = 0; j < s; ++j) ++sizes[size_t(labels[j])];
    const int64_t present = std::count_if(sizes.begin(), sizes.end(), [](int64_t size) { return size > 0; });
    PerK& entry = per_k[size_t(index)];
    entry.defined = present >= 2 && present <= s - 1;
    entry.on_device = entry.defined && kk <= kSharedSlots;  // else the CPU path, below
    if (!entry.on_device) continue;
    std::vector<int32_t> order(static_cast<size_t>(s));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [labels](int32_t x, int32_t y) { return labels[x] < labels[y]; });
    std::vector<int32_t> sorted(static_cast<size_t>(s));
    for (int64_t p = 0; p < s; ++p) sorted[size_t(p)] = labels[order[size_t(p)]];
    upload(entry.order, order.data(), order.size(), "silhouette order");
    upload(entry.sorted_labels, sorted.data(), sorted.size(), "silhouette labels");
    upload(entry.labels, labels, size_t(s), "silhouette labels");
    upload(entry.sizes, sizes.data(), sizes.size(), "silhouette cluster sizes");
  }

  for (int64_t row0 = 0; row0 < s; row0 += chunk_rows) {
    const int64_t rows = std::min(chunk_rows, s - row0);
    const dim3 grid(unsigned((s + kTile - 1) / kTile), unsigned((rows + kTile - 1) / kTile));
    pairwise_distance_kernel<<<grid, 256>>>(points.get(), s, sample.n, row0, rows, distances.get());
    check_launch("pairwise_distance_kernel");
    for (int index = 0; index < count; ++index) {
      PerK& entry = per_k[size_t(index)];
      if (!entry.on_device) continue;
      const int kk = k.kmin + index;
      silhouette_rows_kernel<<<unsigned(rows), 256, size_t(kk) * sizeof(double)>>>(
          distances.get(), s, row0, rows, kk, entry.order.get(), entry.sorted_labels.get(), entry.labels.get(),
          entry.sizes.get(), totals.get() + index);
      check_launch("silhouette_rows_kernel");
    }
  }
  std::vector<double> host_totals(static_cast<size_t>(count));
  check(cudaMemcpy(host_totals.data(), totals.get(), totals.bytes(), cudaMemcpyDeviceToHost), "silhouette totals");

  std::vector<int> cpu_ks;
  for (int index = 0; index < count; ++index) {
    const PerK& entry = per_k[size_t(index)];
    if (entry.on_device) result[size_t(index)] = host_totals[size_t(index)] / double(s);
    else if (entry.defined) cpu_ks.push_back(index);
  }
  for (int index : cpu_ks) {  // K beyond the shared-memory sums: exact on the CPU instead
    SampleLabels one = sample;
    one.k = KRange{k.kmin + index, k.kmin + index};
    one.labels.assign(sample.labels.begin() + ptrdiff_t(size_t(index) * size_t(s)),
                      sample.labels.begin() + ptrdiff_t(size_t(index + 1) * size_t(s)));
    result[size_t(index)] = sample_silhouettes_cpu(one)[0];
  }
  return result;
}

}  // namespace mk
