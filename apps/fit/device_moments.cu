// The moments passes on the device (apps/fit/device_moments.hpp). Each is a small fraction of one
// Lloyd step's traffic; as a fit's rows land from the host they run while the next pieces go up.
#include "apps/fit/device_moments.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/errors.hpp"

namespace mk {
namespace {

using gpu::check;
using gpu::check_launch;
using gpu::DeviceBuffer;

constexpr int kThreads = 256;

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

// Per feature: the FP64 sum, the largest |x|, and the first non-finite value's flat index
// (counted from index_base, the flat index of x[0]). Non-negative floats order as their bit patterns.
__global__ void __launch_bounds__(kThreads) column_sums(const float* __restrict__ x, int64_t m, int n, int64_t rows,
                                                       double* sum, unsigned* max_abs_bits,
                                                       unsigned long long* first_bad, int64_t index_base) {
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
        atomicMin(first_bad, (unsigned long long)(index_base + r * n + tile.f));
        break;
      }
      s += v;
      largest = fmaxf(largest, fabsf(v));
    }
  if (tile.f >= 0) atomicMax(max_abs_bits, __float_as_uint(largest));
  add_block_partials(partial, tile, n, s, sum);
}

// Per feature: Σ (x - mean)² with mean = sums · scale, the second of data_moments' two passes
// (a large offset does not cancel the variance).
__global__ void __launch_bounds__(kThreads) column_squares(const float* __restrict__ x, int64_t m, int n, int64_t rows,
                                                          const double* __restrict__ sums, double scale,
                                                          double* squares) {
  __shared__ double partial[kThreads];
  const MomentsTile tile = moments_tile(n);
  const int64_t begin = int64_t(blockIdx.x) * rows;
  const int64_t end = begin + rows < m ? begin + rows : m;
  double s = 0;
  if (tile.f >= 0) {
    const double mu = sums[tile.f] * scale;
    for (int64_t r = begin + tile.row_lane; r < end; r += tile.rows_a_pass) {
      const double d = double(x[r * n + tile.f]) - mu;
      s += d * d;
    }
  }
  add_block_partials(partial, tile, n, s, squares);
}

// The grid of both passes over `m` rows: at most 4096 row blocks.
struct PassGrid {
  int64_t rows;  // a block's
  dim3 grid;
};

PassGrid pass_grid(int64_t m, int n) {
  const int64_t rows = std::max<int64_t>(256, (m + 4095) / 4096);
  return {rows, dim3(unsigned((m + rows - 1) / rows), n <= kThreads ? 1u : unsigned((n + kThreads - 1) / kThreads))};
}

[[noreturn]] void throw_non_finite(const float* x, unsigned long long first_bad, int n) {
  float value = 0;
  check(cudaMemcpy(&value, x + first_bad, sizeof(float), cudaMemcpyDeviceToHost), "moments");
  const char* what = std::isnan(value) ? "NaN" : (value > 0 ? "Inf" : "-Inf");
  throw InputError(std::string("dataset contains ") + what + " at row " + std::to_string(first_bad / n) +
                   ", column " + std::to_string(first_bad % n));
}

