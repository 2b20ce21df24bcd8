#include "variants/common/device_update.cuh"

#include <algorithm>
#include <cstring>

#include "variants/common/host_update.hpp"

namespace mk::gpu {
namespace {

__device__ int k_of_slot(const KRangeView& ks, int slot) {
  int k = ks.kmin;
  while (k < ks.kmax && ks.offset(k + 1) <= slot) ++k;
  return k;
}

// Sum/count into the centroid for the active Ks; an empty slot keeps its centroid and is
// counted; each K's Σ‖c_new − c_old‖² goes to summary[k - kmin]. A group of `lanes` threads (a
// power of two up to 32, about N) takes a slot, its lanes over the coordinates, so a row is
// read coalesced: one thread a slot took 345 µs a step at N=784, ΣK=209 (Fashion-MNIST's
// fit --k 2..20 on an H200, ncu at 8f3971d), the whole row walked by one thread.
//
// One launch is the whole update on the device: it also keeps the centroids before it in
// `previous` (keep_previous), copies the accumulated inertia into the summary's third part, and
// zeroes `next_summary`, the summary buffer of the next launch, so a step queues no copy or
// memset of its own besides the summary's read-back. Against a copy of the centroids, a memset
// and two read-backs a step, quantize's 100 steps (1024x1024, K=255) went from 10.50 to 10.08 ms
// (medians of 7, one H200, b75139d).
__global__ void divide_active(const double* __restrict__ sums, const unsigned long long* __restrict__ counts,
                              const double* __restrict__ inertia, float* __restrict__ previous, bool keep_previous,
                              float* __restrict__ centroids, const uint8_t* __restrict__ active, KRangeView ks,
                              int n, int lanes, double* __restrict__ summary, double* __restrict__ next_summary) {
  if (blockIdx.x == 0) {
    for (int i = threadIdx.x; i < 3 * ks.count(); i += blockDim.x) next_summary[i] = 0.0;
    for (int i = threadIdx.x; i < ks.count(); i += blockDim.x) summary[2 * ks.count() + i] = inertia[i];
  }
  const int lane = threadIdx.x & 31;
  const int group = lane / lanes, member = lane % lanes, groups_per_warp = 32 / lanes;
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int warps = gridDim.x * blockDim.x / 32;
  // Warp-uniform trip count: every lane reaches the shuffles.
  for (int base = warp * groups_per_warp; base < ks.slots; base += warps * groups_per_warp) {
    const int s = base + group;
    int index = 0;
    bool moving = false;
    unsigned long long count = 0;
    if (s < ks.slots) {
      index = k_of_slot(ks, s) - ks.kmin;
      count = counts[s];
      moving = active[index] && count != 0;
      if (active[index] && count == 0 && member == 0) atomicAdd(&summary[ks.count() + index], 1.0);
    }
    double shift = 0;
    if (moving) {
      const double inv = 1.0 / double(count);
      for (int d = member; d < n; d += lanes) {
        const float before = centroids[int64_t(s) * n + d];
        if (keep_previous) previous[int64_t(s) * n + d] = before;
        const float updated = float(sums[int64_t(s) * n + d] * inv);
        const double diff = double(updated) - double(before);
        shift += diff * diff;
        centroids[int64_t(s) * n + d] = updated;
      }
    } else if (keep_previous && s < ks.slots) {
      for (int d = member; d < n; d += lanes) previous[int64_t(s) * n + d] = centroids[int64_t(s) * n + d];
    }
    for (int offset = lanes / 2; offset > 0; offset >>= 1) shift += __shfl_xor_sync(0xffffffffu, shift, offset);
    if (moving && member == 0) atomicAdd(&summary[index], shift);
  }
}

int lanes_per_slot(int n) {
  int lanes = 1;
  while (lanes < 32 && lanes < n) lanes *= 2;
  return lanes;
}

// Farthest policy: each point's squared distance (FP64) to its nearest centroid of one K,
// measured from the centroids before the update, as scikit-learn's relocation does.
__global__ void nearest_of_k(PointsView points, const float* __restrict__ centroids, int k,
                             double* __restrict__ distances, int32_t* __restrict__ labels) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < points.m;
       i += int64_t(gridDim.x) * blockDim.x) {
    double best = 0;
    int best_c = -1;
    for (int c = 0; c < k; ++c) {
      double d2 = 0;
      for (int d = 0; d < points.n; ++d) {
        const double diff = double(points.at(i, d)) - double(centroids[int64_t(c) * points.n + d]);
        d2 += diff * diff;
      }
      if (best_c < 0 || d2 < best) best = d2, best_c = c;
    }
    distances[i] = best;
    labels[i] = best_c;
  }
}

