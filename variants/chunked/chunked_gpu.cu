// The GPU out-of-core run (variants/chunked/chunked_run.hpp): two slot runs of the variant,
// each on its own stream, take the chunks in turn, so the DMA of chunk c+1 (slot 1's stream)
// overlaps the accumulation of chunk c (slot 0's). Each slot adds its chunk's FP64 sums,
// counts and inertia into its own device totals with add_totals; the step ends by adding
// slot 1's totals into slot 0's on the run's own stream (a fixed order) and reading them back
// for the division on the host (chunked_base.hpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <array>

#include "core/errors.hpp"
#include "variants/chunked/chunked_base.hpp"
#include "variants/chunked/rows_to_device.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/common/pinned_staging.hpp"

namespace mk::chunked {
namespace {

using gpu::check;
using gpu::check_launch;
using gpu::DeviceBuffer;

__global__ void add_totals(double* __restrict__ total_sums, const double* __restrict__ sums, int64_t sum_count,
                           unsigned long long* __restrict__ total_counts, const unsigned long long* __restrict__ counts,
                           int slots, double* __restrict__ total_inertia, const double* __restrict__ inertia,
                           int k_count) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < sum_count; i += stride) total_sums[i] += sums[i];
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < slots; i += stride) total_counts[i] += counts[i];
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < k_count; i += stride)
    total_inertia[i] += inertia[i];
}

struct Totals {
  DeviceBuffer<double> sums;
  DeviceBuffer<unsigned long long> counts;
  DeviceBuffer<double> inertia;
};

void launch_add(Totals& into, const double* sums, const unsigned long long* counts, const double* inertia, int slots,
                int n, int k_count, cudaStream_t stream) {
  const int64_t sum_count = int64_t(slots) * n;
  const int blocks = int(std::min<int64_t>(1024, (sum_count + 255) / 256));
  add_totals<<<blocks, 256, 0, stream>>>(into.sums.get(), sums, sum_count, into.counts.get(), counts, slots,
                                         into.inertia.get(), inertia, k_count);
  check_launch("add_totals");
}

