#include "variants/common/argmin_update.cuh"

namespace mk::gemm {

namespace {

__global__ void centroid_squared_norms(const float* __restrict__ centroids, int slots, int n,
                                       float* __restrict__ norms) {
  for (int s = blockIdx.x * blockDim.x + threadIdx.x; s < slots; s += gridDim.x * blockDim.x) {
    const float* c = centroids + int64_t(s) * n;
    double total = 0;
    for (int d = 0; d < n; ++d) total = fma(double(c[d]), double(c[d]), total);
    norms[s] = float(total);
  }
}

}  // namespace

void launch_centroid_squared_norms(const float* centroids, int slots, int n, float* norms,
                                   cudaStream_t stream) {
  const int block = 128;
  const int grid = (slots + block - 1) / block;
  centroid_squared_norms<<<grid, block, 0, stream>>>(centroids, slots, n, norms);
  gpu::check_launch("centroid_squared_norms");
}

}  // namespace mk::gemm
