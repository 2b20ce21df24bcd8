#include "apps/quantize/u8_norm_run.hpp"

#include <algorithm>
#include <cfloat>

#include "variants/common/gpu_lloyd_state.cuh"

namespace mk {

namespace {

constexpr int kMaxPaletteK = 256;
constexpr int kBlock = 256;
constexpr int kPixelsPerThread = 4;  // a table entry read from shared memory serves 4 pixels
constexpr int64_t kMaxPixelsPerBlock = int64_t(1) << 24;  // uint32 block sums: 255 · 2²⁴ < 2³²

struct Best {
  float best;
  float second;
  int index;
};

// Lowest index at an equal FP64 distance; x − c is exact in FP64 for integer x and float c.
__device__ int exact_nearest(const float4* table, int k, double x0, double x1, double x2) {
  double best = DBL_MAX;
  int index = 0;
  for (int j = 0; j < k; ++j) {
    const float4 t = table[j];
    const double d0 = x0 - double(-0.5f * t.x), d1 = x1 - double(-0.5f * t.y), d2 = x2 - double(-0.5f * t.z);
    const double d = d0 * d0 + d1 * d1 + d2 * d2;
    if (d < best) best = d, index = j;
  }
  return index;
}

__global__ void __launch_bounds__(kBlock) u8_norm_accumulate(const uchar4* __restrict__ pixels, int64_t m,
                                                             const float* __restrict__ centroids, int k,
                                                             gpu::AccumulatorView acc) {
  __shared__ float4 table[kMaxPaletteK];  // (−2c, fl(‖c‖²))
  __shared__ unsigned int block_sums[kMaxPaletteK * 3];
  __shared__ unsigned int block_counts[kMaxPaletteK];
  __shared__ float block_bound[kBlock / 32];
  __shared__ double block_inertia[kBlock / 32];

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float bound = 0.0f;  // S of this thread's centroids
  for (int j = threadIdx.x; j < kMaxPaletteK; j += kBlock) {
    block_counts[j] = 0;
    block_sums[3 * j] = block_sums[3 * j + 1] = block_sums[3 * j + 2] = 0;
    if (j < k) {
      const float c0 = centroids[3 * j], c1 = centroids[3 * j + 1], c2 = centroids[3 * j + 2];
      const float w = __fmaf_rn(c2, c2, __fmaf_rn(c1, c1, __fmul_rn(c0, c0)));
      table[j] = make_float4(-2.0f * c0, -2.0f * c1, -2.0f * c2, w);
      // Rounded up generously: S only sets the width of the re-decided window.
      bound = fmaxf(bound, 1.01f * (w + 510.0f * (fabsf(c0) + fabsf(c1) + fabsf(c2))));
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) bound = fmaxf(bound, __shfl_xor_sync(0xffffffffu, bound, offset));
  if (lane == 0) block_bound[warp] = bound;
  __syncthreads();
  float window = 0.0f;
  for (int w = 0; w < kBlock / 32; ++w) window = fmaxf(window, block_bound[w]);
  window *= 0x1p-20f;  // 16 · 2⁻²⁴ · S

  double inertia = 0.0;
  const int64_t step = int64_t(gridDim.x) * kBlock * kPixelsPerThread;
  for (int64_t base = int64_t(blockIdx.x) * kBlock * kPixelsPerThread + threadIdx.x; base < m; base += step) {
    float x[kPixelsPerThread][3];
    Best b[kPixelsPerThread];
#pragma unroll
    for (int p = 0; p < kPixelsPerThread; ++p) {
      const int64_t i = base + int64_t(p) * kBlock;
      const uchar4 px = i < m ? pixels[i] : make_uchar4(0, 0, 0, 0);
      x[p][0] = float(px.x);
      x[p][1] = float(px.y);
      x[p][2] = float(px.z);
      b[p] = {FLT_MAX, FLT_MAX, 0};
    }
    // Unrolled by 4 so the loop's counter, compare and branch are paid once per 4 entries (from
    // the instruction count; neither this nor kPixelsPerThread has been timed yet).
#pragma unroll 4
    for (int j = 0; j < k; ++j) {
      const float4 t = table[j];
#pragma unroll
      for (int p = 0; p < kPixelsPerThread; ++p) {
        const float s = __fmaf_rn(x[p][2], t.z, __fmaf_rn(x[p][1], t.y, __fmaf_rn(x[p][0], t.x, t.w)));
        const bool better = s < b[p].best;
        b[p].second = fminf(b[p].second, fmaxf(b[p].best, s));
        b[p].index = better ? j : b[p].index;
        b[p].best = fminf(b[p].best, s);
      }
    }
#pragma unroll
    for (int p = 0; p < kPixelsPerThread; ++p) {
      const int64_t i = base + int64_t(p) * kBlock;
      if (i >= m) continue;
      int j = b[p].index;
      if (!(b[p].second - b[p].best > window)) j = exact_nearest(table, k, x[p][0], x[p][1], x[p][2]);
      const float4 t = table[j];
      const double d0 = double(x[p][0]) - double(-0.5f * t.x), d1 = double(x[p][1]) - double(-0.5f * t.y),
                   d2 = double(x[p][2]) - double(-0.5f * t.z);
      inertia += d0 * d0 + d1 * d1 + d2 * d2;
      atomicAdd(&block_sums[3 * j], unsigned(x[p][0]));
      atomicAdd(&block_sums[3 * j + 1], unsigned(x[p][1]));
      atomicAdd(&block_sums[3 * j + 2], unsigned(x[p][2]));
      atomicAdd(&block_counts[j], 1u);
      if (acc.labels) acc.labels[i] = j;
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) inertia += __shfl_xor_sync(0xffffffffu, inertia, offset);
  if (lane == 0) block_inertia[warp] = inertia;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int w = 0; w < kBlock / 32; ++w) total += block_inertia[w];
    atomicAdd(acc.inertia, total);
  }
  for (int j = threadIdx.x; j < k; j += kBlock) {
    if (!block_counts[j]) continue;
    atomicAdd(&acc.counts[j], (unsigned long long)block_counts[j]);
    for (int d = 0; d < 3; ++d) atomicAdd(&acc.sums[3 * j + d], double(block_sums[3 * j + d]));
  }
}

class U8NormRun : public gpu::GpuRun {
 public:
  U8NormRun(const Problem& problem, const Dataset& rgb, const Image& image, const DeviceInfo& device)
      : GpuRun(problem, rgb, Layout::AoS), k_(problem.k.kmax) {
    const int64_t m = image.pixel_count();
    std::vector<uchar4> packed(static_cast<size_t>(m));
    const size_t stride = size_t(image.channels);
    for (int64_t i = 0; i < m; ++i) {
      const uint8_t* p = &image.pixels[size_t(i) * stride];
      packed[size_t(i)] = make_uchar4(p[0], p[1], p[2], 0);
    }
    pixels_.allocate(size_t(m), "pixels (4 bytes each)");
    gpu::check(cudaMemcpy(pixels_.get(), packed.data(), packed.size() * sizeof(uchar4), cudaMemcpyHostToDevice),
               "upload pixels");
    // Enough blocks to fill the GPU several times over, never more pixels a block than its
    // uint32 sums hold.
    const int64_t wanted = (m + kBlock * kPixelsPerThread - 1) / (kBlock * kPixelsPerThread);
    const int64_t resident = int64_t(std::max(device.sm_count, 1)) * 8;
    grid_ = std::max<int64_t>(std::min(wanted, resident), (m + kMaxPixelsPerBlock - 1) / kMaxPixelsPerBlock);
  }

