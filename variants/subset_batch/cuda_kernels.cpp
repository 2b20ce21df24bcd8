// Host-side decisions of the CUDA subset engine (variants/subset_batch/cuda_kernels.hpp).
#include "variants/subset_batch/cuda_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/errors.hpp"
#include "variants/common/kernel_sources.hpp"
#include "variants/common/packed_argmin.hpp"

namespace mk::batch {
namespace {

// A tile of rows × every attribute: 64 groups (256 rows) of SUSY's 18 attributes is 18 KB;
// wider tables get fewer rows per tile, down to one group (4 rows) at 3072 attributes.
constexpr int64_t kTileBytes = 40 * 1024;
constexpr int kMaxTileGroups = 64;
// A block's private accumulators (or label counters): 64 KB leaves room for the tile and for
// two or more blocks on an SM with 228 KB.
constexpr int64_t kPrivateBytes = 64 * 1024;

int acc_quads(int s) { return (s + 1 + 3) / 4; }

// A thread's private bytes per cluster in subset_accumulate: its sums and count, and with two
// classes (counted in the step, kernel/config.cuh FOLD_CLASSES) two integer counters.
int64_t step_bytes_per_cluster(int s, int classes) { return acc_quads(s) * 16 + (classes == 2 ? 8 : 0); }

int largest_block(int64_t bytes_per_thread) {
  for (int block : {256, 128, 64, 32})
    if (bytes_per_thread * block <= kPrivateBytes) return block;
  return 32;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

double device_bytes(const SubsetShape& shape, const CudaKernelShape& kernel) {
  const CudaLayout layout = cuda_layout(kernel, shape.m);
  const double b = double(shape.count);
  const double table = double(layout.groups_padded) * shape.n * 16.0 + double(layout.groups_padded) * 16.0;
  const double weights = kernel.classes == 2 ? double(layout.groups_padded) * 16.0 : 0.0;
  const double scored = kernel.classes >= 3 ? b * double(shape.k) * shape.s * 4.0 : 0.0;
  const double problems = b * (shape.s * 4.0 + double(shape.k) * shape.s * 4.0 + 8 + 8 + 4 + 4 + 1 + 1 + 8 + 8 +
                               double(shape.k) * kernel.classes * 8.0);
  const double partials_one_chunk = b * shape.k * double(step_bytes_per_cluster(shape.s, kernel.classes)) +
                                    (kernel.classes >= 3 ? b * shape.k * kernel.classes * 4.0 : 0.0);
  return table + weights + scored + problems + partials_one_chunk;
}

}  // namespace

CudaKernelShape cuda_kernel_shape(const SubsetShape& shape, const DeviceInfo& device) {
  CudaKernelShape out;
  out.s = shape.s;
  out.k = shape.k;
  out.n = shape.n;
  out.classes = std::max(shape.classes, 1);
  out.tile_groups = int(std::clamp<int64_t>(kTileBytes / (int64_t(std::max(shape.n, 1)) * 16), 1, kMaxTileGroups));
  out.block = largest_block(int64_t(shape.k) * step_bytes_per_cluster(shape.s, out.classes));
  out.label_block = largest_block(int64_t(shape.k) * out.classes * 4);
  out.index_bits = packed_index_bits(std::max(shape.k, 2));
  out.cc_major = device.cc_major;
  out.cc_minor = device.cc_minor;
  return out;
}

std::optional<std::string> cuda_refusal(const SubsetShape& shape, const DeviceInfo& device) {
  if (!device.is_gpu) return std::string("needs a CUDA GPU");
  if (device.cc_major < 7) return std::string("needs compute capability 7.0 or later");
  if (shape.s * shape.k > kCudaMaxCentroidValues)
    return "S x K = " + std::to_string(shape.s * shape.k) + " centroid values per problem exceed the " +
           std::to_string(kCudaMaxCentroidValues) + " a thread keeps in registers";
  if (shape.k > kCudaMaxK) return "K=" + std::to_string(shape.k) + " is above " + std::to_string(kCudaMaxK);
  if (shape.n > kCudaMaxAttributes)
    return std::to_string(shape.n) + " attributes are above the " + std::to_string(kCudaMaxAttributes) +
           " a shared-memory tile holds";
  const int classes = std::max(shape.classes, 1);
  if (shape.k * classes > kCudaMaxLabelCells)
    return "K x classes = " + std::to_string(shape.k * classes) + " label counters per problem exceed " +
           std::to_string(kCudaMaxLabelCells);
  const CudaKernelShape kernel = cuda_kernel_shape(shape, device);
  const int64_t blocks = ceil_div(shape.count, std::min(kernel.block, kernel.label_block));
  if (blocks > 65535)
    return std::to_string(shape.count) + " problems need " + std::to_string(blocks) +
           " blocks of problems, above the grid's 65535";
  const double need = device_bytes(shape, kernel);
  if (device.global_mem_bytes > 0 && need > 0.9 * double(device.global_mem_bytes))
    return "needs about " + std::to_string(int64_t(need / (1 << 20))) + " MiB of device memory, the device has " +
           std::to_string(device.global_mem_bytes >> 20) + " MiB";
  return std::nullopt;
}

gpu::RuntimeCompileRequest cuda_kernel_request(const CudaKernelShape& shape) {
  std::ostringstream defines;
  defines << "#define S_COLS " << shape.s << "\n#define K_CLUSTERS " << shape.k << "\n#define N_ATTRS " << shape.n
          << "\n#define CLASSES " << shape.classes << "\n#define BLOCK " << shape.block << "\n#define LABEL_BLOCK "
          << shape.label_block << "\n#define TILE_GROUPS " << shape.tile_groups << "\n#define INDEX_BITS "
          << shape.index_bits << "\n";
  gpu::RuntimeCompileRequest request;
  request.source = defines.str() + "#include \"kernel.cuh\"\n";
  request.program_name = "subset_batch.cu";
  request.cc_major = shape.cc_major;
  request.cc_minor = shape.cc_minor;
  request.headers = gpu::kernel_headers("subset_batch/kernel");
  request.description = "subset batch S=" + std::to_string(shape.s) + " K=" + std::to_string(shape.k) +
                        " N=" + std::to_string(shape.n) + " classes=" + std::to_string(shape.classes);
  request.dump_tag = "subset-s" + std::to_string(shape.s) + "-k" + std::to_string(shape.k) + "-n" +
                     std::to_string(shape.n) + "-c" + std::to_string(shape.classes);
  return request;
}

size_t cuda_step_shared_bytes(const CudaKernelShape& shape) {
  const size_t weights = shape.classes == 2 ? size_t(shape.tile_groups) * 16 : 0;
  return size_t(shape.tile_groups) * shape.n * 16 + weights +
         size_t(shape.k) * size_t(step_bytes_per_cluster(shape.s, shape.classes)) * shape.block;
}

size_t cuda_label_shared_bytes(const CudaKernelShape& shape) {
  return size_t(shape.tile_groups) * shape.n * 16 + size_t(shape.tile_groups) * 16 +
         size_t(shape.k) * shape.classes * shape.label_block * 4;
}

bool cuda_counts_in_step(const CudaKernelShape& shape) { return shape.classes <= 2; }

CudaLayout cuda_layout(const CudaKernelShape& shape, int64_t m) {
  CudaLayout layout;
  layout.groups = ceil_div(m, 4);
  layout.tiles = ceil_div(layout.groups, shape.tile_groups);
  layout.groups_padded = layout.tiles * shape.tile_groups;
  return layout;
}

ChunkPlan plan_chunks(int64_t tiles, int64_t problem_blocks, int64_t resident, double bytes_per_chunk, double budget,
                      int tile_groups) {
  const int64_t max_tiles_per_chunk = std::max<int64_t>(1, (int64_t(1) << 24) / (int64_t(tile_groups) * 4));
  const int64_t by_memory = bytes_per_chunk > 0 ? int64_t(std::floor(budget / bytes_per_chunk)) : tiles;
  const int64_t limit = std::min<int64_t>({tiles, by_memory, 65535});
  ChunkPlan best;
  double best_cost = -1;
  for (int64_t c = 1; c <= limit; ++c) {
    const int64_t per_chunk = ceil_div(tiles, c);
    if (per_chunk > max_tiles_per_chunk) continue;
    const int64_t chunks = ceil_div(tiles, per_chunk);
    if (chunks != c) continue;  // the same split as a smaller count
    const int64_t waves = ceil_div(chunks * problem_blocks, std::max<int64_t>(resident, 1));
    const double cost = double(waves) * double(per_chunk + 1);
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best = ChunkPlan{chunks, per_chunk, per_chunk * tile_groups, waves};
    }
  }
  if (best_cost < 0)
    throw UnsupportedError("subset batch: the partial sums of " + std::to_string(ceil_div(tiles, max_tiles_per_chunk)) +
                           " chunks of rows do not fit in " + std::to_string(int64_t(budget / (1 << 20))) +
                           " MiB of device memory");
  return best;
}

}  // namespace mk::batch
