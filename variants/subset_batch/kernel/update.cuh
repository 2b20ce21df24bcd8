// After subset_accumulate: the chunks' sums reduced in FP64, the step's assignment scored (its
// class counts, and the inertia of that partition about its means: the new centroids), the
// centroids updated (an empty cluster keeps its centroid), the shift measured and converged
// problems frozen; then the active list compacted for the next step. After subset_label_pass
// (three classes or more): its chunks reduced.
#pragma once
#include "config.cuh"

// One thread per active problem. A problem's score is that of its last step, so each step
// overwrites it: a problem frozen earlier keeps the one of its own last step.
//
// The inertia of the step's partition about its means is Σ‖x‖² − Σ_j ‖S_j‖²/n_j (S_j the sum
// and n_j the size of cluster j), with Σ‖x‖² the problem's columns' sum of squares in centred
// units (`norms`, from the host in FP64): no pass over the rows of its own.
extern "C" __global__ void __launch_bounds__(256) subset_update(
    const float4* __restrict__ partials, const int* __restrict__ class1_partials, int chunks,
    const int* __restrict__ active_list, int active_count, float* __restrict__ centroids,
    float* __restrict__ scored,  // CLASSES >= 3: the centroids the step started from, for subset_label_pass
    const double* __restrict__ thresholds, const double* __restrict__ norms, int* __restrict__ steps,
    unsigned char* __restrict__ active, unsigned char* __restrict__ converged,
    long long* __restrict__ class_counts,  // [problem][K][CLASSES] (CLASSES <= 2)
    double* __restrict__ inertia) {
  const int slot = blockIdx.x * blockDim.x + threadIdx.x;
  if (slot >= active_count) return;
  const int problem = active_list[slot];
  float* c = centroids + (long long)problem * K_CLUSTERS * S_COLS;
  double shift = 0, explained = 0;
  for (int j = 0; j < K_CLUSTERS; ++j) {
    double sum[ACC_QUADS * 4];
#pragma unroll
    for (int e = 0; e < ACC_QUADS * 4; ++e) sum[e] = 0;
    long long class1 = 0;
    for (int chunk = 0; chunk < chunks; ++chunk) {
      const long long at = (long long)chunk * active_count + slot;
      const float4* part = partials + at * (K_CLUSTERS * ACC_QUADS) + j * ACC_QUADS;
#pragma unroll
      for (int q = 0; q < ACC_QUADS; ++q) {
        const float4 v = part[q];
        sum[q * 4] += v.x, sum[q * 4 + 1] += v.y, sum[q * 4 + 2] += v.z, sum[q * 4 + 3] += v.w;
      }
      if (FOLD_CLASSES) class1 += class1_partials[at * K_CLUSTERS + j];
    }
    const double count = sum[S_COLS];  // whole numbers: exact in FP32 per chunk (< 2^24 rows) and in FP64
    long long* cells = class_counts + ((long long)problem * K_CLUSTERS + j) * CLASSES;
    if (CLASSES == 2) cells[0] = (long long)count - class1, cells[1] = class1;
    else if (CLASSES == 1) cells[0] = (long long)count;
    else
#pragma unroll
      for (int d = 0; d < S_COLS; ++d) scored[(long long)problem * K_CLUSTERS * S_COLS + j * S_COLS + d] = c[j * S_COLS + d];
    if (count == 0) continue;
#pragma unroll
    for (int d = 0; d < S_COLS; ++d) {
      explained += sum[d] * sum[d] / count;
      const float next = float(sum[d] / count);
      const double delta = double(next) - double(c[j * S_COLS + d]);
      shift += delta * delta;
      c[j * S_COLS + d] = next;
    }
  }
  inertia[problem] = fmax(0.0, norms[problem] - explained);
  steps[problem] += 1;
  if (shift <= thresholds[problem]) {
    active[problem] = 0;
    converged[problem] = 1;
  }
}

// One block of 1024 threads: the active problems' indices in increasing order, and their count.
extern "C" __global__ void __launch_bounds__(1024) subset_compact(const unsigned char* __restrict__ active, int problems,
                                                                  int* __restrict__ active_list,
                                                                  int* __restrict__ active_count) {
  __shared__ int warp_offset[32];
  __shared__ int round_total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int base = 0;  // the same in every thread: each adds the same round totals
  for (int start = 0; start < problems; start += 1024) {
    const int i = start + threadIdx.x;
    const bool flag = i < problems && active[i];
    const unsigned ballot = __ballot_sync(0xffffffffu, flag);
    if (lane == 0) warp_offset[warp] = __popc(ballot);
    __syncthreads();
    if (warp == 0) {
      const int total = warp_offset[lane];
      int inclusive = total;
#pragma unroll
      for (int offset = 1; offset < 32; offset <<= 1) {
        const int other = __shfl_up_sync(0xffffffffu, inclusive, offset);
        if (lane >= offset) inclusive += other;
      }
      warp_offset[lane] = inclusive - total;
      if (lane == 31) round_total = inclusive;
    }
    __syncthreads();
    if (flag) active_list[base + warp_offset[warp] + __popc(ballot & ((1u << lane) - 1u))] = i;
    base += round_total;
    __syncthreads();  // warp_offset and round_total are rewritten by the next round
  }
  if (threadIdx.x == 0) *active_count = base;
}

// One thread per (problem, cluster·class cell): the label pass's chunks summed.
extern "C" __global__ void __launch_bounds__(256) subset_reduce_labels(const int* __restrict__ partial_counts, int chunks,
                                                                       int problems, long long* __restrict__ class_counts) {
  const long long cells = (long long)problems * K_CLUSTERS * CLASSES;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= cells) return;
  long long total = 0;
  for (int chunk = 0; chunk < chunks; ++chunk) total += partial_counts[(long long)chunk * cells + i];
  class_counts[i] = total;
}
