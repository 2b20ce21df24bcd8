#include "apps/quantize/u8_norm_run.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "apps/quantize/u8_norm_bounds.cuh"
#include "apps/quantize/u8_norm_search.cuh"
#include "variants/common/gpu_lloyd_state.cuh"

namespace mk {

namespace {

using u8norm::kBlock;
using u8norm::kMaxPaletteK;
using u8norm::kPixelsPerThread;
constexpr int64_t kMaxPixelsPerBlock = int64_t(1) << 24;  // uint32 block sums: 255 · 2²⁴ < 2³²

// The full pass: every pixel searched, its FP64 distance added to the inertia, the block's
// uint32 sums flushed as FP64 atomics: the labelling pass after the steps.
__global__ void __launch_bounds__(kBlock) u8_norm_accumulate(const uchar4* __restrict__ pixels, int64_t m,
                                                             const float* __restrict__ centroids, int k,
                                                             gpu::AccumulatorView acc) {
  __shared__ float4 table[kMaxPaletteK];  // (−2c, fl(‖c‖²))
  __shared__ float scratch[kBlock / 32];
  __shared__ unsigned int block_sums[kMaxPaletteK * 3];
  __shared__ unsigned int block_counts[kMaxPaletteK];
  __shared__ double block_inertia[kBlock / 32];

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int j = threadIdx.x; j < kMaxPaletteK; j += kBlock) {
    block_counts[j] = 0;
    block_sums[3 * j] = block_sums[3 * j + 1] = block_sums[3 * j + 2] = 0;
  }
  const float window = u8norm::build_table(table, scratch, centroids, k);