// (distance, index) maxima, the lower index winning a tie; taken points carry distance -1.
struct Far {
  double distance;
  int64_t index;
};
__device__ bool farther(const Far& a, const Far& b) {
  return a.distance != b.distance ? a.distance > b.distance : a.index < b.index;
}

constexpr int kReduceThreads = 256;

__global__ void block_farthest(const double* __restrict__ distances, int64_t m, double* __restrict__ out) {
  __shared__ Far best[kReduceThreads];
  Far mine{-2.0, -1};
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < m; i += int64_t(gridDim.x) * blockDim.x) {
    const Far candidate{distances[i], i};
    if (farther(candidate, mine)) mine = candidate;
  }
  best[threadIdx.x] = mine;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride && farther(best[threadIdx.x + stride], best[threadIdx.x]))
      best[threadIdx.x] = best[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = best[0].distance;
    out[2 * blockIdx.x + 1] = double(best[0].index);  // exact below 2^53 points
  }
}

// Moves point i into slot `to` (its sums become the point, its count 1); when `from` >= 0 the
// point also leaves slot `from`.
__global__ void move_point(PointsView points, int64_t i, int from, int to, double* __restrict__ sums,
                           unsigned long long* __restrict__ counts, double* __restrict__ distances) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  for (int d = 0; d < points.n; ++d) {
    const double x = points.at(i, d);
    if (from >= 0) sums[int64_t(from) * points.n + d] -= x;
    sums[int64_t(to) * points.n + d] = x;
  }
  if (from >= 0) counts[from] -= 1;
  counts[to] = 1;
  if (distances) distances[i] = -1.0;
}

}  // namespace

DeviceUpdate::DeviceUpdate(LloydState& state) : state_(state) {
  const Problem& p = state.problem();
  previous_.allocate(size_t(p.k.sum()) * p.n, "centroids before the update");
  active_.allocate(size_t(p.k.count()), "active-K flags");
  summary_.allocate(size_t(6) * p.k.count(), "update summaries");
  check(cudaMemsetAsync(summary_.get(), 0, summary_.bytes(), state.stream()), "zero the update summaries");
  check(cudaMallocHost(reinterpret_cast<void**>(&host_summary_), sizeof(double) * 6 * p.k.count()),
        "pinned update summary");
}

DeviceUpdate::~DeviceUpdate() {
  if (host_summary_) cudaFreeHost(host_summary_);
}

void DeviceUpdate::divide(const std::vector<uint8_t>& active, bool keep_previous) {
  const Problem& p = state_.problem();
  cudaStream_t stream = state_.stream();
  if (active != active_on_device_) {
    check(cudaMemcpyAsync(active_.get(), active.data(), active.size(), cudaMemcpyHostToDevice, stream),
          "upload active-K flags");
    active_on_device_ = active;
  }
  const int slots = p.k.sum();
  const int lanes = lanes_per_slot(p.n);
  const int64_t threads = int64_t(slots) * lanes;
  const size_t part = size_t(3) * p.k.count();
  double* summary = summary_.get() + size_t(parity_) * part;
  double* next_summary = summary_.get() + size_t(1 - parity_) * part;
  divide_active<<<unsigned((threads + 255) / 256), 256, 0, stream>>>(
      refs_.sums, refs_.counts, refs_.inertia, previous_.get(), keep_previous, state_.centroids_mutable(),
      active_.get(), state_.k_range(), p.n, lanes, summary, next_summary);
  check_launch("divide_active");
  last_summary_ = summary;
  parity_ = 1 - parity_;
}

