#pragma once
// What one launch of the gemm-window kernel reads and writes (a plain struct: kernel
// parameter), and the host entry points that launch it.
#include <cstdint>

#include "variants/gemm_window/config.hpp"
#include "variants/gemm_window/deferred_queue.hpp"
#include "variants/gemm_window/window_bound.hpp"

struct __half;

namespace mk::gemm_window {

struct KernelArgs {
  // Points: the state's AoS rows (FP32, m × n) and the data mean μ they are translated by.
  const float* points;
  const float* center;
  int64_t m;
  int n, npad;
  // Centroids: the state's FP32 slots (exact arbitration, update), the FP16 table of −2·c̃
  // (total_columns × npad, laid out as the chunk slots are: config.hpp's table_offset) and the
  // scaled norms ‖c̃‖² (1e30 for padding columns).
  const float* centroids;
  const __half* table;
  const float* norms;
  // {largest ‖c − μ‖² as float bits, the table's residual ratio ρ as float bits}: written by
  // the table kernels of this iteration (table.cu).
  const unsigned* table_scalars;
  float largest_point_norm2;  // max ‖x − μ‖² over the data, widened (translation.cpp)
  const GroupInfo* groups;
  int group_count;
  int total_tiles;
  int chunks;          // k-chunks of 32 dims per centroid tile
  int stage_chunks;    // table=stream: chunks per ring stage (divides chunks)
  int slots;           // ΣK
  unsigned index_mask;  // low bits of a packed key that hold the column index
  KeyErrorModel model;  // rho and tau filled in by the kernel from table_scalars
  bool table_resident;  // the whole table sits in shared memory
  bool staged_points;   // points=staged (and the points start on 16 bytes): tiles copied ahead
  SmemLayout smem;      // the block's shared-memory carve-up (config.hpp), sized by the host
  UpdateMode update;
  int flush_tiles;  // update=shared: point tiles between flushes of the FP32 sums
  // Accumulators (LloydState) and outputs.
  double* sums;
  unsigned long long* counts;
  double* inertia;
  int32_t* labels;         // [group][m] when labels were asked for, else null
  int32_t* sort_labels;    // update=sorted: [group][m] labels the sort reads
  unsigned* tile_counter;  // zero at launch; blocks take point tiles from it
  int64_t point_tiles;
  unsigned long long* stats;  // null, or {rows, ambiguous rows, scanned slices, exact distances, deferred rows}
  DeferredQueue deferred;     // arbitrate=deferred (update=sorted), else rows = null
  // A batch in one launch (run.cu): 0, or the point tiles of each problem (its m a multiple of
  // BM, so no tile straddles two). Group b is problem b's K: a tile sweeps only its problem's
  // group, the update's slots are b·K + label, and labels are one a point ([M_total]). Last, so
  // the one-problem kernel's parameter offsets stay as they were.
  int64_t batch_tiles;
};

// Kernel attributes and launch for the tile config named by index into kTileConfigs: the
// one-problem kernel, or (batched) the batch's instantiation; launch takes the one args'
// batch_tiles ask for.
struct KernelHandle {
  const void* function = nullptr;
  int threads = 0;
  int min_blocks = 0;
};
KernelHandle kernel_for(int tile_index, bool batched = false);
void launch(int tile_index, int grid, int64_t smem_bytes, void* stream, const KernelArgs& args);

}  // namespace mk::gemm_window
