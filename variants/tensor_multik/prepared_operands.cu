#include "variants/tensor_multik/prepared_operands.hpp"

#include <algorithm>
#include <cmath>

#include <cuda_fp16.h>

#include "variants/common/gpu_lloyd_state.cuh"

namespace mk::tensor_multik {

// The FP16 update's operands must stay inside FP16's range with its ~22-bit hi+lo split intact:
// points are multiplied by a power of two that brings the largest |x| to [2^13, 2^14), unless
// it already lies in [2^-6, 2^14), where the split's absolute floor (2^-25) is below 2^-19 of
// it and no multiply is needed.
float point_scale_for_update(const Dataset& data) {
  float largest = 0.f;
  const float* values = data.points();
  const int64_t count = data.m * int64_t(data.n);
#pragma omp parallel for reduction(max : largest) schedule(static)
  for (int64_t i = 0; i < count; ++i) largest = std::max(largest, std::fabs(values[i]));
  if (largest == 0.f || (largest >= 0x1p-6f && largest < 0x1p14f)) return 1.f;
  // Capped at 2^126, the largest power of two a float holds: data below 2^-114 (subnormal
  // floats) then land under 2^12 instead of overflowing the scale to infinity.
  return std::ldexp(1.f, std::min(126, 13 - std::ilogb(largest)));
}

std::vector<float> column_means(const Dataset& data) {
  const int n = data.n;
  const int64_t m = data.m, rows_per_block = 1 << 16, blocks = (m + rows_per_block - 1) / rows_per_block;
  std::vector<double> partial(size_t(blocks) * n, 0.0);
  const float* values = data.points();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t end = std::min(m, (b + 1) * rows_per_block);
    for (int64_t row = b * rows_per_block; row < end; ++row)
      for (int d = 0; d < n; ++d) partial[size_t(b) * n + d] += values[row * n + d];
  }
  std::vector<float> mean(size_t(n), 0.f);
  for (int d = 0; d < n; ++d) {
    double sum = 0.0;
    for (int64_t b = 0; b < blocks; ++b) sum += partial[size_t(b) * n + d];
    mean[d] = m > 0 ? float(sum / double(m)) : 0.f;
  }
  return mean;
}

// group_min=int's key bias: the mean of ‖x − μ‖² over the rows, in FP64 over fixed blocks of
// rows like column_means. Any bias ≥ 0 gives exact labels (see INT_GROUP_MIN in the kernel); it
// only moves where the fix-up runs: a larger bias widens the window (by TIE_SCALE·bias), a
// smaller one leaves more points with two negative keys. The share of 32-point steps that need
// the fix-up, by an FP64 simulation of the kernel's rule (reports/probes/near_tie_rate.cpp,
// 3 Lloyd iterations, K=3..7 at N=8, K=3..5 at N=4):
//   N=8 uniform: 1.0 % without a bias; the mean 1.6 %, 0.75 of it 1.5 %, 0.45 of it 9 %, the
//   largest ‖x'‖² 2.7 %; N=8 Gaussian: 1.0 %, the mean 1.7 %, the largest 4.5 %;
//   N=4 uniform: 0.2 % → 0.3 % at the mean; N=4 Gaussian: 0.25 % → 3.2 %.
// The last is why the form is not a default: its gain (H200: N=4 K=3..5 −1.8 %, N=8 K=16 −1 % on
// uniform data, N=8 K=3..7 +3.1 %, against the float min before the lean step) depends on the data.
double mean_centred_square(const Dataset& data, const std::vector<float>& mean) {
  const int n = data.n;
  const int64_t m = data.m, rows_per_block = 1 << 16, blocks = (m + rows_per_block - 1) / rows_per_block;
  std::vector<double> partial(size_t(blocks), 0.0);
  const float* values = data.points();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t end = std::min(m, (b + 1) * rows_per_block);
    double sum = 0.0;
    for (int64_t row = b * rows_per_block; row < end; ++row)
      for (int d = 0; d < n; ++d) {
        const double centred = double(values[row * n + d]) - double(mean[size_t(d)]);
        sum += centred * centred;
      }
    partial[size_t(b)] = sum;
  }
  double sum = 0.0;
  for (const double p : partial) sum += p;
  return m > 0 ? sum / double(m) : 0.0;
}

