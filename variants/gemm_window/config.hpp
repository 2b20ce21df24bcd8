#pragma once
// gemm-window's geometry as data, shared by the host (can_implement, the param space, the
// launch) and the kernel: the tile shapes, the padding of dimensions and centroid groups, and
// the carve-up of a block's dynamic shared memory. docs/gemm-window.md explains the design.
#include <cstdint>
#include <string>
#include <vector>

#if defined(__CUDACC__)
#define MK_GW_HD __host__ __device__
#else
#define MK_GW_HD
#endif

namespace mk::gemm_window {

// Dimensions are padded to whole k-chunks of 32 (two m16n8k16 steps): a chunk row is 64 bytes,
// four 16-byte pieces that cp.async and ldmatrix move whole.
constexpr int kChunkDims = 32;
constexpr int kMaxDims = 1024;
// A key keeps 23 − index bits of its mantissa; 13 bits (8192 centroids a group) leave 10.
constexpr int kMaxIndexBits = 13;
constexpr int kMaxSlots = 8192;      // ΣK: per-block counts live in shared memory
constexpr int kMaxGroups = 64;       // Ks in one range
// Ring depth for table=stream. mma.sync: three cp.async stages of stage_chunks chunks, fetched
// two ahead (a stage's slot is refilled once the stage before the previous one is done, and
// mma.sync's reads finish with the warp's instructions). wgmma: two whole centroid tiles, one
// bulk copy each, a slot refilled as soon as its tile's wgmmas have completed (kernel.cuh).
MK_GW_HD constexpr int ring_stages(bool wgmma) { return wgmma ? 2 : 3; }
// Candidates a row can list: per warp column, 4 lanes × 2 column parities × (first, second).
constexpr int kItemsPerRowPerWarpColumn = 16;
// Shared-memory FP32 sums (update=shared) are flushed into the FP64 sums after at most this
// many of a block's points, as variants/common/block_accumulators.cuh does (its precision
// argument: no FP32 partial ever holds more than 4096 addends).
constexpr int kMaxPointsPerFlush = 4096;

// A block owns BM points (32 per warp row) and sweeps every centroid tile of BN columns;
// WN warps split a tile's columns, so a warp's tile is 32 × BN/WN.
struct TileConfig {
  const char* name;
  int bm, bn, wm, wn;
  int min_blocks;  // __launch_bounds__' blocks per SM: caps registers at 64K / (threads · min_blocks)
  // wgmma (sm_90a): one warpgroup issues m64nBNk16 from shared-memory descriptors for both
  // operands, instead of each warp's ldmatrix + mma.sync m16n8k16 (docs/gemm-window.md).
  bool wgmma = false;
  // The fill issues a batch of loads before it converts and prefetches the next point tile into
  // L2 (mainloop.cuh's fill_rows, prefetch_point_tile). Measured with every tile filling ahead
  // (H200, f1a3a05 against cda2be8, one call, ab/gemm-window-fill-ahead.txt): the main kernel
  // 1.949 ms against 1.852 at 128/1024/2M and the row 9.63 against 9.10 at 256/4096/1M
  // (128x64/wgmma); 9.031 against 8.939 at 256/4096/1M (64x128/2x2, which then spills at
  // sm_80); 7.943 against 8.186 at 768/1000/1M (64x256/2x4). The wgmma tile alone keeps it;
  // the others, slower (64x256/2x4), spilling (64x128/2x2 at sm_80, 128x128/4x1 at sm_90) or
  // unmeasured, fill a piece at a time.
  bool fill_ahead = false;
  MK_GW_HD int threads() const { return 32 * wm * wn; }
  MK_GW_HD int warps() const { return wm * wn; }
  MK_GW_HD int warp_columns() const { return bn / wn; }
};

// The tile axis's values, in the order a sweep visits them. Kernels exist for exactly these
// (kernel_*.cu); a new shape is a new row here and one instantiation there. min_blocks is the
// most blocks per SM whose register cap leaves the kernel without spills (ptxas, sm_90:
// 128x128/4x2 spills 172 bytes at 2 blocks' 128 registers, so it runs one block of 8 warps).
inline constexpr TileConfig kTileConfigs[] = {
    {"128x128/4x2", 128, 128, 4, 2, 1},
    {"128x128/4x1", 128, 128, 4, 1, 2},
    {"128x64/4x1", 128, 64, 4, 1, 3},
    {"64x128/2x2", 64, 128, 2, 2, 3},
    {"128x16/4x1", 128, 16, 4, 1, 4},
    // Eight warps where a 64-point FP16 A tile takes most of an SM's shared memory (N > 512:
    // 96 KiB at 768 dims, so one block an SM; 64x128/2x2 ran 4 warps an SM there, 6.25 %
    // achieved occupancy, the tensor pipe 20 % busy; ncu, H200, 7d2187f, 768/1000/1M;
    // ab/gemm-window-wide-tile.txt).
    {"64x256/2x4", 64, 256, 2, 4, 1},
    // One warpgroup: 128 points in two m64 halves × 64 columns, both operands read by the
    // tensor cores from shared memory (H100/H200 only, an sm_90a build).
    {"128x64/wgmma", 128, 64, 4, 1, 3, true, true},
};
inline constexpr int kTileConfigCount = int(sizeof(kTileConfigs) / sizeof(kTileConfigs[0]));

// Whether (bm, bn, wm, wn, wgmma) is a row of kTileConfigs: every kernel's Shape must be one.
MK_GW_HD constexpr bool tile_listed(int bm, int bn, int wm, int wn, bool wgmma) {
  for (const TileConfig& tile : kTileConfigs)
    if (tile.bm == bm && tile.bn == bn && tile.wm == wm && tile.wn == wn && tile.wgmma == wgmma) return true;
  return false;
}
// The fill_ahead of the tile (bm, bn, wm, wn, wgmma), for the kernel's compile-time Shape.
MK_GW_HD constexpr bool tile_fills_ahead(int bm, int bn, int wm, int wn, bool wgmma) {
  for (const TileConfig& tile : kTileConfigs)
    if (tile.bm == bm && tile.bn == bn && tile.wm == wm && tile.wn == wn && tile.wgmma == wgmma) return tile.fill_ahead;
  return false;
}

const TileConfig* find_tile(const std::string& name);  // null when unknown
// Whether this build has the wgmma tiles' kernels (sm_90a code, built where sm_90 is targeted;
// dispatch.cu).
bool wgmma_built();

enum class UpdateMode : int { Global = 0, Shared = 1, Sorted = 2 };
const char* to_string(UpdateMode mode);
UpdateMode parse_update(const std::string& text);  // InputError for anything else

MK_GW_HD inline int padded_dims(int n) { return (n + kChunkDims - 1) / kChunkDims * kChunkDims; }
MK_GW_HD inline int padded_group(int k, int bn) { return (k + bn - 1) / bn * bn; }
inline int bits_for(int64_t values) {
  int bits = 1;
  while ((int64_t(1) << bits) < values) ++bits;
  return bits;
}

// The FP16 table is stored as the kernel's chunk slots are laid out (mainloop.cuh): centroid
// tile by tile, k-chunk by k-chunk, a chunk being BN rows of 64 bytes whose 16-byte pieces sit
// at piece XOR (row/2)%4. A chunk, a stage and a whole tile are then each one contiguous range:
// a copy is a straight run of 16-byte pieces, and the wgmma tile's ring takes a whole tile in
// one bulk copy (bulk_copy.cuh). The index of dimension d of table column `column`:
MK_GW_HD inline int64_t table_offset(int column, int d, int bn, int chunks) {
  const int tile = column / bn, row = column - tile * bn;
  const int chunk = d / kChunkDims, piece = (d / 8) & 3;
  return ((int64_t(tile) * chunks + chunk) * bn + row) * kChunkDims + (piece ^ ((row >> 1) & 3)) * 8 + (d & 7);
}

// One K of the range: its slots in the state's packed centroids and its columns (padded to
// whole tiles) in the FP16 table.
struct GroupInfo {
  int k;            // centroids
  int slot_offset;  // first slot in LloydState's packing (KRange::slot_offset)
  int first_tile;   // first BN-column tile in the table
  int tiles;        // tiles of this group
};

struct Geometry {
  int npad = 0;           // padded dimensions
  int chunks = 0;         // k-chunks of 32 per centroid tile
  int total_tiles = 0;    // centroid tiles over all groups
  int total_columns = 0;  // total_tiles × BN
  int index_bits = 0;     // bits of a column index within its group
  int slots = 0;          // ΣK
  std::vector<GroupInfo> groups;
};
Geometry make_geometry(int n, int kmin, int kmax, const TileConfig& tile);
// A batch in one launch: problem b's one K as group b (slots from b·K, tiles from b·⌈K/BN⌉).
Geometry make_batch_geometry(int n, int k, int batch, const TileConfig& tile);

// Byte offsets into a block's dynamic shared memory; the same numbers on host and device.
struct SmemLayout {
  int inertia, best, a, b, xn2, ex, rowbest, rowcount, scan, label, job_end, items, counts, sums, staged, tile, ring_full;
  int64_t total;
};

// points=staged: two buffers of one point tile's FP32 rows (BM × n floats each).
MK_GW_HD inline int64_t staged_points_bytes(const TileConfig& tile, int n) { return int64_t(2) * tile.bm * n * 4; }

MK_GW_HD inline int64_t align_up(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// table_chunks: the ring's chunk slots (ring_stages × stage_chunks; wgmma: ring_stages whole
// tiles) or every chunk of the table
// (table=resident).
MK_GW_HD inline SmemLayout smem_layout(const TileConfig& tile, int npad, int table_chunks, int groups, int slots,
                                       int n, bool shared_sums, bool staged_points = false) {
  SmemLayout s{};
  int64_t at = 0;
  // Offsets fit 32 bits whenever the total fits a block; a larger total is refused by its size.
  s.inertia = int(at);
  at += int64_t(groups) * tile.warps() * 8;
  s.best = int(at);
  at += int64_t(tile.bm) * 8;
  // wgmma's swizzled operands repeat their pattern every 512 bytes; A and every table chunk
  // (multiples of 4 KiB) start on 1 KiB, measured from the 1 KiB-aligned dynamic base.
  at = align_up(at, tile.wgmma ? 1024 : 128);
  s.a = int(at);
  at += int64_t(tile.bm) * npad * 2;
  s.b = int(at);
  at += int64_t(table_chunks) * tile.bn * kChunkDims * 2;
  s.xn2 = int(at);
  at += int64_t(tile.bm) * 4;
  s.ex = int(at);
  at += int64_t(tile.bm) * 4;
  s.rowbest = int(at);
  at += int64_t(tile.bm) * tile.wn * 4;
  s.rowcount = int(at);
  at += int64_t(tile.bm) * 4;
  s.scan = int(at);
  at += int64_t(tile.bm) * 4;
  s.label = int(at);
  at += int64_t(tile.bm) * 4;
  s.job_end = int(at);
  at += int64_t(tile.bm) * 4;
  s.items = int(at);
  at += int64_t(tile.bm) * kItemsPerRowPerWarpColumn * tile.wn * 2;
  at = align_up(at, 16);
  s.counts = int(at);
  at += int64_t(slots) * 4;
  at = align_up(at, 16);
  s.sums = int(at);
  if (shared_sums) at += int64_t(slots) * n * 4;
  at = align_up(at, 16);  // cp.async destinations
  s.staged = int(at);
  if (staged_points) at += staged_points_bytes(tile, n);
  s.tile = int(at);
  at += 16;
  s.ring_full = int(at);  // the wgmma ring's mbarriers, 8 bytes a slot
  at += int64_t(ring_stages(true)) * 8;
  s.total = at;
  return s;
}

}  // namespace mk::gemm_window
