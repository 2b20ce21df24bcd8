#include "variants/common/gpu_lloyd_state.cuh"

#include "variants/common/device_update.cuh"
#include "variants/common/pinned_staging.hpp"
#include "variants/warm_runs.hpp"

#include <algorithm>
#include <optional>
#include <system_error>

namespace mk::gpu {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::string message = std::string(what) + ": " + cudaGetErrorName(status) + " (" +
                        cudaGetErrorString(status) + ")";
  cudaGetLastError();  // clear sticky-free errors so later calls report their own status
  throw DeviceError(message);
}

void check_launch(const char* kernel_name) {
  check(cudaGetLastError(), kernel_name);
}

void allocate_bytes(void** ptr, size_t bytes, const char* what) {
  if (bytes == 0) bytes = 1;
  cudaError_t status = cudaMalloc(ptr, bytes);
  // A run kept warm for the next fit (variants/warm_runs.hpp) is released before the allocation fails.
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    if (release_warm_runs()) status = cudaMalloc(ptr, bytes);
  }
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    throw DeviceError("GPU out of memory allocating " + std::string(what) + ": requested " +
                      std::to_string(bytes >> 20) + " MiB, free " + std::to_string(free_bytes >> 20) +
                      " MiB of " + std::to_string(total_bytes >> 20) + " MiB");
  }
  check(status, what);
}

namespace {

__global__ void transpose_to_soa(const float* __restrict__ aos, float* __restrict__ soa, int64_t m,
                                 int n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < m;
       i += int64_t(gridDim.x) * blockDim.x) {
    for (int d = 0; d < n; ++d) soa[int64_t(d) * m + i] = aos[i * n + d];
  }
}

// One thread per centroid value: new centroid = sum/count; an empty cluster keeps its
// previous centroid (the documented default policy). A thread a slot walking its N values
// took 0.32 ms for 1000 × 768 values (4 blocks, each thread's loads N apart; ncu, H200,
// 397ceb9, mainstream-limiters.txt).
__global__ void divide_sums(const double* __restrict__ sums,
                            const unsigned long long* __restrict__ counts,
                            float* __restrict__ centroids, int slots, int n) {
  const int64_t values = int64_t(slots) * n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < values; i += int64_t(gridDim.x) * blockDim.x) {
    const unsigned long long count = counts[i / n];
    if (count == 0) continue;
    const double inv = 1.0 / double(count);
    centroids[i] = float(sums[i] * inv);
  }
}

}  // namespace

LloydState::LloydState(const Problem& problem, const Dataset& data, Layout layout)
    : problem_(problem), capacity_(problem.m), layout_(layout) {
  if (problem.streamed && layout != Layout::AoS)
    throw UnsupportedError("layout=soa transposes the points when it uploads them, so it cannot take streamed "
                           "chunks (out-of-core): use layout=aos");
  if (!problem.streamed && (data.m != problem.m || data.n != problem.n ||
                            !data.holds_rows()))
    throw InputError("the dataset is " + std::to_string(data.m) + " x " + std::to_string(data.n) +
                     " but the problem is " + problem.str());
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  const size_t values = size_t(problem.m) * problem.n;
  const int slots = problem.k.sum();
  const int64_t padded_points =
      layout == Layout::AoS ? (problem.m + kAosPointPadding - 1) / kAosPointPadding * kAosPointPadding : problem.m;
  points_.allocate(size_t(padded_points) * problem.n, "points");
  // Uploads go on the run's own stream. A cudaMemcpy from pageable memory runs on the
  // legacy stream and may return before its DMA lands; stream_ is non-blocking, so a
  // kernel on it could read half-uploaded points (seen as wrong labels on the first step
  // of SoA runs: the transpose read a partly filled staging buffer).
  if (problem.streamed) {
    // No values yet: the chunked runner writes each chunk here (points_slot()).
    check(cudaMemsetAsync(points_.get(), 0, points_.bytes(), stream_), "zero the chunk buffer");
  } else if (layout == Layout::AoS) {
    check(cudaMemcpyAsync(points_.get(), data.points(), values * sizeof(float), cudaMemcpyHostToDevice,
                          stream_),
          "upload points");
    check(cudaMemsetAsync(points_.get() + values, 0, (size_t(padded_points) * problem.n - values) * sizeof(float),
                          stream_),
          "zero the padding rows");
    check(cudaStreamSynchronize(stream_), "upload points");
  } else if (layout == Layout::SoA) {
    // Transposing on the device keeps host memory at one copy of the data.
    DeviceBuffer<float> staging(values, "points staging for SoA transpose");
    check(cudaMemcpyAsync(staging.get(), data.points(), values * sizeof(float), cudaMemcpyHostToDevice,
                          stream_),
          "upload points");
    transpose_to_soa<<<1024, 256, 0, stream_>>>(staging.get(), points_.get(), problem.m, problem.n);
    check_launch("transpose_to_soa");
    check(cudaStreamSynchronize(stream_), "transpose_to_soa");
  }
  centroids_.allocate(size_t(slots) * problem.n, "centroids");
  sums_.allocate(size_t(slots) * problem.n, "centroid sums");
  counts_.allocate(slots, "cluster counts");
  inertia_.allocate(problem.k.count(), "inertia");
  check(cudaStreamSynchronize(stream_), "prepare the run's buffers");
}