namespace {

// operands=prepared, built once per run: thread (step, lane) writes that lane's fragment words of
// the step, the registers the kernel's own split would make of the centred point x' = fl(x − μ)
// (hi = x' rounded to FP16, lo = x' − hi rounded again, x' multiplied by the update's
// power-of-two scale first), and ‖x'‖² of point 32·step + lane, summed in FP64 (the kernel's FP32
// sums of the same products erred by up to N·2^-24 of it; the window never relied on more). Rows
// past M are zero.
// Centring on the data's mean μ shrinks the window, which scales with ‖x'‖² + 2·max‖c'‖²: on
// uniform [0,1)^8 with moved centroids (K=3..7, 2M points, FP64 simulation) the share of
// 32-point steps with a near tie falls from 7.7 % to 1.0 %, and each such step pays the exact
// fix-up.
//   N=8: vector i (m-tile i) = {hi(g), hi(g+8), lo(g), lo(g+8)} of rows 16i + g and 16i + g + 8,
//        dims 2t, 2t+1;
//   N=4: one vector {row g, row g+8 of m-tile 0, then of m-tile 1}, each the hi (t < 2) or lo
//        (t ≥ 2) pair of dims 2(t&1), 2(t&1)+1.
__global__ void build_prepared_operands(const float* __restrict__ points, int64_t m, int n, int64_t steps,
                                      float x_scale, const float* __restrict__ shift, uint4* __restrict__ words,
                                      float* __restrict__ norms) {
  const int64_t threads = steps * 32;
  for (int64_t id = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; id < threads;
       id += int64_t(gridDim.x) * blockDim.x) {
    const int64_t step = id >> 5;
    const int lane = int(id & 31), g = lane >> 2, t = lane & 3;
    auto value = [&](int64_t row, int d) {
      return row < m ? __fmul_rn(__fsub_rn(points[row * n + d], shift[d]), x_scale) : 0.f;
    };
    auto split = [&](int64_t row, int d, unsigned& hi, unsigned& lo) {
      const float v0 = value(row, d), v1 = value(row, d + 1);
      const __half2 h = __floats2half2_rn(v0, v1);
      const __half2 l = __floats2half2_rn(__fsub_rn(v0, __low2float(h)), __fsub_rn(v1, __high2float(h)));
      hi = *reinterpret_cast<const unsigned*>(&h);
      lo = *reinterpret_cast<const unsigned*>(&l);
    };
    unsigned w[2][4];
    for (int i = 0; i < 2; ++i) {
      const int64_t row = 32 * step + 16 * i + g;
      unsigned hi0, lo0, hi1, lo1;
      split(row, n == 8 ? 2 * t : 2 * (t & 1), hi0, lo0);
      split(row + 8, n == 8 ? 2 * t : 2 * (t & 1), hi1, lo1);
      if (n == 8) {
        w[i][0] = hi0, w[i][1] = hi1, w[i][2] = lo0, w[i][3] = lo1;
      } else {
        w[0][2 * i] = t >= 2 ? lo0 : hi0;
        w[0][2 * i + 1] = t >= 2 ? lo1 : hi1;
      }
    }
    const int vectors = n == 8 ? 2 : 1;
    for (int i = 0; i < vectors; ++i)
      words[step * 32 * vectors + 32 * i + lane] = make_uint4(w[i][0], w[i][1], w[i][2], w[i][3]);
    double norm = 0.0;
    for (int d = 0; d < n; ++d) {
      const double v = value(id, d);
      norm += v * v;
    }
    norms[id] = float(norm);
  }
}

}  // namespace

void launch_build_prepared_operands(const float* points, int64_t m, int n, int64_t steps, float x_scale,
                                    const float* shift, uint4* words, float* norms, cudaStream_t stream) {
  const int64_t threads = steps * 32;
  const unsigned blocks = unsigned(std::min<int64_t>((threads + 255) / 256, 65535));
  build_prepared_operands<<<blocks, 256, 0, stream>>>(points, m, n, steps, x_scale, shift, words, norms);
  gpu::check_launch("build_prepared_operands");
}

}  // namespace mk::tensor_multik