class GpuChunkedRun : public ChunkedRunBase {
 public:
  GpuChunkedRun(const Variant& variant, const Problem& problem, const ChunkSource& source, int64_t chunk_points,
                const Params& params, const DeviceInfo& device)
      : ChunkedRunBase(problem, source, chunk_points) {
    const Problem chunk = chunk_problem(problem, chunk_points_);
    Dataset none;
    none.m = chunk.m;
    none.n = problem.n;
    const int slots = problem.k.sum();
    for (int s = 0; s < kGpuChunkSlots; ++s) {
      runs_[s] = variant.prepare(chunk, none, params, device);
      if (!runs_[s]) throw DeviceError("variant " + variant.name() + " returned no prepared run");
      totals_[s].sums.allocate(size_t(slots) * problem.n, "out-of-core sums");
      totals_[s].counts.allocate(size_t(slots), "out-of-core counts");
      totals_[s].inertia.allocate(size_t(problem.k.count()), "out-of-core inertia");
      check(cudaEventCreateWithFlags(&done_[s], cudaEventDisableTiming), "cudaEventCreate");
    }
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreateWithFlags(&start_, cudaEventDisableTiming), "cudaEventCreate");
    // Page-locking the rows once lets every chunk go by one DMA straight from them. Where the
    // host refuses (a locked-memory limit), the chunks are staged through a ring of small pinned
    // buffers (variants/common/pinned_staging.hpp), as are the chunks of a memory-mapped file
    // (locking it would hold the whole file in RAM): 52.2 of the 55.4 GB/s pinned H2D from a
    // mapped file in the page cache on an H200 host (reports/results/nvidia-h200/load.txt).
    // A generator's chunks are made by the variant's own kernel where it reads its points
    // (PreparedRun::reads_generated_rows: registers-multik on uniform rows), else by a kernel
    // of their own into the slot's buffer (generated_chunk.hpp), else on the host into the ring.
    // At N=8 K=3..7 over 256M points on an H200, the separate kernel's chunks took 1.194x the
    // in-core step (reports/results/nvidia-h200/ooc-generated.json): their 8.6 GB written
    // and read again an iteration do not overlap the accumulation's persistent grid.
    const size_t bytes = size_t(problem.m) * problem.n * sizeof(float);
    if (!rows_need_staging(source)) {
      generated_on_device_ = true;
      generated_in_kernel_ = runs_[0]->reads_generated_rows(*source.generator);
    } else if (!source.mapped_file && !source.generator &&
               cudaHostRegister(const_cast<float*>(source.rows), bytes, cudaHostRegisterPortable) == cudaSuccess) {
      registered_ = true;
    } else {
      cudaGetLastError();
      staging_ = std::make_unique<gpu::PinnedStaging>();
    }
  }

  ~GpuChunkedRun() override {
    for (auto& run : runs_)
      if (run) cudaStreamSynchronize(static_cast<cudaStream_t>(run->stream()));
    if (stream_) cudaStreamSynchronize(stream_);
    if (registered_) cudaHostUnregister(const_cast<float*>(source_.rows));
    for (int s = 0; s < kGpuChunkSlots; ++s) {
      if (done_[s]) cudaEventDestroy(done_[s]);
    }
    if (start_) cudaEventDestroy(start_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  ChunkedRunInfo info() const override {
    return {chunk_points_, chunks_, kGpuChunkSlots,
            generated_in_kernel_   ? "generated in the variant's kernel"
            : generated_on_device_ ? "generated on the device"
            : registered_          ? "registered"
                                   : "staged",
            source_.description};
  }

  void* stream() override { return stream_; }
  void synchronize() override { check(cudaStreamSynchronize(stream_), "out-of-core iteration"); }

  void accumulate(const AccumulateOptions& options) override {
    begin_step(options.store_labels);
    const int n = problem_.n, slots = problem_.k.sum(), k_count = problem_.k.count();
    for (auto& totals : totals_) {
      check(cudaMemsetAsync(totals.sums.get(), 0, totals.sums.bytes(), stream_), "zero out-of-core sums");
      check(cudaMemsetAsync(totals.counts.get(), 0, totals.counts.bytes(), stream_), "zero out-of-core counts");
      check(cudaMemsetAsync(totals.inertia.get(), 0, totals.inertia.bytes(), stream_), "zero out-of-core inertia");
    }
    // The slots start after the run's stream (a timer's start event, the zeroed totals).
    check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    for (auto& run : runs_)
      check(cudaStreamWaitEvent(static_cast<cudaStream_t>(run->stream()), start_, 0), "cudaStreamWaitEvent");
    for (int64_t c = 0; c < chunks_; ++c) {
      const int s = int(c % kGpuChunkSlots);
      PreparedRun& run = *runs_[s];
      const PointsSlot slot = run.points_slot();
      if (!slot.on_device) throw DeviceError("a GPU run's chunk buffer is not on the device");
      const cudaStream_t stream = static_cast<cudaStream_t>(slot.stream);
      const int64_t rows = chunk_rows(c);
      const size_t bytes = size_t(rows) * n * sizeof(float);
      if (generated_in_kernel_) {
        run.set_generated_rows(*source_.generator, chunk_first(c));
      } else if (registered_) {
        check(cudaMemcpyAsync(slot.points, chunk_rows_at(c), bytes, cudaMemcpyHostToDevice, stream), "chunk upload");
      } else {
        rows_to_device(source_, chunk_first(c), rows, slot.points, stream, staging_.get());
      }
      run.set_point_count(rows);
      run.accumulate(options);
      const AccumulatorRefs refs = run.accumulators();
      if (!refs.on_device || refs.stream != slot.stream)
        throw DeviceError("a GPU run's accumulators are not on its chunk stream");
      launch_add(totals_[s], refs.sums, refs.counts, refs.inertia, slots, n, k_count, stream);
      if (options.store_labels) {
        run.synchronize();
        add_chunk_labels(chunk_first(c), run.read_back());
      }
    }
    for (int s = 0; s < kGpuChunkSlots; ++s) {
      check(cudaEventRecord(done_[s], static_cast<cudaStream_t>(runs_[s]->stream())), "cudaEventRecord");
      check(cudaStreamWaitEvent(stream_, done_[s], 0), "cudaStreamWaitEvent");
    }
    for (int s = 1; s < kGpuChunkSlots; ++s)
      launch_add(totals_[0], totals_[s].sums.get(), totals_[s].counts.get(), totals_[s].inertia.get(), slots, n,
                 k_count, stream_);
    check(cudaMemcpyAsync(sums_.data(), totals_[0].sums.get(), totals_[0].sums.bytes(), cudaMemcpyDeviceToHost,
                          stream_),
          "read out-of-core sums");
    check(cudaMemcpyAsync(counts_.data(), totals_[0].counts.get(), totals_[0].counts.bytes(),
                          cudaMemcpyDeviceToHost, stream_),
          "read out-of-core counts");
    check(cudaMemcpyAsync(inertia_.data(), totals_[0].inertia.get(), totals_[0].inertia.bytes(),
                          cudaMemcpyDeviceToHost, stream_),
          "read out-of-core inertia");
    synchronize();
    end_step();
  }

 protected:
  void push_centroids() override {
    for (auto& run : runs_) run->set_centroids(centroids_);
  }

 private:
  std::array<std::unique_ptr<PreparedRun>, kGpuChunkSlots> runs_;
  std::array<Totals, kGpuChunkSlots> totals_;
  std::array<cudaEvent_t, kGpuChunkSlots> done_{};
  std::unique_ptr<gpu::PinnedStaging> staging_;  // staged chunks only
  cudaEvent_t start_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool registered_ = false;
  bool generated_on_device_ = false;
  bool generated_in_kernel_ = false;  // the slot runs make the rows themselves (set_generated_rows)
};

}  // namespace

std::unique_ptr<ChunkedRun> prepare_gpu_chunked(const Variant& variant, const Problem& problem,
                                                const ChunkSource& source, int64_t chunk_points, const Params& params,
                                                const DeviceInfo& device) {
  return std::make_unique<GpuChunkedRun>(variant, problem, source, chunk_points, params, device);
}

}  // namespace mk::chunked