  void iterate(bool store_labels) override {
    state_.zero_accumulators();
    u8_norm_accumulate<<<unsigned(grid_), kBlock, 0, state_.stream()>>>(pixels_.get(), state_.problem().m,
                                                                        state_.centroids(), k_,
                                                                        state_.accumulators(store_labels));
    gpu::check_launch("u8_norm_accumulate");
    state_.finalize();
  }

 private:
  int k_;
  int64_t grid_ = 1;
  gpu::DeviceBuffer<uchar4> pixels_;
};

}  // namespace

std::optional<std::string> u8_norm_refusal(const Problem& problem, const DeviceInfo& device) {
  if (!device.is_gpu) return std::string("needs a CUDA GPU");
  if (problem.n != 3) return "clusters RGB (N = 3), not N = " + std::to_string(problem.n);
  if (problem.k.kmin != problem.k.kmax) return std::string("one K at a time");
  if (problem.k.kmax > kMaxPaletteK) return "K <= " + std::to_string(kMaxPaletteK) + " (one launch, a byte a palette index)";
  return gpu::check_fits_in_memory(problem, device, double(problem.m) * 4.0);
}

std::unique_ptr<PreparedRun> prepare_u8_norm_run(const Problem& problem, const Dataset& rgb, const Image& image,
                                                 const DeviceInfo& device) {
  if (auto refusal = u8_norm_refusal(problem, device))
    throw UnsupportedError(std::string(kU8NormPath) + ": " + *refusal);
  if (rgb.m != image.pixel_count() || rgb.n != 3) throw InputError("gpu-u8-norm: the points are not the image's RGB");
  return std::make_unique<U8NormRun>(problem, rgb, image, device);
}

}  // namespace mk
