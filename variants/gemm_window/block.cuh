#pragma once
// A gemm-window block's compile-time shape and its shared-memory carve-up (config.hpp's
// SmemLayout, so the host sized the allocation from the same numbers).
#include <cuda_fp16.h>

#include <cstdint>

#include "variants/gemm_window/config.hpp"
#include "variants/gemm_window/kernel_args.hpp"

namespace mk::gemm_window {

constexpr unsigned kFullWarp = 0xffffffffu;

template <int BM_, int BN_, int WM_, int WN_, bool Wgmma_ = false>
struct Shape {
  static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_;
  static constexpr bool kWgmma = Wgmma_;
  static_assert(tile_listed(BM_, BN_, WM_, WN_, Wgmma_), "a kernel's shape is a row of kTileConfigs (config.hpp)");
  static constexpr bool kFillAhead = tile_fills_ahead(BM_, BN_, WM_, WN_, Wgmma_);
  static constexpr int kRingStages = ring_stages(Wgmma_);
  static constexpr int kWarps = WM * WN;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kWarpColumns = BN / WN;  // columns of a warp's tile
  static constexpr int kNTiles = kWarpColumns / 8;
  static constexpr int kRowsPerWarp = BM / kWarps;  // rows a warp arbitrates and updates
  static constexpr int kItemsPerRow = kItemsPerRowPerWarpColumn * WN;
  static_assert(BM == 32 * WM, "a warp row holds 32 points (two m16 tiles)");
  static_assert(kNTiles % 2 == 0, "B fragments are loaded two n-tiles at a time");
  static_assert(kRowsPerWarp <= 32, "a warp's rows fit one lane each");
  static_assert(WN * 8 <= 32, "a row's slices (warp column, lane, parity) are bits of one 32-bit scan mask");
  static_assert(!kWgmma || (BM == 128 && WM == 4 && WN == 1 && BN == 64),
                "wgmma: one warpgroup, two m64 halves of 128 points, n = 64 (wgmma.cuh)");

  // Tile row of a lane's row r = 0..3 (g = lane/4) in warp row wm. mma.sync: the warp's own 32
  // rows, m-tile r/2, row g (+8 for odd r), as the A and D fragments hold them. wgmma: warp wm
  // of the warpgroup holds rows 16·wm + g (+8) of each m64 half r/2.
  __device__ __forceinline__ static int row_of(int wm, int r, int g) {
    if constexpr (kWgmma) return (r >> 1) * 64 + wm * 16 + (r & 1) * 8 + g;
    else return wm * 32 + (r >> 1) * 16 + (r & 1) * 8 + g;
  }
};

struct Smem {
  double* inertia;            // [group][warp]
  unsigned long long* best;   // per row: the smallest packed exact distance (arbitration)
  __half* a;                  // BM × npad, the block's points in FP16 (swizzled 16-byte pieces; a_piece)
  __half* b;                  // table chunks: ring slots or the whole table, BN × 32 each
  float* xn2;                 // per row ‖x̃‖² (FP32 sum, widened by the reader)
  float* ex;                  // per row ‖x_h − x̃‖²
  unsigned* rowbest;          // [row][warp column]: the quad's smallest packed key
  unsigned* rowcount;         // candidates listed per row
  unsigned* scan;             // per row: slices (warp column, lane, parity) to scan exactly
  int* label;                 // per row: the group's label
  int* job_end;               // per row: its warp's exact-distance jobs up to and including it
  unsigned short* items;      // [row][kItemsPerRow]: candidate columns
  unsigned* counts;           // per slot (update=global, shared)
  float* sums;                // per slot × n, FP32 sums of x − μ (update=shared)
  float* staged;              // points=staged: two buffers of BM × n FP32 rows
  int* tile;                  // two slots: the point tile the block works on, and the next
};

// Pointers are rebuilt from the kernel parameters wherever a function needs them, so they
// cost no registers across the mainloop (the compiler rematerialises them).
extern __shared__ __align__(1024) unsigned char gemm_window_smem[];

__device__ __forceinline__ Smem carve(const SmemLayout& l) {
  unsigned char* base = gemm_window_smem;
  Smem s;
  s.inertia = reinterpret_cast<double*>(base + l.inertia);
  s.best = reinterpret_cast<unsigned long long*>(base + l.best);
  s.a = reinterpret_cast<__half*>(base + l.a);
  s.b = reinterpret_cast<__half*>(base + l.b);
  s.xn2 = reinterpret_cast<float*>(base + l.xn2);
  s.ex = reinterpret_cast<float*>(base + l.ex);
  s.rowbest = reinterpret_cast<unsigned*>(base + l.rowbest);
  s.rowcount = reinterpret_cast<unsigned*>(base + l.rowcount);
  s.scan = reinterpret_cast<unsigned*>(base + l.scan);
  s.label = reinterpret_cast<int*>(base + l.label);
  s.job_end = reinterpret_cast<int*>(base + l.job_end);
  s.items = reinterpret_cast<unsigned short*>(base + l.items);
  s.counts = reinterpret_cast<unsigned*>(base + l.counts);
  s.sums = reinterpret_cast<float*>(base + l.sums);
  s.staged = reinterpret_cast<float*>(base + l.staged);
  s.tile = reinterpret_cast<int*>(base + l.tile);
  return s;
}

}  // namespace mk::gemm_window
