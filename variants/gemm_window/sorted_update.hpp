#pragma once
// update=sorted: the kernel only writes each group's labels; a radix sort by label groups
// the points of each centroid, and one pass over runs of equal labels adds the FP64 sums,
// counts and inertia with one atomic per run and dimension, instead of one per point and
// dimension (update=global).
#include <cstdint>
#include <memory>

#include "core/problem.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/gemm_window/config.hpp"

namespace mk::gemm_window {

class SortedUpdate {
 public:
  // wide_gathers: 64-bit gather offsets even where M·N < 2^32 (tests of the path data of 2^32
  // elements or more takes).
  SortedUpdate(const Problem& problem, cudaStream_t stream, bool wide_gathers = false);
  ~SortedUpdate();
  // The labels buffer the kernel writes: [group][m].
  int32_t* labels() const { return labels_.get(); }
  // Sums, counts and inertia of every group, from the labels the kernel wrote. inertia_span > 0:
  // a batch in one launch (k is then one K of B·K slots, each problem's K of them in a row):
  // a slot's squares go to acc.inertia[slot / inertia_span], its problem's.
  void accumulate(const gpu::PointsView& points, const float* centroids, const KRange& k,
                  const gpu::AccumulatorView& acc, cudaStream_t stream, int inertia_span = 0);
  // Device bytes these buffers take (for the footprint), with the CUB scratch estimated.
  static double footprint_bytes(const Problem& problem);

 private:
  int64_t m_;
  bool wide_gathers_;
  gpu::DeviceBuffer<int32_t> labels_, iota_, sorted_labels_, order_;
  gpu::DeviceBuffer<unsigned char> scratch_;
  size_t scratch_bytes_ = 0;
};

}  // namespace mk::gemm_window
