#pragma once
// The host-side decisions of the CUDA subset engine, apart from the engine so that they run
// (and are tested) without a GPU: the kernel specialisation for a shape, its shared memory,
// the table's device layout, how rows are split into chunks, and what the engine refuses.
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include "core/device_info.hpp"
#include "variants/common/nvrtc_module.hpp"
#include "variants/subset_batch/subset_batch.hpp"

namespace mk::batch {

// What the engine refuses (a refusal is an UnsupportedError, exit 3; `auto` then runs the CPU
// engine): more than 96 centroid values per problem (S·K: a thread's centroids live in
// registers), K above 32 (5 index bits in the distance key), N above 3072 (a tile holds at
// least 4 rows of every attribute in 48 KB), K·classes above 512 (a thread's label counters
// in shared memory), more than 65535 blocks of problems, or a table and its buffers above
// 90 % of the device's memory.
inline constexpr int kCudaMaxCentroidValues = 96;
inline constexpr int kCudaMaxK = 32;
inline constexpr int kCudaMaxAttributes = 3072;
inline constexpr int kCudaMaxLabelCells = 512;

struct CudaKernelShape {
  int s = 0, k = 0, n = 0, classes = 1;  // classes >= 1 in the kernels
  int block = 256;        // threads (problems) per block of subset_accumulate
  int label_block = 256;  // of subset_label_pass
  int tile_groups = 64;   // groups of 4 rows per tile
  int index_bits = 1;
  int cc_major = 0, cc_minor = 0;
  bool operator<(const CudaKernelShape& o) const {
    return std::tie(s, k, n, classes, block, label_block, tile_groups, index_bits, cc_major, cc_minor) <
           std::tie(o.s, o.k, o.n, o.classes, o.block, o.label_block, o.tile_groups, o.index_bits, o.cc_major,
                    o.cc_minor);
  }
};

std::optional<std::string> cuda_refusal(const SubsetShape& shape, const DeviceInfo& device);
CudaKernelShape cuda_kernel_shape(const SubsetShape& shape, const DeviceInfo& device);
gpu::RuntimeCompileRequest cuda_kernel_request(const CudaKernelShape& shape);
size_t cuda_step_shared_bytes(const CudaKernelShape& shape);
size_t cuda_label_shared_bytes(const CudaKernelShape& shape);
// Whether a step scores itself (one class: the clusters' sizes; two: the class-1 counts ride in
// the count lane, kernel/config.cuh FOLD_CLASSES), so that no label pass is needed.
bool cuda_counts_in_step(const CudaKernelShape& shape);

struct CudaLayout {
  int64_t groups = 0;         // ceil(M / 4)
  int64_t groups_padded = 0;  // whole tiles
  int64_t tiles = 0;
};
CudaLayout cuda_layout(const CudaKernelShape& shape, int64_t m);

struct ChunkPlan {
  int64_t chunks = 1;
  int64_t tiles_per_chunk = 1;
  int64_t groups_per_chunk = 0;
  int64_t waves = 1;
};
// The chunk count whose grid (chunks × problem_blocks blocks, `resident` at a time) finishes
// first, counting one tile of fixed cost per block (its centroids, zeroing and write-out),
// with at most 2^24 rows per chunk (its FP32 counts stay exact) and the partial sums within
// `budget` bytes. UnsupportedError when no chunk count fits the budget.
ChunkPlan plan_chunks(int64_t tiles, int64_t problem_blocks, int64_t resident, double bytes_per_chunk, double budget,
                      int tile_groups);

}  // namespace mk::batch