LloydState::~LloydState() {
  if (stream_) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
}

void LloydState::set_centroids(const std::vector<float>& packed) {
  const size_t expected = size_t(problem_.k.sum()) * problem_.n;
  if (packed.size() != expected)
    throw InputError("centroid array has " + std::to_string(packed.size()) + " values, expected " +
                     std::to_string(expected));
  check(cudaMemcpyAsync(centroids_.get(), packed.data(), expected * sizeof(float),
                        cudaMemcpyHostToDevice, stream_),
        "upload centroids");
  check(cudaStreamSynchronize(stream_), "upload centroids");
}

void LloydState::zero_accumulators() {
  check(cudaMemsetAsync(sums_.get(), 0, sums_.bytes(), stream_), "zero sums");
  check(cudaMemsetAsync(counts_.get(), 0, counts_.bytes(), stream_), "zero counts");
  check(cudaMemsetAsync(inertia_.get(), 0, inertia_.bytes(), stream_), "zero inertia");
}

void LloydState::set_point_count(int64_t rows) {
  if (!problem_.streamed) throw UnsupportedError("set_point_count: the run's points are not streamed");
  if (rows < 1 || rows > capacity_)
    throw InputError("a chunk of " + std::to_string(rows) + " points does not fit a buffer of " +
                     std::to_string(capacity_));
  problem_.m = rows;
  const int64_t padded = (rows + kAosPointPadding - 1) / kAosPointPadding * kAosPointPadding;
  if (padded > rows)
    check(cudaMemsetAsync(points_.get() + size_t(rows) * problem_.n, 0,
                          size_t(padded - rows) * problem_.n * sizeof(float), stream_),
          "zero the chunk's padding rows");
}

void LloydState::ensure_labels() {
  if (!labels_.get()) labels_.allocate(size_t(problem_.k.count()) * capacity_, "labels");
}

AccumulatorView LloydState::accumulators(bool with_labels) {
  if (with_labels) ensure_labels();
  labels_valid_ = with_labels;
  return {sums_.get(), counts_.get(), inertia_.get(), with_labels ? labels_.get() : nullptr};
}

AccumulatorRefs LloydState::accumulator_refs() {
  AccumulatorRefs refs;
  refs.sums = sums_.get();
  refs.counts = counts_.get();
  refs.inertia = inertia_.get();
  refs.slots = problem_.k.sum();
  refs.n = problem_.n;
  refs.k_count = problem_.k.count();
  refs.on_device = true;
  refs.stream = stream_;
  return refs;
}

void LloydState::finalize() {
  if (division_deferred_) {
    ++deferred_finalize_calls_;
    return;
  }
  const int slots = problem_.k.sum();
  const int64_t values = int64_t(slots) * problem_.n;
  const int blocks = int(std::min<int64_t>((values + 255) / 256, 4096));
  divide_sums<<<blocks, 256, 0, stream_>>>(sums_.get(), counts_.get(), centroids_.get(), slots, problem_.n);
  check_launch("divide_sums");
}

void LloydState::set_active_ks(const std::vector<uint8_t>& active) {
  every_k_active_ = std::all_of(active.begin(), active.end(), [](uint8_t flag) { return flag != 0; });
  if (every_k_active_ || active == active_ks_host_) return;
  if (active.size() != size_t(problem_.k.count()))
    throw DeviceError("active-K flags for " + std::to_string(active.size()) + " Ks, the range has " +
                      std::to_string(problem_.k.count()));
  if (!active_ks_.get()) active_ks_.allocate(active.size(), "active-K flags");
  active_ks_host_ = active;
  check(cudaMemcpyAsync(active_ks_.get(), active_ks_host_.data(), active.size(), cudaMemcpyHostToDevice, stream_),
        "upload active-K flags");
}