float float_of_bits(unsigned bits) {
  float value = 0;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace

DataMoments device_moments(const float* x, int64_t m, int n) {
  const PassGrid pass = pass_grid(m, n);
  DeviceBuffer<double> sums(size_t(n) * 2, "moments");
  DeviceBuffer<unsigned> largest(1, "moments: largest |x|");
  DeviceBuffer<unsigned long long> bad(1, "moments: first non-finite");
  check(cudaMemset(sums.get(), 0, sums.bytes()), "moments");
  check(cudaMemset(largest.get(), 0, largest.bytes()), "moments");
  check(cudaMemset(bad.get(), 0xff, bad.bytes()), "moments");
  column_sums<<<pass.grid, kThreads>>>(x, m, n, pass.rows, sums.get(), largest.get(), bad.get(), 0);
  check_launch("column_sums");
  unsigned long long first_bad = ULLONG_MAX;
  check(cudaMemcpy(&first_bad, bad.get(), sizeof(first_bad), cudaMemcpyDeviceToHost), "moments");
  if (first_bad != ULLONG_MAX) throw_non_finite(x, first_bad, n);
  DataMoments moments;
  moments.mean.resize(size_t(n));
  check(cudaMemcpy(moments.mean.data(), sums.get(), size_t(n) * sizeof(double), cudaMemcpyDeviceToHost), "moments");
  for (double& mean : moments.mean) mean /= double(m);
  column_squares<<<pass.grid, kThreads>>>(x, m, n, pass.rows, sums.get(), 1.0 / double(m), sums.get() + n);
  check_launch("column_squares");
  moments.variance.resize(size_t(n));
  check(cudaMemcpy(moments.variance.data(), sums.get() + n, size_t(n) * sizeof(double), cudaMemcpyDeviceToHost),
        "moments");
  for (double& variance : moments.variance) variance /= double(m);
  unsigned bits = 0;
  check(cudaMemcpy(&bits, largest.get(), sizeof(bits), cudaMemcpyDeviceToHost), "moments");
  moments.max_abs = float_of_bits(bits);
  return moments;
}

LandingMoments::LandingMoments(const float* x, int64_t m, int n, int64_t pieces, cudaStream_t upload)
    : x_(x), m_(m), n_(n), capacity_(std::max<int64_t>(1, pieces)), upload_(upload) {
  sums_.allocate(size_t(capacity_) * size_t(n) * 2, "moments of the landing rows");
  largest_.allocate(1, "moments: largest |x|");
  first_bad_.allocate(1, "moments: first non-finite");
  try {
    check(cudaStreamCreateWithFlags(&passes_, cudaStreamNonBlocking), "moments stream");
    check(cudaEventCreateWithFlags(&landed_, cudaEventDisableTiming), "moments event");
    check(cudaMemsetAsync(sums_.get(), 0, sums_.bytes(), passes_), "moments");
    check(cudaMemsetAsync(largest_.get(), 0, largest_.bytes(), passes_), "moments");
    check(cudaMemsetAsync(first_bad_.get(), 0xff, first_bad_.bytes(), passes_), "moments");
  } catch (...) {
    release();  // no destructor runs for a constructor that throws
    throw;
  }
}

LandingMoments::~LandingMoments() { release(); }

void LandingMoments::release() {
  if (passes_) {
    cudaStreamSynchronize(passes_);  // no pass may outlive the buffers (an exception left early)
    cudaStreamDestroy(passes_);
    passes_ = nullptr;
  }
  if (landed_) cudaEventDestroy(landed_);
  landed_ = nullptr;
}

void LandingMoments::add(int64_t first_row, int64_t rows) {
  if (rows < 1) return;
  const int64_t piece = int64_t(first_rows_.size());
  if (piece >= capacity_) throw DeviceError("moments: more pieces than the " + std::to_string(capacity_) + " planned");
  first_rows_.push_back(first_row);
  row_counts_.push_back(rows);
  check(cudaEventRecord(landed_, upload_), "moments");
  check(cudaStreamWaitEvent(passes_, landed_, 0), "moments");
  const float* x = x_ + first_row * n_;
  double* sums = sums_.get() + size_t(piece) * size_t(n_) * 2;
  const PassGrid pass = pass_grid(rows, n_);
  column_sums<<<pass.grid, kThreads, 0, passes_>>>(x, rows, n_, pass.rows, sums, largest_.get(), first_bad_.get(),
                                                  first_row * n_);
  check_launch("column_sums");
  column_squares<<<pass.grid, kThreads, 0, passes_>>>(x, rows, n_, pass.rows, sums, 1.0 / double(rows), sums + n_);
  check_launch("column_squares");
}

DataMoments LandingMoments::finish() {
  check(cudaStreamSynchronize(passes_), "moments of the landing rows");
  unsigned long long first_bad = ULLONG_MAX;
  check(cudaMemcpy(&first_bad, first_bad_.get(), sizeof(first_bad), cudaMemcpyDeviceToHost), "moments");
  if (first_bad != ULLONG_MAX) throw_non_finite(x_, first_bad, n_);
  const size_t pieces = first_rows_.size();
  std::vector<double> host(pieces * size_t(n_) * 2);
  if (pieces) check(cudaMemcpy(host.data(), sums_.get(), host.size() * sizeof(double), cudaMemcpyDeviceToHost), "moments");
  DataMoments moments;
  moments.mean.assign(size_t(n_), 0.0);
  moments.variance.assign(size_t(n_), 0.0);  // Σ squared deviations until the end
  double count = 0;
  for (size_t p = 0; p < pieces; ++p) {
    const double rows = double(row_counts_[p]);
    const double* sums = host.data() + p * size_t(n_) * 2;
    for (int f = 0; f < n_; ++f) {
      const double mean = sums[f] / rows;
      const double delta = mean - moments.mean[size_t(f)];
      moments.mean[size_t(f)] += delta * rows / (count + rows);
      moments.variance[size_t(f)] += sums[n_ + f] + delta * delta * count * rows / (count + rows);
    }
    count += rows;
  }
  if (int64_t(count) != m_)
    throw DeviceError("moments: the pieces held " + std::to_string(int64_t(count)) + " rows, not " + std::to_string(m_));
  for (double& variance : moments.variance) variance /= double(m_);
  unsigned bits = 0;
  check(cudaMemcpy(&bits, largest_.get(), sizeof(bits), cudaMemcpyDeviceToHost), "moments");
  moments.max_abs = float_of_bits(bits);
  return moments;
}

}  // namespace mk
