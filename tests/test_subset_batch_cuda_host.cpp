// The CUDA subset engine's host-side decisions and its kernels' machine code, without a GPU
// (variants/subset_batch/cuda_kernels.hpp): what it refuses, how rows are split into chunks,
// and that NVRTC compiles every kernel for sm_90 with nothing in local memory (a thread's
// centroids and accumulators must stay in registers and shared memory, or the batch's one
// read of the table per block of problems stops paying).
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "kernel_resources.hpp"
#include "variants/subset_batch/cuda_kernels.hpp"
#include "variants/subset_batch/subset_batch.hpp"

namespace mk {
namespace {

using testing_support::nvrtc_target;

batch::SubsetShape susy_shape() { return batch::SubsetShape{5000000, 18, 3, 8, 2, 10000}; }

TEST(SubsetBatchCudaHost, RefusesWhatItCannotHoldAndAcceptsTheSeedsShape) {
  const DeviceInfo h100 = nvrtc_target(9, 0);
  EXPECT_FALSE(batch::cuda_refusal(susy_shape(), h100)) << *batch::cuda_refusal(susy_shape(), h100);
  EXPECT_TRUE(batch::cuda_refusal(susy_shape(), query_host_cpu()));
  batch::SubsetShape shape = susy_shape();
  shape.k = 33;
  shape.s = 2;
  EXPECT_TRUE(batch::cuda_refusal(shape, h100));  // K above 32
  shape = susy_shape();
  shape.s = 13;  // 13 × 8 = 104 centroid values
  EXPECT_TRUE(batch::cuda_refusal(shape, h100));
  shape = susy_shape();
  shape.classes = 100;  // 800 label counters
  EXPECT_TRUE(batch::cuda_refusal(shape, h100));
  shape = susy_shape();
  shape.m = int64_t(6) << 30;  // 6G rows x 18 attributes do not fit in 80 GB
  EXPECT_TRUE(batch::cuda_refusal(shape, h100));
}

TEST(SubsetBatchCudaHost, ChunkPlanCoversEveryTileWithinItsBudget) {
  // SUSY: 5M rows in tiles of 256 rows, 40 blocks of problems, 264 resident blocks.
  const int64_t tiles = (5000000 / 4 + 63) / 64;
  const batch::ChunkPlan plan = batch::plan_chunks(tiles, 40, 264, 10000.0 * 8 * 1 * 16, 20e9, 64);
  EXPECT_GE(plan.chunks * plan.tiles_per_chunk, tiles);
  EXPECT_LT((plan.chunks - 1) * plan.tiles_per_chunk, tiles);
  EXPECT_EQ(plan.groups_per_chunk, plan.tiles_per_chunk * 64);
  EXPECT_LE(double(plan.chunks) * 10000.0 * 8 * 16, 20e9);
  // A budget for one chunk only, on a table above 2^24 rows: no split keeps FP32 counts exact.
  EXPECT_THROW(batch::plan_chunks((int64_t(1) << 26) / 256, 1, 264, 1e9, 1e9, 64), UnsupportedError);
}

TEST(SubsetBatchCudaHost, KernelsCompileForSm90WithoutLocalMemory) {
  const DeviceInfo h100 = nvrtc_target(9, 0);
  for (const batch::SubsetShape& shape :
       {susy_shape(), batch::SubsetShape{100000, 7, 2, 5, 3, 100}, batch::SubsetShape{100000, 40, 6, 16, 10, 100}}) {
    const batch::CudaKernelShape kernel = batch::cuda_kernel_shape(shape, h100);
    const gpu::RuntimeCompileRequest request = batch::cuda_kernel_request(kernel);
    for (const char* name : {"subset_accumulate", "subset_label_pass", "subset_update"}) {
      const auto resources = testing_support::kernel_resources(request, name);
      EXPECT_EQ(resources.frame_bytes, 0) << request.description << " " << name;
      EXPECT_GT(resources.registers, 0) << request.description << " " << name;
    }
    EXPECT_LE(batch::cuda_step_shared_bytes(kernel), size_t(h100.smem_per_block_optin)) << request.description;
    EXPECT_LE(batch::cuda_label_shared_bytes(kernel), size_t(h100.smem_per_block_optin)) << request.description;
  }
}

}  // namespace
}  // namespace mk