IterationResult LloydState::read_back() {
  check(cudaStreamSynchronize(stream_), "iteration");
  const int slots = problem_.k.sum();
  const int n = problem_.n;
  std::vector<float> centroids(size_t(slots) * n);
  std::vector<unsigned long long> counts(slots);
  std::vector<double> inertia(problem_.k.count());
  check(cudaMemcpy(centroids.data(), centroids_.get(), centroids.size() * sizeof(float), cudaMemcpyDeviceToHost),
        "read centroids");
  check(cudaMemcpy(counts.data(), counts_.get(), counts.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost),
        "read counts");
  check(cudaMemcpy(inertia.data(), inertia_.get(), inertia.size() * sizeof(double), cudaMemcpyDeviceToHost),
        "read inertia");
  IterationResult result;
  std::vector<LabelValues> ready;  // ready_host_labels' memory, taken by a read-back with labels
  if (labels_valid_ && ready_labels_.valid()) ready = ready_labels_.get();
  for (int k = problem_.k.kmin; k <= problem_.k.kmax; ++k) {
    const int index = k - problem_.k.kmin;
    const int offset = problem_.k.slot_offset(k);
    KResult r;
    r.k = k;
    r.centroids.assign(centroids.begin() + size_t(offset) * n, centroids.begin() + size_t(offset + k) * n);
    r.counts.assign(counts.begin() + offset, counts.begin() + offset + k);
    r.inertia = inertia[index];
    if (labels_valid_) {
      if (size_t(index) < ready.size()) r.labels = std::move(ready[size_t(index)]);
      download_labels_into(r.labels, labels_.get() + size_t(index) * problem_.m, size_t(problem_.m), stream_);
    }
    result.per_k.push_back(std::move(r));
  }
  return result;
}

void LloydState::ready_host_labels() {
  if (ready_labels_.valid()) return;  // readied already, not yet taken
  try {
    ready_labels_ = ready_label_values(size_t(problem_.k.count()), size_t(problem_.m));
  } catch (const std::system_error&) {
    // No thread to spare: a hint only, so the read-back allocates its memory as it goes.
  }
}

GpuRun::GpuRun(const Problem& problem, const Dataset& data, Layout layout) : state_(problem, data, layout) {}
GpuRun::~GpuRun() = default;

void GpuRun::synchronize() { check(cudaStreamSynchronize(state_.stream()), "iteration"); }

void GpuRun::accumulate(const AccumulateOptions& options) {
  const int before = state_.deferred_finalize_calls();
  state_.set_division_deferred(true);
  state_.set_active_ks(options.active);
  try {
    iterate(options.store_labels);
  } catch (...) {
    state_.set_division_deferred(false);
    state_.set_active_ks({});
    throw;
  }
  state_.set_division_deferred(false);
  state_.set_active_ks({});  // a timed iterate() afterwards passes over every K
  if (state_.deferred_finalize_calls() == before)
    throw UnsupportedError(
        "this run divides inside its own kernel, so it cannot leave the sums for an update phase");
}

PointsSlot GpuRun::points_slot() {
  if (!state_.problem().streamed)
    throw UnsupportedError("points_slot: this run was prepared on points that do not change");
  PointsSlot slot;
  slot.points = state_.points_mutable();
  slot.capacity = state_.capacity();
  slot.n = state_.problem().n;
  slot.on_device = true;
  slot.stream = state_.stream();
  return slot;
}

StepSummary GpuRun::update(const UpdateOptions& options) {
  if (!update_) update_ = std::make_unique<DeviceUpdate>(state_);
  return update_->run(options, accumulators(), [this] { centroids_updated(); });
}

std::optional<std::string> check_fits_in_memory(const Problem& problem, const DeviceInfo& device,
                                                double extra_bytes) {
  // Points (twice while transposing to SoA), labels for verification, accumulators.
  double need = 2.0 * problem.data_bytes() + double(problem.k.count()) * problem.m * 4.0 +
                double(problem.k.sum()) * problem.n * 12.0 + extra_bytes;
  if (device.global_mem_bytes > 0 && need > 0.9 * double(device.global_mem_bytes))
    return "needs about " + std::to_string(int64_t(need / (1 << 20))) + " MiB of device memory, device has " +
           std::to_string(device.global_mem_bytes >> 20) + " MiB";
  return std::nullopt;
}

}  // namespace mk::gpu