void DeviceUpdate::read_summary(double* host, const std::function<void()>& after_divide) {
  const int kc = state_.problem().k.count();
  cudaStream_t stream = state_.stream();
  // The copy goes on a stream of its own, behind the division: work the run queues in
  // after_divide (quantize's filter of the next step) starts without waiting for it, and runs
  // while the host reads the summary. On an H200 (ed14899, 1024x1024 K=255 100 steps) the
  // quantize steps took 9.65 ms this way against 10.17 with the copy on the run's stream.
  check(cudaEventRecord(divided_.get(), stream), "update");
  check(cudaStreamWaitEvent(copy_stream_.get(), divided_.get(), 0), "update");
  check(cudaMemcpyAsync(host, last_summary_, sizeof(double) * 3 * kc, cudaMemcpyDeviceToHost, copy_stream_.get()),
        "read update summary");
  check(cudaEventRecord(summary_copied_.get(), copy_stream_.get()), "update");
  if (after_divide) after_divide();
  check(cudaEventSynchronize(summary_copied_.get()), "update");
}

int DeviceUpdate::relocate_farthest(int k, int empties) {
  const Problem& p = state_.problem();
  cudaStream_t stream = state_.stream();
  if (!distances_.get()) {
    distances_.allocate(size_t(p.m), "farthest-point distances");
    labels_.allocate(size_t(p.m), "farthest-point labels");
  }
  const int blocks = int(std::min<int64_t>(1024, (p.m + kReduceThreads - 1) / kReduceThreads));
  if (block_best_.size() < size_t(2 * blocks)) block_best_.allocate(size_t(2 * blocks), "farthest-point maxima");
  const int base = p.k.slot_offset(k);
  nearest_of_k<<<1024, 256, 0, stream>>>(state_.points(), previous_.get() + size_t(base) * p.n, k,
                                         distances_.get(), labels_.get());
  check_launch("nearest_of_k");
  // The empty slots of this K, in slot order, as the host policy takes them.
  std::vector<unsigned long long> counts(static_cast<size_t>(k));
  check(cudaMemcpyAsync(counts.data(), refs_.counts + base, sizeof(unsigned long long) * k,
                        cudaMemcpyDeviceToHost, stream),
        "read counts");
  check(cudaStreamSynchronize(stream), "farthest points");
  std::vector<int> empty;
  for (int c = 0; c < k; ++c)
    if (counts[size_t(c)] == 0) empty.push_back(base + c);
  int moved = 0;
  std::vector<double> maxima(static_cast<size_t>(2 * blocks));
  for (int j = 0; j < int(empty.size()) && j < empties && j < p.m; ++j) {
    block_farthest<<<blocks, kReduceThreads, 0, stream>>>(distances_.get(), p.m, block_best_.get());
    check_launch("block_farthest");
    check(cudaMemcpyAsync(maxima.data(), block_best_.get(), sizeof(double) * 2 * blocks, cudaMemcpyDeviceToHost,
                          stream),
          "read farthest maxima");
    check(cudaStreamSynchronize(stream), "farthest points");
    double best = -2.0;
    int64_t index = -1;
    for (int b = 0; b < blocks; ++b) {
      const double distance = maxima[size_t(2 * b)];
      const int64_t i = int64_t(maxima[size_t(2 * b + 1)]);
      if (distance > best || (distance == best && i < index)) best = distance, index = i;
    }
    if (index < 0 || best < 0) break;
    int32_t label = 0;
    check(cudaMemcpyAsync(&label, labels_.get() + index, sizeof(int32_t), cudaMemcpyDeviceToHost, stream),
          "read farthest label");
    check(cudaStreamSynchronize(stream), "farthest points");
    const AccumulatorRefs& refs = refs_;
    move_point<<<1, 1, 0, stream>>>(state_.points(), index, base + label, empty[size_t(j)], refs.sums, refs.counts,
                                    distances_.get());
    check_launch("move_point");
    ++moved;
  }
  return moved;
}

