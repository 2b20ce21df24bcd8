// registers-multik, runtime-compiled: the prologue kernel of each iteration.
#pragma once

#include "config.cuh"

// Small per-slot prologue: ‖c‖² and −2c into a scratch buffer that the host copies into
// __constant__ (kernels cannot write constant memory).
extern "C" __global__ void multik_prepare_centroids(const float* __restrict__ centroids,
                                                    float* __restrict__ packed) {
  __shared__ float block_max;
  if (threadIdx.x == 0) block_max = 0.f;
  __syncthreads();
  for (int s = threadIdx.x; s < SUMK; s += blockDim.x) {
    float norm = 0.f;
    for (int d = 0; d < NDIM; ++d) {
      float c = centroids[s * NDIM + d];
      norm = fmaf(c, c, norm);
      packed[s * CSTRIDE + 1 + d] = -2.f * c;
    }
    packed[s * CSTRIDE] = norm;
    atomicMax((int*)&block_max, __float_as_int(norm));  // norms are >= 0: int order == float order
  }
  __syncthreads();
  if (threadIdx.x == 0) packed[SUMK * CSTRIDE] = block_max;
}