  double inertia = 0.0;
  const int64_t step = int64_t(gridDim.x) * kBlock * kPixelsPerThread;
  for (int64_t base = int64_t(blockIdx.x) * kBlock * kPixelsPerThread + threadIdx.x; base < m; base += step) {
    float x[kPixelsPerThread][3];
#pragma unroll
    for (int p = 0; p < kPixelsPerThread; ++p) {
      const int64_t i = base + int64_t(p) * kBlock;
      const uchar4 px = i < m ? pixels[i] : make_uchar4(0, 0, 0, 0);
      x[p][0] = float(px.x);
      x[p][1] = float(px.y);
      x[p][2] = float(px.z);
    }
    u8norm::Nearest near[kPixelsPerThread];
    u8norm::search(table, k, window, x, near);
#pragma unroll
    for (int p = 0; p < kPixelsPerThread; ++p) {
      const int64_t i = base + int64_t(p) * kBlock;
      if (i >= m) continue;
      const int j = near[p].index;
      inertia += u8norm::exact_distance(table, j, x[p]);
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
    filter_grid_ = std::min<int64_t>((m + kBlock - 1) / kBlock, int64_t(std::max(device.sm_count, 1)) * 16);
    search_grid_ = std::min<int64_t>((m + kBlock - 1) / kBlock, int64_t(std::max(device.sm_count, 1)) * 8);

    labels_.allocate(size_t(m), "pixel labels (a byte each)");
    upper_.allocate(size_t(m), "pixel upper bounds");
    lower_.allocate(size_t(m) * u8norm::kMaxGroups, "pixel group lower bounds");
    queue_.allocate(size_t(m), "pixels to search");
    queued_.allocate(1, "queue length");
    blocks_done_.allocate(1, "search blocks done");
    groups_.allocate(1, "centroid groups");
    moves_.allocate(2, "cumulative centroid moves");
    totals_sums_.allocate(size_t(kMaxPaletteK) * 3, "cluster byte sums");
    totals_counts_.allocate(size_t(kMaxPaletteK), "cluster counts");
    totals_squares_.allocate(size_t(kMaxPaletteK), "cluster squared norms");
    gpu::check(cudaMemset(queued_.get(), 0, queued_.bytes()), "zero the queue length");
    gpu::check(cudaMemset(blocks_done_.get(), 0, blocks_done_.bytes()), "zero the search tickets");
  }

  void iterate(bool store_labels) override {
    if (store_labels) {
      state_.zero_accumulators();
      labelling_pass();
    } else {
      bounded_step();  // its last search block writes every accumulator: nothing to zero
    }
    state_.finalize();
  }

 private:
  // Every pixel searched afresh, its label stored and its FP64 distance in the inertia.
  void labelling_pass() {
    u8_norm_accumulate<<<unsigned(grid_), kBlock, 0, state_.stream()>>>(pixels_.get(), state_.problem().m,
                                                                        state_.centroids(), k_,
                                                                        state_.accumulators(true));
    gpu::check_launch("u8_norm_accumulate");
  }

  // u8_norm_bounds.cuh: the first step groups the centroids, searches every pixel and fills
  // the totals; later ones search the pixels whose bounds no longer hold, over the groups whose
  // bound failed.
  void bounded_step() {
    const cudaStream_t stream = state_.stream();
    const int64_t m = state_.problem().m;
    const u8norm::Totals totals{totals_sums_.get(), totals_counts_.get(), totals_squares_.get()};
    const u8norm::PixelBounds bounds{labels_.get(), upper_.get(), lower_.get()};
    const gpu::AccumulatorView acc = state_.accumulators(false);
    if (!primed_) {
      prime(stream);
      u8norm::u8_group_search<true><<<unsigned(search_grid_), kBlock, 0, stream>>>(
          pixels_.get(), m, state_.centroids(), k_, groups_.get(), moves_.get() + parity_, queue_.get(), queued_.get(),
          bounds, totals, blocks_done_.get(), acc);
      gpu::check_launch("u8_group_search (every pixel)");
      primed_ = true;
      return;
    }
    if (!filtered_) filter();  // update() filtered these centroids already, unless they changed since
    u8norm::u8_group_search<false><<<unsigned(search_grid_), kBlock, 0, stream>>>(
        pixels_.get(), m, state_.centroids(), k_, groups_.get(), moves_.get() + parity_, queue_.get(), queued_.get(),
        bounds, totals, blocks_done_.get(), acc);
    gpu::check_launch("u8_group_search (queued pixels)");
    filtered_ = false;
    queue_filled_ = false;  // the search's last block emptied it
  }

  // The filter of the next step, queued as soon as update() has queued the new centroids: it
  // runs while the host waits for the step's summary (about 20 us a step at 1M pixels).
  void centroids_updated() override {
    if (primed_) filter();
  }

  void set_centroids(const std::vector<float>& packed) override {
    GpuRun::set_centroids(packed);
    filtered_ = false;
  }

  // The filter over the current centroids: the moves from moves_[parity_] into the other,
  // which becomes the current one (cumulative moves only grow, so a filter whose centroids then
  // change, as an empty-cluster relocation changes them, is followed by another from its moves).
  void filter() {
    const cudaStream_t stream = state_.stream();
    if (queue_filled_) gpu::check(cudaMemsetAsync(queued_.get(), 0, queued_.bytes(), stream), "empty the queue");
    const u8norm::PixelBounds bounds{labels_.get(), upper_.get(), lower_.get()};
    u8norm::u8_group_filter<<<unsigned(filter_grid_), kBlock, 0, stream>>>(
        pixels_.get(), state_.problem().m, state_.centroids(), k_, groups_.get(), moves_.get() + parity_,
        moves_.get() + (1 - parity_), bounds, queue_.get(), queued_.get());
    gpu::check_launch("u8_group_filter");
    parity_ = 1 - parity_;
    filtered_ = true;
    queue_filled_ = true;
  }

  // The groups from the current centroids (u8_norm_groups.hpp); the moves start from them.
  void prime(cudaStream_t stream) {
    std::vector<float> centroids(size_t(k_) * 3);
    gpu::check(cudaMemcpyAsync(centroids.data(), state_.centroids(), centroids.size() * sizeof(float),
                               cudaMemcpyDeviceToHost, stream),
               "read the centroids to group them");
    gpu::check(cudaStreamSynchronize(stream), "read the centroids to group them");
    const u8norm::Groups groups = u8norm::group_centroids(centroids.data(), k_);
    host_groups_ = groups;  // the copy's source stays alive until the stream has read it
    gpu::check(cudaMemcpyAsync(groups_.get(), &host_groups_, sizeof(host_groups_), cudaMemcpyHostToDevice, stream),
               "upload the centroid groups");
    parity_ = 0;
    gpu::check(cudaMemsetAsync(moves_.get(), 0, sizeof(u8norm::Moves), stream), "zero the moves");
    gpu::check(cudaMemcpyAsync(moves_.get()->previous, state_.centroids(), size_t(k_) * 3 * sizeof(float),
                               cudaMemcpyDeviceToDevice, stream),
               "keep the centroids");
    gpu::check(cudaMemsetAsync(totals_sums_.get(), 0, totals_sums_.bytes(), stream), "zero totals");
    gpu::check(cudaMemsetAsync(totals_counts_.get(), 0, totals_counts_.bytes(), stream), "zero totals");
    gpu::check(cudaMemsetAsync(totals_squares_.get(), 0, totals_squares_.bytes(), stream), "zero totals");
  }

  int k_;
  int64_t grid_ = 1;
  int64_t filter_grid_ = 1;
  int64_t search_grid_ = 1;
  gpu::DeviceBuffer<uchar4> pixels_;
  // The bounded steps' state: every pixel's label and bounds, consistent with the totals and
  // with the moves since the centroids in moves_ (primed_ once the first step set them).
  bool primed_ = false;
  u8norm::Groups host_groups_{};
  gpu::DeviceBuffer<uint8_t> labels_;
  gpu::DeviceBuffer<float> upper_, lower_;
  gpu::DeviceBuffer<int> queue_;
  gpu::DeviceBuffer<unsigned> queued_, blocks_done_;
  gpu::DeviceBuffer<u8norm::Groups> groups_;
  gpu::DeviceBuffer<u8norm::Moves> moves_;  // two: a filter reads moves_[parity_], writes the other
  int parity_ = 0;
  bool filtered_ = false;      // the queue holds the filter of the current centroids
  bool queue_filled_ = false;  // a filter has filled the queue and no search has emptied it
  gpu::DeviceBuffer<unsigned long long> totals_sums_, totals_counts_, totals_squares_;
};

}  // namespace

std::optional<std::string> u8_norm_refusal(const Problem& problem, const DeviceInfo& device) {
  if (!device.is_gpu) return std::string("needs a CUDA GPU");
  if (problem.n != 3) return "clusters RGB (N = 3), not N = " + std::to_string(problem.n);
  if (problem.k.kmin != problem.k.kmax) return std::string("one K at a time");
  if (problem.k.kmax > kMaxPaletteK) return "K <= " + std::to_string(kMaxPaletteK) + " (one launch, a byte a palette index)";
  if (problem.m > int64_t(INT32_MAX)) return std::string("at most 2^31 - 1 pixels (the search queue's int indices)");
  // The pixels (4 bytes), and the bounded steps' label (1), bounds (4 + 4 · 8) and queue entry (4).
  return gpu::check_fits_in_memory(problem, device, double(problem.m) * 45.0);
}

std::unique_ptr<PreparedRun> prepare_u8_norm_run(const Problem& problem, const Dataset& rgb, const Image& image,
                                                 const DeviceInfo& device) {
  if (auto refusal = u8_norm_refusal(problem, device))
    throw UnsupportedError(std::string(kU8NormPath) + ": " + *refusal);
  if (rgb.m != image.pixel_count() || rgb.n != 3) throw InputError("gpu-u8-norm: the points are not the image's RGB");
  return std::make_unique<U8NormRun>(problem, rgb, image, device);
}

}  // namespace mk
