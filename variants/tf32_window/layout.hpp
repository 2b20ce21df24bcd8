#pragma once
// tf32-window's shapes as numbers, shared by the host (sizing, refusals) and the kernels
// (shared-memory carving, the image's fragment order).
#include <cstdint>

#include "core/device_info.hpp"
#include "variants/common/near_tie_bound.hpp"

namespace mk::tf32_window {

// Point fragments are register-resident: eight m16n8k16 steps of 16 dimensions at most
// (64 registers a lane at N=128).
constexpr int kMaxDims = 128;
// Up to four steps one kernel serves every block (built for 512 threads: 128 registers).
// Wider fragments get a kernel per block bound: 256 threads (255 registers, 8 warps an SM)
// or 384 (168 registers, ~50 bytes spilled, 12 warps).
constexpr int kNarrowSteps = 4;
constexpr int kWideMaxBlock = 384;
// Below this the FP64 atomic update serialises on K·N addresses: on the H200, N=8 M=8M took
// 5.0 ms at K=32 and 2.6 ms at K=64 against 0.34 and 0.64 ms for auto's choice; from K=128
// (2.1 against 2.9 ms) and at N=32 from K=64 (0.90 against 1.75 ms) this variant was faster
// (commit 16597f1).
constexpr int kMinK = 64;
// The in-window count decodes a lane's key indices from FP32 sums weighted by W = 2^bits
// (bits = index_bits(kpad)); 13 bits keep Σi² of two keys exact.
constexpr int kMaxIndexBits = 13;
constexpr int kPadCentroids = 32;  // whole n-tiles of 8, four per lane quad
// Per warp: 32 labels, 32 scan masks, 32 ambiguity flags, a work list of up to 8 in-window
// keys for each of 32 rows, and 32 packed exact minima.
constexpr int kWarpScratchWords = 32 + 32 + 32 + 256 + 64;

inline int64_t padded_centroids(int k) { return (int64_t(k) + kPadCentroids - 1) / kPadCentroids * kPadCentroids; }
inline int index_bits(int64_t kpad) {
  int bits = 0;
  while ((int64_t(1) << bits) < kpad) ++bits;
  return bits;
}
// m16n8k16 steps of 16 dimensions, as the kernels are instantiated: 1 to 4, then 6 and 8
// (N = 65..80 and 97..112 run on zero-padded steps rather than two more kernel pairs).
inline int f16_steps(int n) {
  const int steps = (n + 15) / 16;
  return steps <= kNarrowSteps ? steps : steps <= 6 ? 6 : 8;
}
// The largest block the kernels for N dimensions are built for.
inline int max_block_for(int n) { return f16_steps(n) > kNarrowSteps ? kWideMaxBlock : 512; }

// The sweeps read one n-tile past the image (256·H bytes) and leave it unused; up to
// kNarrowSteps that stays inside the norm quads, weights, μ and counts that follow it at the
// smallest table (kpad = 64: 8·kpad + 16·kpad/8 + 4·kMaxDims bytes before the counts), so it
// never meets the per-warp scratch or the counts' atomics. Wider kernels clamp it
// (key_sweeps.cuh's ahead_tile).
static_assert(256 * kNarrowSteps <= 8 * 64 + 16 * 64 / 8 + 4 * kMaxDims,
              "the narrow sweeps' look-ahead would reach the block's counts at K = 64");

// Dynamic shared memory: the image; the C quads {‖c_2t‖², ‖c_2t+1‖², same}, so a quad is one
// LDS.128 into the 4 consecutive registers HMMA reads; per n-tile the weights
// {W + 2nt, W + 2nt + 1, (2nt)², (2nt + 1)²}; μ; per-block counts; per-warp scratch
// (shared_table.cuh carves it in this order).
inline int64_t f16_smem_bytes(int64_t kpad, int steps, int block) {
  return kpad * steps * 32 + kpad / 2 * 16 + kpad / 8 * 16 + kMaxDims * 4 + kpad * 4 +
         int64_t(block / 32) * kWarpScratchWords * 4;
}
// update=shared: the block's FP32 sums of x − μ, K × N floats, after the per-warp scratch.
inline int64_t shared_sums_bytes(int k, int n) { return int64_t(k) * n * 4; }
// The block's dynamic shared memory, with the shared sums when sums_bytes > 0.
inline int64_t smem_for(int64_t kpad, int n, int block, int64_t sums_bytes = 0) {
  return f16_smem_bytes(kpad, f16_steps(n), block) + sums_bytes;
}
// update=shared is the default where the block's FP32 sums take at most this much: K·N up to
// 4096 addresses, where the FP64 REDs of update=global serialise on few of them. H200,
// 679f279, shared against global (ms): 32/64/16M 2.58 / 5.13, 16/128/8M 1.68 / 2.57,
// 64/64/8M 2.75 / 5.04; from K·N = 6144 the CAS loop of shared FP32 atomics costs more than
// the REDs: 48/128/8M 3.20 / 2.66, 32/256/2M 0.569 / 0.524, 64/256/4M 2.26 / 1.88,
// 32/1024/2M 1.69 / 1.19 (reports/results/nvidia-h200/tf32-window-update.txt).
constexpr int64_t kSharedSumsUpTo = 16 * 1024;
// update=shared flushes the FP32 sums after at most this many of a block's points, as
// variants/common/block_accumulators.cuh does (no FP32 partial holds more than 4096 addends).
constexpr int kMaxPointsPerFlush = 4096;
inline int flush_steps(int block) { return kMaxPointsPerFlush / block > 0 ? kMaxPointsPerFlush / block : 1; }
inline int64_t smem_limit(const DeviceInfo& device) {
  return device.smem_per_block_optin > 0 ? device.smem_per_block_optin : 48 * 1024;
}

// Half index of c[j][d] in fragment order: per (n-tile, lane) the lane's four dims of every
// step, contiguous, so a lane reads its B fragments of one n-tile with one or two LDS.128.
MK_HOST_DEVICE inline int64_t f16_image_offset(int j, int d, int steps) {
  const int nt = j / 8, g = j % 8, step = d / 16, t = (d % 16) / 4;
  return ((int64_t(nt) * 32 + g * 4 + t) * steps + step) * 4 + d % 4;
}

}  // namespace mk::tf32_window
