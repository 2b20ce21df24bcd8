#pragma once
// The update phase of a step (variants/step.hpp) on the device, for every GpuRun: the
// division with frozen Ks and the per-K centroid shift in one small kernel and one small
// read-back, and the empty-cluster policies on the rare steps where a cluster empties.
#include <cuda_runtime.h>

#include <functional>

#include <cstdint>
#include <vector>

#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/step.hpp"

namespace mk::gpu {

class DeviceUpdate {
 public:
  explicit DeviceUpdate(LloydState& state);
  ~DeviceUpdate();
  DeviceUpdate(const DeviceUpdate&) = delete;
  DeviceUpdate& operator=(const DeviceUpdate&) = delete;

  // `refs`: the run's accumulators (the state's, or a kernel's own sums: GpuRun::accumulators()).
  // `after_divide`, if set, runs after each division and the summary's copy are queued on the
  // stream and before the copy is waited for: work a run queues there on the new centroids
  // overlaps the host's round trip.
  StepSummary run(const UpdateOptions& options, const AccumulatorRefs& refs,
                  const std::function<void()>& after_divide = {});

 private:
  // Divides the slots of the Ks whose flag in active_ is set into a fresh summary buffer (their
  // shift and empties, and the inertia), keeping the centroids before it in previous_ when
  // keep_previous; asynchronous, one launch.
  void divide(const std::vector<uint8_t>& active, bool keep_previous);
  // Queues the last division's summary copy into `host` (3 doubles per K), runs after_divide,
  // then waits for the copy.
  void read_summary(double* host, const std::function<void()>& after_divide);
  int relocate_farthest(int k, int empties);
  int relocate_random(int k, uint64_t seed);

  LloydState& state_;
  AccumulatorRefs refs_;
  uint64_t step_ = 0;
  DeviceBuffer<float> previous_;      // the centroids before this update
  DeviceBuffer<uint8_t> active_;      // one flag per K
  // What active_ holds: a step whose flags are the last step's uploads nothing (a copy from
  // pageable memory waits for the stream first). On 4 H200s the sharded N=8 K=3..7 M=256M row
  // went from 1.096 to 1.092 ms with it, within noise (docs/multi-gpu.md).
  std::vector<uint8_t> active_on_device_;
  // Two summaries, each per K: shift, empties (as doubles), inertia. A division fills one and
  // zeroes the other for the next, so no step queues a memset.
  DeviceBuffer<double> summary_;
  int parity_ = 0;                    // the buffer the next division fills
  double* last_summary_ = nullptr;    // the buffer the last division filled
  OwnedEvent summary_copied_{"update summary event", cudaEventDisableTiming};
  OwnedEvent divided_{"update divided event", cudaEventDisableTiming};
  OwnedStream copy_stream_{"update summary copy stream"};  // the summary's read-back (read_summary)
  DeviceBuffer<double> distances_;    // farthest policy: per point, to its nearest centroid
  DeviceBuffer<int32_t> labels_;      // farthest policy: that centroid
  DeviceBuffer<double> block_best_;   // farthest policy: per-block maxima (distance, index)
  double* host_summary_ = nullptr;    // pinned: shift, empties, inertia per K; twice (a redone division)
};

}  // namespace mk::gpu
