#pragma once
// Device-side state every GPU variant shares: points (in the requested layout), packed
// centroids for every K of the range, FP64 accumulators, counts, inertia and optional
// labels. Variants write only their assignment/accumulation kernels; uploads, the final
// division and read-back live here once.
#include <cuda_runtime.h>

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "core/errors.hpp"
#include "core/problem.hpp"
#include "variants/variant.hpp"

namespace mk::gpu {

// Throws DeviceError; an allocation failure names the bytes requested and what is free.
void check(cudaError_t status, const char* what);
void check_launch(const char* kernel_name);

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count, const char* what = "buffer") { allocate(count, what); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(other.ptr_), count_(other.count_) {
    other.ptr_ = nullptr;
    other.count_ = 0;
  }
  void allocate(size_t count, const char* what);
  void release() {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    count_ = 0;
  }
  T* get() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

void allocate_bytes(void** ptr, size_t bytes, const char* what);

// Owners of a non-blocking stream and of an event, for the applications' GPU paths (k-means++
// seeding, streaming k-means); `what` names the owner in a creation error.
class OwnedStream {
 public:
  explicit OwnedStream(const char* what) { check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), what); }
  ~OwnedStream() { cudaStreamDestroy(stream_); }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class OwnedEvent {
 public:
  OwnedEvent(const char* what, unsigned flags) { check(cudaEventCreateWithFlags(&event_, flags), what); }
  ~OwnedEvent() { cudaEventDestroy(event_); }
  OwnedEvent(const OwnedEvent&) = delete;
  OwnedEvent& operator=(const OwnedEvent&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

template <typename T>
void DeviceBuffer<T>::allocate(size_t count, const char* what) {
  release();
  void* raw = nullptr;
  allocate_bytes(&raw, count * sizeof(T), what);
  ptr_ = static_cast<T*>(raw);
  count_ = count;
}

// Read-only view of the points a kernel indexes; layout decides the stride.
struct PointsView {
  const float* data;
  int64_t m;
  int n;
  bool soa;
  __host__ __device__ float at(int64_t i, int d) const {
    return soa ? data[static_cast<int64_t>(d) * m + i] : data[i * n + d];
  }
};

// The K range as kernels see it.
struct KRangeView {
  int kmin, kmax, slots;
  __host__ __device__ int count() const { return kmax - kmin + 1; }
  __host__ __device__ int offset(int k) const { return (kmin + k - 1) * (k - kmin) / 2; }
};

struct AccumulatorView {
  double* sums;                 // slots*n
  unsigned long long* counts;   // slots
  double* inertia;              // one per K
  int32_t* labels;              // (kmax-kmin+1)*m or null
};

// The AoS padding rows (declared beside the footprint that counts them, variants/variant.hpp).
using ::mk::kAosPointPadding;

class LloydState {
 public:
  LloydState(const Problem& problem, const Dataset& data, Layout layout);
  ~LloydState();
  LloydState(const LloydState&) = delete;
  LloydState& operator=(const LloydState&) = delete;

  void set_centroids(const std::vector<float>& packed);
  void zero_accumulators();             // async, start of an iteration
  // Streamed problems (out-of-core): the chunked runner has written `rows` points into the
  // points buffer (AoS); the next steps read that many, and the padding rows after them are
  // zeroed again (kernels may read up to the next multiple of kAosPointPadding).
  void set_point_count(int64_t rows);
  int64_t capacity() const { return capacity_; }
  float* points_mutable() { return points_.get(); }
  void ensure_labels();                 // allocate labels on first request
  // Divide sums by counts into centroids; empty clusters keep their previous centroid.
  // While the division is deferred (a run's accumulate phase), it only counts the call: the
  // update phase divides later, with the application's policies (device_update.cuh).
  void finalize();
  void set_division_deferred(bool deferred) { division_deferred_ = deferred; }
  int deferred_finalize_calls() const { return deferred_finalize_calls_; }
  AccumulatorRefs accumulator_refs();
  IterationResult read_back();
  // Host memory for the labels of the next read_back, readied on a thread of its own
  // (gpu::ready_label_values) while the steps run.
  void ready_host_labels();
  // The Ks a split step still moves (AccumulateOptions::active), for kernels that can leave a
  // frozen K out: active_ks() is nullptr while every K moves, else one byte a K on the device.
  void set_active_ks(const std::vector<uint8_t>& active);
  const uint8_t* active_ks() const { return every_k_active_ ? nullptr : active_ks_.get(); }

  PointsView points() const { return {points_.get(), problem_.m, problem_.n, layout_ == Layout::SoA}; }
  KRangeView k_range() const { return {problem_.k.kmin, problem_.k.kmax, problem_.k.sum()}; }
  AccumulatorView accumulators(bool with_labels);
  const float* centroids() const { return centroids_.get(); }
  float* centroids_mutable() { return centroids_.get(); }
  const Problem& problem() const { return problem_; }
  Layout layout() const { return layout_; }
  cudaStream_t stream() const { return stream_; }

 private:
  Problem problem_;
  int64_t capacity_ = 0;  // points the buffers hold (problem_.m may be less for a streamed chunk)
  Layout layout_;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer<float> points_;
  DeviceBuffer<float> centroids_;
  DeviceBuffer<double> sums_;
  DeviceBuffer<unsigned long long> counts_;
  DeviceBuffer<double> inertia_;
  DeviceBuffer<int32_t> labels_;
  DeviceBuffer<uint8_t> active_ks_;
  std::vector<uint8_t> active_ks_host_;  // what active_ks_ holds
  bool every_k_active_ = true;
  bool labels_valid_ = false;
  std::future<std::vector<LabelValues>> ready_labels_;  // ready_host_labels' lists, one a K
  bool division_deferred_ = false;
  int deferred_finalize_calls_ = 0;
};

class DeviceUpdate;

// Base for GPU variants: owns a LloydState and forwards the PreparedRun plumbing. Its
// accumulate() runs the variant's iterate() with the state's division deferred, so every
// variant whose iteration ends in LloydState::finalize() splits its step with no code of
// its own; a run that divides inside its kernel is detected and refused.
class GpuRun : public PreparedRun {
 public:
  GpuRun(const Problem& problem, const Dataset& data, Layout layout);
  ~GpuRun() override;
  void set_centroids(const std::vector<float>& packed) override { state_.set_centroids(packed); }
  void synchronize() override;
  IterationResult read_back() override { return state_.read_back(); }
  void* stream() override { return state_.stream(); }
  void accumulate(const AccumulateOptions& options) override;
  AccumulatorRefs accumulators() override { return state_.accumulator_refs(); }
  StepSummary update(const UpdateOptions& options) override;
  // Streamed problems: the state's AoS points buffer (SoA runs refuse: they transpose when
  // they upload).
  PointsSlot points_slot() override;
  void set_point_count(int64_t rows) override { state_.set_point_count(rows); }
  void expect_labels_read_back() override { state_.ready_host_labels(); }

 protected:
  // Called by update() once the new centroids are queued on the stream, before it waits for
  // the step's summary: work queued here overlaps that round trip (gpu-u8-norm's filter).
  virtual void centroids_updated() {}

  LloydState state_;

 private:
  std::unique_ptr<DeviceUpdate> update_;
};

// Runtime capability checks shared by can_implement implementations.
std::optional<std::string> check_fits_in_memory(const Problem& problem, const DeviceInfo& device,
                                                double extra_bytes = 0);

}  // namespace mk::gpu