int DeviceUpdate::relocate_random(int k, uint64_t seed) {
  const Problem& p = state_.problem();
  cudaStream_t stream = state_.stream();
  const int base = p.k.slot_offset(k);
  std::vector<unsigned long long> counts(static_cast<size_t>(k));
  check(cudaMemcpyAsync(counts.data(), refs_.counts + base, sizeof(unsigned long long) * k,
                        cudaMemcpyDeviceToHost, stream),
        "read counts");
  check(cudaStreamSynchronize(stream), "random relocation");
  int moved = 0;
  auto refs = refs_;
  for (int c = 0; c < k; ++c) {
    if (counts[size_t(c)] != 0) continue;
    const int64_t i = random_relocation_point(seed, step_, base + c, p.m);
    move_point<<<1, 1, 0, stream>>>(state_.points(), i, -1, base + c, refs.sums, refs.counts, nullptr);
    check_launch("move_point");
    ++moved;
  }
  return moved;
}

StepSummary DeviceUpdate::run(const UpdateOptions& options, const AccumulatorRefs& refs,
                              const std::function<void()>& after_divide) {
  refs_ = refs;
  const Problem& p = state_.problem();
  const int kc = p.k.count();
  cudaStream_t stream = state_.stream();
  std::vector<uint8_t> active = options.active.empty() ? std::vector<uint8_t>(size_t(kc), 1) : options.active;
  if (int(active.size()) != kc)
    throw InputError("update: " + std::to_string(active.size()) + " active flags for " + std::to_string(kc) + " Ks");
  if (!options.summary && options.empty != EmptyPolicy::Keep)
    throw InputError(std::string("update without a summary keeps empty clusters; --empty ") + to_string(options.empty) +
                     " needs the summary's empty counts");
  divide(active, true);
  if (!options.summary) {
    if (after_divide) after_divide();
    ++step_;
    return StepSummary{};
  }
  read_summary(host_summary_, after_divide);

  std::vector<int> relocated(size_t(kc), 0);
  if (options.empty != EmptyPolicy::Keep) {
    bool again = false;
    std::vector<uint8_t> redo(size_t(kc), 0);
    for (int index = 0; index < kc; ++index) {
      const int empties = int(host_summary_[kc + index]);
      if (!active[size_t(index)] || empties == 0) continue;
      const int k = p.k.kmin + index;
      relocated[size_t(index)] = options.empty == EmptyPolicy::Farthest ? relocate_farthest(k, empties)
                                                                          : relocate_random(k, options.seed);
      if (relocated[size_t(index)] == 0) continue;
      // Divide this K again from its centroids before the update, with the moved points.
      const size_t base = size_t(p.k.slot_offset(k)) * p.n;
      check(cudaMemcpyAsync(state_.centroids_mutable() + base, previous_.get() + base, sizeof(float) * k * p.n,
                            cudaMemcpyDeviceToDevice, stream),
            "restore centroids");
      redo[size_t(index)] = 1;
      again = true;
    }
    if (again) {
      // The redone Ks' shift and empties come from this division's summary (a fresh buffer).
      divide(redo, false);
      double* again_summary = host_summary_ + 3 * kc;
      read_summary(again_summary, after_divide);
      for (int index = 0; index < kc; ++index) {
        if (!redo[size_t(index)]) continue;
        host_summary_[index] = again_summary[index];
        host_summary_[kc + index] = again_summary[kc + index];
      }
    }
  }
  ++step_;

  StepSummary summary;
  for (int index = 0; index < kc; ++index) {
    KStepSummary ks;
    ks.k = p.k.kmin + index;
    ks.active = active[size_t(index)] != 0;
    ks.shift = host_summary_[index];
    ks.inertia = host_summary_[2 * kc + index];
    ks.relocated = relocated[size_t(index)];
    ks.empty = int(host_summary_[kc + index]) + ks.relocated;
    summary.per_k.push_back(ks);
  }
  return summary;
}

}  // namespace mk::gpu
