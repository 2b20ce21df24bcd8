// tensor-multik: seed 000's MultiK iteration (every K of the range per point read) with the
// distances on tensor cores, for the small-K, small-N regime of the seed's tables.
//
// registers-multik spends ~200 FFMA per point on distances and is issue-bound at ~1.2 ms on
// the Table-1 case (reports/NOTES-perf.md, v4). Here one warp step of 32 points does:
//   stream   points reach shared memory through a per-warp ring of cp.async stages, so each
//            warp keeps STAGES-1 steps of loads in flight without spending registers on them;
//   distance D[32 points × ΣK slots] = ‖c‖² + X·(−2C)ᵀ, the centroid fragments held in registers
//            for the whole kernel. distance=f16x2 (the default up to N = 16): mma.m16n8k16 FP16
//            whose k holds the hi and lo parts of each coordinate as separate features (one MMA
//            per tile at N ≤ 4, two at N ≤ 8, three at N ≤ 16; FP32-class accuracy, see DIST_F16);
//            distance=tf32x3: mma.m16n8k8 TF32, x_hi·c_lo + x_lo·c_hi + x_hi·c_hi;
//   argmin   the fragments are transposed through shared memory (stmatrix on sm_90) so each
//            lane owns one point's row of ΣK distances, and the argmin is a straight line per
//            lane, no shuffles. argmin=mask (the default up to ΣK = 32): each group's plain
//            minimum, then one bit per slot, "inside the window of its group's minimum", from
//            the sign of key − (min + window) by a funnel shift: when every group has exactly one
//            bit (one popcount) that word is the point's one-hot word. argmin=packed (ΣK > 32):
//            the index packed into each key's low mantissa bits, the window counted with
//            saturating FFMAs;
//   labels   FP32-faithful: when a second centroid lies within the forward-error window of
//            the 3xTF32 expansion (TIE_SCALE, derived on the host) or the point sits so near
//            its centroid that the expansion would show in the inertia, the lane re-decides that
//            K group with exact FP32 Σ(x−c)², as registers-multik and gemm-tf32x3 do, over
//            the centroids within two windows of its best (read back from the transposed row);
//   update   one-hot(labels)ᵀ·X on tensor cores, accumulators in MMA fragments for the whole
//            kernel. Default (update=f16): m16n8k16 FP16, X split hi+lo in FP16 after a
//            power-of-two scale (with distance=f16x2, the distance's own operands transposed by
//            movmatrix), and each one-hot operand one AND of a shuffled word whose
//            bytes two points' one-hot bits share, the bit itself being an FP16 subnormal;
//            the counts are sums of the same registers. update=tf32 keeps the m16n8k8 TF32
//            product (32 one-hot operands per step built bit by bit);
//   finish   fragments → shared FP32 → FP64 global atomics; the last block to finish divides
//            the sums into the new centroids and clears the scratch for the next iteration,
//            so one Lloyd iteration is one kernel launch (no memsets, no divide kernel).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>
#include <vector>

#include <cuda_fp16.h>

#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/common/nvrtc_module.hpp"
#include "variants/common/packed_argmin.hpp"
#include "variants/tensor_multik.hpp"

namespace mk {
namespace {

// The kernel template; the host prepends the #defines of one specialisation.
const char* kTensorMultiKSource = R"MKSRC(
#define FULL_MASK 0xffffffffu
typedef unsigned long long u64;
#define KCOUNT (KMAX - KMIN + 1)
#define OFFSET(k) (((KMIN) + (k) - 1) * ((k) - (KMIN)) / 2)
#define NT ((SUMK + 7) / 8)          // 8-slot n-tiles of both products
#define NCB ((NT + 3) / 4)           // 32-slot column blocks transposed at a time
#define DK ((NDIM + 7) / 8)          // k-steps of the distance product = row tiles of the update
#define WARPS (BLOCK / 32)
#define STEP_FLOATS (32 * NDIM)
#define CHUNKS_PER_LANE ((8 * NDIM + 31) / 32)
// A transposed row holds the 8·NT (at most 32) columns of one column block, padded by one
// 16-byte chunk: an odd number of chunks per row puts the 8 rows a stmatrix or a quarter-warp
// LDS.128 touches in 8 different 16-byte bank groups, and every chunk of a lane's row sits at
// a fixed offset from its start. Sizing it to the columns (20 floats for ΣK ≤ 16, not 36)
// leaves shared memory for more warps or stages where registers allow them.
#define TCOLS (NT < 4 ? 8 * NT : 32)
#define TROW (TCOLS + 4)
// fetch=registers (FETCH_REGS): no stage ring. Each lane loads its distance fragments (rows g,
// g+8, 16+g, 24+g, two dims) from global memory straight into registers one step ahead, and ‖x‖²
// comes back through the transpose: each lane writes its rows' partial sums into the free
// slots of the last distance tile. ncu (session 14) put the N=8 kernel at 90 % of the L1
// data pipe: the cp.async copies cost 12 wavefronts per 512 bytes (4 ideal) and the ring's
// fragment and own-point reads 16 more per step.
// operands=prepared (PREPARED_OPERANDS, read by fetch=registers): the points were converted once,
// when the run was prepared, into the FP16 hi/lo words of the distance product's A fragments, in
// the order the lanes hold them (N=8: two 16-byte words per lane and step, N=4: one), and ‖x‖²
// into an array of its own. A step then loads its operands and ‖x‖² and computes neither: the
// split, the ‖x‖² partials and their trip through the transpose were ~40 of the ~300
// instructions of an N=8 step (session 14 profile). The FP32 rows stay for the exact fix-up.
#define XX_IN_TILE (FETCH_REGS && !PREPARED_OPERANDS)
#if PREPARED_OPERANDS && !FETCH_REGS
#error "operands=prepared is read by fetch=registers"
#endif
#if FETCH_REGS
#if !(DIST_F16 && (NDIM == 4 || NDIM == 8) && ARGMIN_MASK && (PREPARED_OPERANDS || SUMK - 8 * (NT - 1) <= 4))
#error "fetch=registers needs distance=f16x2, N of 4 or 8, argmin=mask and (per-step operands) 4 free slots in the last tile"
#endif
// operands=prepared with fetch=ring (PREPARED_RING): the prepared words and ‖x‖² travel
// through a per-warp cp.async ring of STAGES steps (a step's slot: 32·FRAG_VECS 16-byte words,
// then 32 ‖x‖²) instead of one register load a step ahead. With the step down to ~150
// instructions, N=4 waited on those loads (long scoreboard 2.0 per instruction, session 16):
// one step of 640 bytes in flight per warp is too little to cover a DRAM round trip.
// Measured slower on the H200 at every depth (session 17: N=4 0.281 → 0.30-0.35 ms, N=8 K=16
// 0.10 → 0.11): the L1 pipe, 82 % busy at N=4, pays an LDGSTS and two shared loads more a step.
// Not a default; N=4 loads two steps ahead into registers instead (TWO_AHEAD).
#define FRAG_VECS (NDIM == 8 ? 2 : 1)
#if INT_GROUP_MIN && !(PREPARED_OPERANDS && ARGMIN_MASK)
#error "group_min=int needs operands=prepared (its key bias) and argmin=mask"
#endif
#if PREPARED_RING && !PREPARED_OPERANDS
#error "the prepared ring carries operands=prepared words"
#endif
#define PREPARED_STEP_FLOATS (32 * (4 * FRAG_VECS + 1))
#define RING_FLOATS (PREPARED_RING ? STAGES * PREPARED_STEP_FLOATS : 0)
#define WARP_FLOATS (RING_FLOATS + 32 * TROW)
#else
#define RING_FLOATS (STAGES * STEP_FLOATS)
#define WARP_FLOATS (RING_FLOATS + 32 * TROW)
#endif
#define IDX_MASK ((1u << IDX_BITS) - 1u)
#define SWIZZLE16 (NDIM == 16)
#if DIST_F16
// distance=f16x2: the distance product's k dimension holds "features", 16 per m16n8k16 step,
// each the FP16 hi or lo part of one dimension of x (×2^e when SCALE_X):
//   N ≤ 4: [hi 0-3 | lo 0-3 | hi 0-3 | lo 0-3] against [c_hi | c_hi | c_lo | c_lo]: the whole
//          (hi+lo)·(hi+lo) product in one MMA;
//   N ≤ 8: [hi 0-7 | lo 0-7] against [c_lo | c_hi] and [c_hi | c_lo]: two MMAs (a B pair of
//          two different registers: [c_hi | c_hi] made ptxas copy one into a pair before
//          every MMA, 16 moves a step);
//   wider: KT steps of hi and KT of lo features: hi·c_hi, lo·c_hi, hi·c_lo, 3·KT MMAs.
// The update reads the same FP16 registers transposed (movmatrix), so its rows are these
// features too: FT tiles of 16, and a dimension's sum is its hi plus its lo feature's.
#if !UPDATE_F16
#error "distance=f16x2 shares its FP16 point operands with update=f16"
#endif
#define KT ((NDIM + 15) / 16)
#define FT (NDIM <= 8 ? 1 : 2 * KT)
#define FEATS (16 * FT)
#define LO_FEATURE(d) (NDIM <= 4 ? 4 + (d) : NDIM <= 8 ? 8 + (d) : 16 * KT + (d))
// N ≤ 4 (8 features): the update's product is slots × features, tiles in pairs (see the update).
#define UPDATE_T (UPDATE_F16 && DIST_F16 && NDIM <= 4)
#define PAIRS ((NT + 1) / 2)
#define UPDATE_TILES FT
// The kernel works in points ×x_scale throughout (distances ×x_scale²), centroids included.
#define DSCALE SCALE_X
#else
#define UPDATE_TILES DK
#define DSCALE 0
#endif
#if SUMK <= 32
typedef unsigned hot_t;
#define WORDS 1
#else
typedef unsigned long long hot_t;
#define WORDS 2
#endif
// The update's partner word is shuffled before the fix-up branch (see the step).
#define EARLY_PARTNER (ARGMIN_MASK && UPDATE_F16 && WORDS == 1)
// DEFERRED_UPDATE: a step's update (its shuffles, masks and MMAs) runs in the next step's first
// block, beside that step's distance MMAs, loads and transposes, so ptxas can overlap the two
// dependency chains in one warp; the last step's runs after the loop. Until then the step's
// one-hot word, partner word and update operands wait in registers. On by default where the
// lean step is: H200, same binary, N=4 K=3..5 0.2640 → 0.2585 ms, N=8 K=16 0.0929 → 0.0918
// (session 20 call 2). N=8 K=3..7 without the lean step spills 8 bytes with it at its
// 128-register cap and ran 4 % slower (with it: no spill, see LEAN_STEP); the prepared ring
// spills 24 (NVRTC, sm_90).
#ifndef DEFERRED_UPDATE
#define DEFERRED_UPDATE (LEAN_STEP && !PREPARED_RING)
#endif
#define DEFERRED (DEFERRED_UPDATE && PREPARED_OPERANDS && UPDATE_F16 && DIST_F16 && EARLY_PARTNER)
// DYNAMIC_TAIL: the last 2^-TAIL_SHIFT of the steps are handed out in chunks of TAIL_CHUNK
// contiguous steps from one counter in global memory, instead of grid-strided. With fixed shares
// the warp scheduler's favourites finish first: a timeline (session 22, H200) put the warps of one
// N=4 block 6-13 µs apart at the end of a 250 µs launch, and at N=8 K=3..7 (two blocks per SM) one
// block of every SM ~40 µs ahead of the other, so the SMs ran their last stretch half full.
// Operands=prepared with fetch=registers (their loads follow the warp's order of steps). On by
// default at N=8's 128-register shapes: N=8 K=3..7 0.5143/0.5142 → 0.4905/0.4906 ms (H200, session
// 22 call 4; chunks of 16: 0.496, a sixteenth as tail: 0.496). At N=4 (640 × 1) it measured 1.5-2 %
// slower (calls 3 and 4), so there it stays off.
#ifndef DYNAMIC_TAIL
#define DYNAMIC_TAIL (NDIM == 8 && BLOCK * MIN_BLOCKS <= 512)
#endif
#ifndef TAIL_SHIFT
#define TAIL_SHIFT 3
#endif
#ifndef TAIL_CHUNK
#define TAIL_CHUNK 8
#endif
// Grid-strided steps each warp takes in the tail loop before its first chunk: its first claim
// has their time to come back.
#define TAIL_STRIDED 4
// Whether the tail's steps defer their updates too: at the 128-register shapes the tail loop's
// state beside the deferred update spilled 44 bytes (N=8 K=3..7), so there they update in place.
#ifndef TAIL_DEFERRED
#define TAIL_DEFERRED (BLOCK * MIN_BLOCKS > 512)
#endif
#define DYNAMIC (DYNAMIC_TAIL && PREPARED_OPERANDS && FETCH_REGS && !PREPARED_RING)
// N=4 (fetch=registers): the words are loaded two steps ahead, not one. Its step is short
// (~150 instructions) and it waited on those loads (long scoreboard 2.0 cycles per instruction,
// session 16); the step loop is unrolled by 2 so that the two register sets trade roles
// without moves (a move would wait on the load as the use does). 80 registers, its cap at
// 384 × 2; N=8 has no registers to spare at 128. H200, same call: 0.281 → 0.273 ms (session 17).
#define TWO_AHEAD (PREPARED_OPERANDS && !PREPARED_RING && NDIM == 4)

// D = A·B + D (accumulate) and D = A·B + C (first product of a tile, C = the tile's ‖c‖²
// quad straight from shared memory, so no register moves build the initial accumulator).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma_tf32_from(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1,
                                              const float4 c) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
}

// The same value, out of a shuffle: ptxas can neither recompute it nor merge it with its source,
// so it keeps a register of its own for the whole kernel. A second copy of a value that an MMA
// needs in another register pair, or an address ptxas would otherwise rebuild from the thread
// index every step, costs one shuffle per kernel instead of moves per step.
__device__ __forceinline__ unsigned pinned(unsigned v) { return __shfl_sync(FULL_MASK, v, threadIdx.x & 31); }
// Pinned only up to N=8 and where launch bounds leave more than 64 registers: N=16 at 128, and
// N=8 K=16 at 64 (512 × 2), spill with the pinned values (NVRTC, sm_90).
#define PIN_IF_ROOM_ENABLED (NDIM <= 8 && BLOCK * MIN_BLOCKS < 1024)
#define PIN_IF_ROOM(v) (PIN_IF_ROOM_ENABLED ? pinned(v) : (unsigned)(v))
// LEAN_STEP: forms that save instructions a step but cost registers or change ptxas's schedule:
// the window as one FMA on ‖x‖² (its coefficient held beside its constant, no square root), the
// lane's step limit held (one compare), the fix-up test without short-circuits (no branch), the
// guard's multiply inside the fix-up, and the fold's test as a warp vote. The prepared forms with
// more than 512 threads per SM take them (N=4 K=3..5 and N=8 K=16 by default): there they
// measured 3-6 % faster (H200, session 19 calls 1-5). N=8 K=3..7 (256 × 2, 128 registers) ran
// 1 % slower with them alone (session 19) but, together with the deferred update they bring,
// 1 % faster: 0.5104-0.5157 against 0.5148-0.5201 ms in three calls (session 21); with
// scaled points (scale=on) it spills 8 bytes. N=16 (operands=per-step) and N=8 with
// group_min=int spill 4-16 bytes with them (NVRTC, sm_90).
// LEAN_STEP_ANY_BLOCK=1 (experiments): the lean step at every block shape its forms allow.
#ifndef LEAN_STEP_ANY_BLOCK
#define LEAN_STEP_ANY_BLOCK 0
#endif
#define LEAN_STEP (DIST_F16 && PREPARED_OPERANDS && !INT_GROUP_MIN && PIN_IF_ROOM_ENABLED &&           \
                   (LEAN_STEP_ANY_BLOCK || BLOCK * MIN_BLOCKS > 512 ||                               \
                    (BLOCK * MIN_BLOCKS == 512 && NDIM == 8 && NT == 4 && !DSCALE)))
__device__ __forceinline__ const float* pinned_pointer(const float* p) {
  if (!PIN_IF_ROOM_ENABLED) return p;
  const unsigned long long bits = reinterpret_cast<unsigned long long>(p);
  return reinterpret_cast<const float*>((unsigned long long)pinned((unsigned)bits) |
                                        ((unsigned long long)pinned((unsigned)(bits >> 32)) << 32));
}

// Shared loads at a 32-bit shared address (a pinned one stays a register plus an immediate).
__device__ __forceinline__ float4 lds128(unsigned addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0,%1,%2,%3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ float lds32(unsigned addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ float2 lds64(unsigned addr) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0,%1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr) : "memory");
  return v;
}

__device__ __forceinline__ unsigned tf32_rna(float v) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return r;
}

// Points for the distances: hi rounded to nearest (integer add of half a TF32 ulp, then
// mask), lo = v − hi exactly. Rounding, not truncation, keeps the expansion unbiased: its
// error feeds the inertia directly.
__device__ __forceinline__ void split_nearest(float v, unsigned& hi, unsigned& lo) {
  hi = (__float_as_uint(v) + 0x1000u) & 0xffffe000u;
  lo = __float_as_uint(v - __uint_as_float(hi));
}

#if UPDATE_F16
// D += A·B with A 16×16 and B 16×8 in FP16, FP32 accumulators.
__device__ __forceinline__ void mma_f16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_f16_from(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1,
                                             const float4 c) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
}
// m16n8k8: A is two words (rows g and g+8, k = 2t, 2t+1), B one (k = 2t, 2t+1, column g).
__device__ __forceinline__ void mma_f16_k8(float (&d)[4], unsigned a0, unsigned a1, unsigned b) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(b));
}
__device__ __forceinline__ void mma_f16_k8_from(float (&d)[4], unsigned a0, unsigned a1, unsigned b, const float4 c) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a0), "r"(a1), "r"(b), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
}
// An 8×8 FP16 fragment (lane 4r + c: row r, columns 2c, 2c+1) transposed across the warp.
__device__ __forceinline__ unsigned transpose8x8(unsigned v) {
  unsigned r;
  asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(v));
  return r;
}

// Two values as FP16 hi and lo pairs (first value in the low half): hi rounded to nearest,
// lo = v − hi rounded again, so each value keeps ~22 bits inside FP16's range.
__device__ __forceinline__ void split_half2(float v0, float v1, unsigned& hi, unsigned& lo) {
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(hi) : "f"(v1), "f"(v0));
  float h0, h1;
  asm("{.reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.f32.f16 %0, l;\n cvt.f32.f16 %1, h;}\n"
      : "=f"(h0), "=f"(h1)
      : "r"(hi));
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(lo) : "f"(v1 - h1), "f"(v0 - h0));
}
#else
// Points for the update: truncating split, 2 instructions; the pair keeps ~21 bits, which
// is plenty for sums checked to 1e-4.
__device__ __forceinline__ void split_truncate(float v, unsigned& hi, unsigned& lo) {
  hi = __float_as_uint(v) & 0xffffe000u;
  lo = __float_as_uint(v - __uint_as_float(hi));
}
#endif

__device__ __forceinline__ void cp_async16(unsigned smem_dst, const float* gmem_src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_dst), "l"(gmem_src) : "memory");
}
__device__ __forceinline__ void cp_async4(unsigned smem_dst, const float* gmem_src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_dst), "l"(gmem_src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Where (row, dim) of a staged step lives. For N=16 a row is 4 chunks of 16 bytes and two
// rows fill the 32 banks, so unswizzled the 8 rows of a quarter-warp's LDS.128 (a lane's own
// point) meet in 2 bank groups, and the fragment loads of rows r and r+2 in the same banks.
// Chunk c of row r sits at c ^ ROW_SWIZZLE(r), ROW_SWIZZLE(r) = ((r>>1)&1)·2 + ((r>>2)&1):
// rows r..r+7 of one parity then take 4 different chunk positions (own-row loads and the
// cp.async stores conflict-free), rows r and r+2 differ in bit 1 (fragment pairs), and
// rows 8 apart share a swizzle (the fragment rows g, g+8, 16+g, 24+g).
#define ROW_SWIZZLE(row) (((((row) >> 1) & 1) << 1) | (((row) >> 2) & 1))
__host__ __device__ constexpr int stage_index(int row, int dim) {
#if SWIZZLE16
  return row * NDIM + (dim ^ (ROW_SWIZZLE(row) << 2));
#else
  return row * NDIM + dim;
#endif
}

// Byte offset in a stage of the u-th 16-byte chunk a lane copies (chunk lane + 32u).
__device__ __forceinline__ unsigned chunk_offset(int lane, int u) {
  const int chunk = lane + 32 * u;
#if SWIZZLE16
  const int row = chunk >> 2, c = chunk & 3;
  return (unsigned)(row * 64 + ((c ^ ROW_SWIZZLE(row)) << 4));
#else
  return (unsigned)(16 * chunk);
#endif
}

// A lane's fixed element offsets (in floats) into a staged step, for the three patterns it
// reads every step: its own point (row lane), the distance product's A fragments (rows g,
// g+8, 16+g, 24+g; dims 8kk+2t, 8kk+2t+1) and the update's A operands (rows t + 4u, plus
// 8·group or 16·kg; dim 8q+g). Computed once, so a step's loads cost one add per pattern
// instead of per-load address arithmetic. Under the N=16 swizzle a row's offset has zero
// low 4 bits, so chunk c of the own row is one XOR away (own ^ 4c), and row t+4 differs
// from row t in swizzle bit 0 only (update ^ 4). Other N keep one own offset per 8 dims
// and plain element reads: a single offset with vector loads measured ~1 % slower at N=8
// (session 8, same-call A/B).
struct StageOffsets {
  int own[DK], frag[DK], update[DK];
};
__device__ __forceinline__ StageOffsets stage_offsets(int lane) {
  const int g = lane >> 2, t = lane & 3;
  StageOffsets o;
#pragma unroll
  for (int h = 0; h < DK; ++h) {
    o.own[h] = stage_index(lane, 8 * h);
#if DIST_F16 && NDIM <= 4
    o.frag[h] = stage_index(g, 2 * (t & 1));  // lanes t and t+2 read the same dims (hi and lo features)
#else
    o.frag[h] = stage_index(g, 8 * h + 2 * t);
#endif
    o.update[h] = stage_index(t, 8 * h + g);
  }
  return o;
}
// The update's value of row t + 4u, dim 8q + g, `step_offset` floats into the stage. Other N
// than 16 keep the pointer form (X + offset + step_offset)[4u·N]: adding the lane offset and
// 4u·N as integers first costs N=4 K=3..5 two registers and 5 % of its time (session 9: the
// 5 % that session 8 could not explain; NVRTC's SASS differs from nvcc's on this).
#if SWIZZLE16
#define UPDATE_VALUE(q, u, step_offset) (*(X + ((offsets.update[q] ^ (((u) & 1) << 2)) + 4 * (u) * NDIM) + (step_offset)))
#else
#define UPDATE_VALUE(q, u, step_offset) ((X + offsets.update[q] + (step_offset))[4 * (u) * NDIM])
#endif

// This lane's point from a staged step. N=16: whole 16-byte chunks (LDS.128), so the
// swizzle's XOR cannot hide the alignment from the compiler.
__device__ __forceinline__ void load_own_point(const float* X, const int (&own)[DK], float (&x)[NDIM]) {
#if SWIZZLE16
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const float4 v = *reinterpret_cast<const float4*>(X + (own[0] ^ (4 * c)));
    x[4 * c] = v.x, x[4 * c + 1] = v.y, x[4 * c + 2] = v.z, x[4 * c + 3] = v.w;
  }
#else
#pragma unroll
  for (int d = 0; d < NDIM; ++d) x[d] = X[own[d >> 3] + (d & 7)];
#endif
}

// Dimensions dim and dim+1 of the row `rows_down` rows below a fragment pattern's base row
// (frag already points at dim there), zero past N.
__device__ __forceinline__ float2 load_pair(const float* frag, int rows_down, int dim) {
#if NDIM % 2 == 0
  if (NDIM % 8 == 0 || dim < NDIM) return *reinterpret_cast<const float2*>(frag + rows_down * NDIM);
  return make_float2(0.f, 0.f);
#else
  return make_float2(dim < NDIM ? frag[rows_down * NDIM] : 0.f, dim + 1 < NDIM ? frag[rows_down * NDIM + 1] : 0.f);
#endif
}

// Chunk h = 2·(tile in block) + e of a point's transposed row holds the fragment words
// D[.][2t+e] of lanes t = 0..3, which COLUMN_SLOT makes slots 4h..4h+3 of the block.
// stmatrix: lane 8q+rho names row rho of matrix q, i.e. point 8·(q>>1) + rho, chunk q&1 of
// tile (0, 0); the shared address of that row is computed once per kernel, so every store's
// address is that base plus a constant.
__device__ __forceinline__ unsigned stmatrix_base(const float* tbuf, int lane) {
  const int q = lane >> 3, rho = lane & 7;
  return (unsigned)__cvta_generic_to_shared(tbuf + (8 * (q >> 1) + rho) * TROW + 4 * (q & 1));
}
// For a tile whose slots 4..7 are padding only its e = 0 words are stored (x2): lanes 0-15
// name rows 0-15 of chunk 0.
__device__ __forceinline__ unsigned stmatrix_half_base(const float* tbuf, int lane) {
  return (unsigned)__cvta_generic_to_shared(tbuf + (lane & 15) * TROW);
}
// A distance tile whose columns hold fewer than 5 real slots (the last tile of a ΣK with
// ΣK mod 8 in 1..4): its words D[.][2t+1] (slots 4..7) are never read back.
// (Storing such tiles whole saves the x2 form's 4 register moves a step, but measured 2 % slower
// at N=8: session 11, call 8.)
// fetch=registers stores the last tile whole: its free slots carry the ‖x‖² partials.
// (Storing a half last tile whole instead, without the moves that pair d[0] and d[2]: N=4
// neutral, N=8 K=3..7 4 % slower, H200, session 19 call 4.)
#define HALF_TILE(j) (!XX_IN_TILE && (j) == NT - 1 && SUMK - 8 * (NT - 1) <= 4)
__device__ __forceinline__ void store_fragment(float* tbuf, unsigned stsm_base, unsigned stsm_half_base, int tile_m,
                                               int tile_in_block, bool half, const float (&d)[4], int lane) {
#if USE_STMATRIX
  const unsigned offset = 4u * (16 * tile_m * TROW + 8 * tile_in_block);
  if (half) {
    asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1,%2};\n" ::"r"(stsm_half_base + offset),
                 "r"(__float_as_uint(d[0])), "r"(__float_as_uint(d[2]))
                 : "memory");
  } else {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};\n" ::"r"(stsm_base + offset),
                 "r"(__float_as_uint(d[0])), "r"(__float_as_uint(d[1])), "r"(__float_as_uint(d[2])),
                 "r"(__float_as_uint(d[3]))
                 : "memory");
  }
#else
  const int g = lane >> 2, t = lane & 3;
  float* row = tbuf + (16 * tile_m + g) * TROW + 8 * tile_in_block + t;
  row[0] = d[0];
  row[8 * TROW] = d[2];
  if (!half) {
    row[4] = d[1];
    row[8 * TROW + 4] = d[3];
  }
#endif
}

// The winner of K group k in a point's one-hot word.
__device__ __forceinline__ int group_label(hot_t hot, int k) {
#if SUMK <= 32
  return __ffs((unsigned)(hot >> OFFSET(k))) - 1;
#else
  return __ffsll((long long)(hot >> OFFSET(k))) - 1;
#endif
}

#define FOLD_STEPS 64
#define TILE_WORD(s) ((s) >> 2)
#define TILE_SUB(s) ((s) & 3)
#if UPDATE_F16
// Update columns: column g of tile s is slot 8s + g, i.e. bit g of byte TILE_SUB(s) of one-hot
// word TILE_WORD(s). Its one-hot value is the FP16 subnormal 2^(g-24) (the bit itself, moved to
// bit g of a half), so lane g's count registers hold per-half sums in units of 2^g.
#define TILE_SLOT(s, column) (8 * (s) + (column))

// Counts in units of 2^g per 16-bit half, at most 4·2^7 per step: flushed every FOLD_STEPS (64:
// at most 2^15 per half).
__device__ __forceinline__ void flush_counts(unsigned (&tile_counts)[NT], unsigned* block_counts, int g, int t) {
#pragma unroll
  for (int s = 0; s < NT; ++s) {
    unsigned c = ((tile_counts[s] & 0xffffu) + (tile_counts[s] >> 16)) >> g;
    tile_counts[s] = 0u;
#else
// Update columns. Tile s belongs to one-hot word TILE_WORD(s), which feeds WORD_TILES(w) tiles
// (its slots over 8, rounded up); column g of tile s holds slot 32w + WORD_TILES(w)·g +
// TILE_SUB(s), so lane g reads the WORD_TILES(w) adjacent bits at WORD_TILES(w)·g of the word.
#define WORD_TILES(w) ((((SUMK - 32 * (w)) < 32 ? (SUMK - 32 * (w)) : 32) + 7) / 8)
#define TILE_SLOT(s, column) (32 * TILE_WORD(s) + WORD_TILES(TILE_WORD(s)) * (column) + TILE_SUB(s))

// Per-lane one-hot bit sums are weighted 2^TILE_SUB(s) (8 points per lane per step, so they
// fit 32 bits for thousands of steps; the kernel flushes them every FOLD_STEPS).
__device__ __forceinline__ void flush_counts(unsigned (&tile_counts)[NT], unsigned* block_counts, int g, int t) {
#pragma unroll
  for (int s = 0; s < NT; ++s) {
    unsigned c = tile_counts[s] >> TILE_SUB(s);
    tile_counts[s] = 0u;
#endif
    c += __shfl_xor_sync(FULL_MASK, c, 1);
    c += __shfl_xor_sync(FULL_MASK, c, 2);
    const int slot = TILE_SLOT(s, g);
    if (t == 0 && slot < SUMK && c) atomicAdd(&block_counts[slot], c);
  }
}

// Pairwise reduction of x[0..count) in place: for the group min (exact) and the sum of the
// window's 0/1 counts it gives what a chain gives, in log2(count) dependent steps instead of
// count-1, which matters where a warp's step is latency-bound (one K of 16: 15 + 16 chained
// ALU and FMA ops).
template <int CAP, typename Op>
__device__ __forceinline__ float tree_reduce(float (&x)[CAP], int count, Op op) {
#pragma unroll
  for (int stride = 1; stride < CAP; stride *= 2)
#pragma unroll
    for (int i = 0; i + stride < CAP; i += 2 * stride)
      if (i + stride < count) x[i] = op(x[i], x[i + stride]);
  return x[0];
}

__device__ __forceinline__ float exact_distance(const float* x_row, const float* c_row) {
  float e = 0.f;
#pragma unroll
  for (int d = 0; d < NDIM; ++d) {
    const float diff = x_row[d] - c_row[d];
    e = fmaf(diff, diff, e);
  }
  return e;
}

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS) tensor_multik_iteration(
    const float* __restrict__ points, long long m, float* centroids, double* sums, u64* counts_scratch,
    double* inertia_scratch, unsigned* blocks_done, u64* __restrict__ counts_out, double* __restrict__ inertia_out,
    int* __restrict__ labels, unsigned keep_mask, float x_scale, const uint4* __restrict__ frag_layout,
    const float* __restrict__ point_norms, const float* __restrict__ point_shift, float key_bias,
    unsigned long long* __restrict__ timeline) {
  extern __shared__ __align__(16) float smem[];
  // TIMELINE=1 (a diagnostic, MKBENCH_TIMELINE): global-timer stamps of where each block's time
  // goes, TIMELINE_FIELDS + WARPS per block (see the host's timeline dump), then the last block's
  // finish.
#ifndef TIMELINE
#define TIMELINE 0
#endif
#define TIMELINE_FIELDS 5
#if TIMELINE
  // (The block's record is recomputed at each stamp from the parameter: a pointer held through
  // the step loop spilled 48 bytes at N=8.)
#define STAMP(field)                                                                        \
  do {                                                                                      \
    if (timeline) {                                                                         \
      unsigned long long now_ns;                                                            \
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now_ns));                            \
      timeline[blockIdx.x * (TIMELINE_FIELDS + WARPS) + (field)] = now_ns;                  \
    }                                                                                       \
  } while (0)
  if (threadIdx.x == 0) {
    STAMP(1);
    if (timeline) {
      unsigned sm;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
      timeline[blockIdx.x * (TIMELINE_FIELDS + WARPS)] = sm;
    }
  }
#else
#define STAMP(field) \
  do {               \
  } while (0)
#endif
  float* s_c = smem;                                   // SUMK × NDIM exact centroids
  float* s_norm = s_c + ((SUMK * NDIM + 3) & ~3);      // SUMK ‖c‖²
  float* warp_areas = s_norm + ((SUMK + 3) & ~3);     // WARPS × (stage ring + transpose buffer)
  __shared__ unsigned block_counts[SUMK];
  __shared__ double s_inertia[WARPS * KCOUNT];
  __shared__ float4 s_norm_quads[NT * 4];
  __shared__ float s_max_norm;
  __shared__ unsigned s_ticket;
#if CFRAG_SHARED && DIST_F16
  __shared__ uint4 s_bfrag[NT * KT * 32];  // lane's {c_hi0, c_hi1, c_lo0, c_lo1} of tile j, k-step kt
#elif CFRAG_SHARED
  __shared__ uint4 s_bfrag[NT * DK * 32];  // lane's {hi0, hi1, lo0, lo1} of tile j, k-step kk
#endif

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;

  float* ring = warp_areas + warp * WARP_FLOATS;
  float* tbuf = ring + RING_FLOATS;
  const unsigned stsm_base = PIN_IF_ROOM(stmatrix_base(tbuf, lane)),
                 stsm_half_base = PIN_IF_ROOM(stmatrix_half_base(tbuf, lane));
  // This lane's transposed row, and its quad of the tiles' ‖c‖² (+64 bytes per tile).
  const unsigned row_shared = PIN_IF_ROOM((unsigned)__cvta_generic_to_shared(tbuf + lane * TROW));
  const unsigned norms_shared = PIN_IF_ROOM((unsigned)__cvta_generic_to_shared(&s_norm_quads[t]));
  const unsigned ring_shared = (unsigned)__cvta_generic_to_shared(ring);
#if SWIZZLE16
  // Chunk lane + 32u lies 8u rows (512u bytes) below chunk lane, under the same swizzle: one
  // register instead of four keeps N=16 at 128 registers without spilling.
  const unsigned chunk_base = chunk_offset(lane, 0);
#define CHUNK_OFF(u) (chunk_base + 512 * (u))
#else
  unsigned chunk_off[CHUNKS_PER_LANE];
#pragma unroll
  for (int u = 0; u < CHUNKS_PER_LANE; ++u) chunk_off[u] = chunk_offset(lane, u);
#define CHUNK_OFF(u) chunk_off[u]
#endif
  const StageOffsets offsets = stage_offsets(lane);
  // Step indices fit 32 bits up to 2^36 points; only the last step can be partial.
  const int steps = (int)((m + 31) / 32);
  const int last_step_points = (int)(m - 32LL * (steps - 1));
#if LEAN_STEP
  // This lane's point is real below this step: one compare a step. (Pinned: from `steps` and
  // the lane, ptxas rebuilt the 64-bit last-step count every N=4 step, 6 instructions of 145,
  // session 18 profile.)
  const int lane_steps = (int)pinned(lane < last_step_points ? steps : steps - 1);
#endif
  // Pinned: otherwise ptxas reloads gridDim from the constant bank twice a step (N=8 profile,
  // session 14: 2 % of the stall samples on those loads).
  const int warps_total = (int)PIN_IF_ROOM(gridDim.x * WARPS);
  const int warp_global = blockIdx.x * WARPS + warp;
  // The step being fetched (one grid stride of warps apart); its source address is derived
  // from the index at each copy, which costs one wide multiply-add and no 64-bit loop state.
  int fetch = warp_global;
  const float* lane_src = pinned_pointer(points + 4 * lane);
  // Chunk u of a lane lies 512u bytes below chunk 0, swizzled or not.
  const unsigned lane_dst = PIN_IF_ROOM(ring_shared + CHUNK_OFF(0));
  int fetch_slot = 0;
  // Copies step `fetch` into ring slot fetch_slot (or commits an empty group past the end).
  auto fetch_next = [&]() {
    const unsigned dst = lane_dst + fetch_slot * (STEP_FLOATS * 4);
    // The device copy is padded with zero rows to whole steps (kAosPointPadding), so the
    // last step is copied like any other; its rows past M are never counted as points.
    if (fetch < steps) {
#pragma unroll
      for (int u = 0; u < CHUNKS_PER_LANE; ++u)
        if (lane + 32 * u < 8 * NDIM)
          cp_async16(dst + 512 * u, lane_src + (long long)fetch * STEP_FLOATS + 128 * u);
    }
    cp_async_commit();
    fetch += warps_total;
    fetch_slot = fetch_slot == STAGES - 1 ? 0 : fetch_slot + 1;
  };

  // The first steps' loads go out before the centroids are read and turned into fragments:
  // they do not depend on them, and each is a DRAM round trip the prologue then hides. With
  // more than 4 register-resident tiles the fetch state live across the fragment build costs
  // a spill (N=5 K=3..10), so those shapes fetch after it.
#define EARLY_FETCH (NT * DK <= 4 && !FETCH_REGS)
#if EARLY_FETCH
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) fetch_next();
#endif
// operands=prepared, the same for its register loads: the first FETCH_DEPTH steps' words go out
// before the centroid load, and the prologue's round trip hides them. N=4 only: H200, session 22,
// 0.2525/0.2522 against 0.2539/0.2541 ms (call 1) and 0.2471/0.2484 against 0.2515/0.2498 (call
// 5); at N=8 K=3..7 the registers held through the prologue spill 8 bytes.
#ifndef EARLY_PREPARED_FETCH
#define EARLY_PREPARED_FETCH (NDIM == 4)
#endif
#define EARLY_PREPARED (EARLY_PREPARED_FETCH && PREPARED_OPERANDS && !PREPARED_RING)
#if EARLY_PREPARED
  constexpr int kEarlySteps = NDIM == 4 ? 2 : 1;  // TWO_AHEAD's depth
  uint4 early_words[kEarlySteps][FRAG_VECS];
  float early_xx[kEarlySteps];
#pragma unroll
  for (int a = 0; a < kEarlySteps; ++a) {
    const long long first = min(warp_global + a * warps_total, steps - 1);
#pragma unroll
    for (int r = 0; r < FRAG_VECS; ++r) early_words[a][r] = __ldcg(frag_layout + lane + first * (32 * FRAG_VECS) + 32 * r);
    early_xx[a] = __ldcg(point_norms + lane + 32LL * first);
  }
#endif


#if DSCALE
  for (int j = threadIdx.x; j < SUMK * NDIM; j += BLOCK) s_c[j] = centroids[j] * x_scale;
#else
  for (int j = threadIdx.x; j < SUMK * NDIM; j += BLOCK) s_c[j] = centroids[j];
#endif
  for (int s = threadIdx.x; s < SUMK; s += BLOCK) block_counts[s] = 0u;
  if (threadIdx.x == 0) s_max_norm = 0.f;
#if PREPARED_OPERANDS
  // Prepared points are centred on the data's mean μ (their operands hold fl(x − μ)): the
  // distance product and ‖c‖² use fl(c − μ) the same way, while s_c keeps the exact centroids
  // for the fix-up. Scaling by a power of two commutes with that rounding.
  __shared__ float s_shift[NDIM];
  for (int d = threadIdx.x; d < NDIM; d += BLOCK) s_shift[d] = DSCALE ? point_shift[d] * x_scale : point_shift[d];
#define OPERAND_C(i) __fsub_rn(s_c[i], s_shift[(i) % NDIM])
#else
#define OPERAND_C(i) s_c[i]
#endif
  __syncthreads();
  // The centroids are in: their load is the prologue's one round trip. Not at 128 registers:
  // there this stamp (here or after the prologue's last barrier) changed the step loop's
  // allocation, 48 bytes of spill at N=8 K=3..7.
#if BLOCK * MIN_BLOCKS > 512
  if (threadIdx.x == 0) STAMP(2);
#endif
  for (int s = threadIdx.x; s < SUMK; s += BLOCK) {
    float norm = 0.f;
    for (int d = 0; d < NDIM; ++d) norm = fmaf(OPERAND_C(s * NDIM + d), OPERAND_C(s * NDIM + d), norm);
    s_norm[s] = norm;
    atomicMax((int*)&s_max_norm, __float_as_int(norm));  // norms are >= 0: int order == float order
  }
  __syncthreads();
  const float max_norm = s_max_norm;

  // Centroid operands for the whole kernel: B[k][n] = −2·c[slot][dim], with k index t ↔
  // dim 8kk+2t and t+4 ↔ dim 8kk+2t+1 (any k order works when A uses the same), split
  // hi + lo with round-to-nearest; ‖c‖² enters as the accumulator's initial value.
  // Column n of tile j holds slot 8j + COLUMN_SLOT(n): the fragment word D[.][2t+e] then
  // carries slot 8j + 4e + t, so each 4-word chunk of a transposed row holds 4 consecutive
  // slots and a K group is a consecutive run of one lane's registers.
#define COLUMN_SLOT(n) (4 * ((n) & 1) + ((n) >> 1))
#if DIST_F16
  // FP16 pairs: c_hi[j][kt][e] holds −2c of dims (16kt + 8e + 2t, +1) of the lane's slot, split
  // hi + lo to nearest like the points (N ≤ 4: dims 2(t&1), +1, e = 0 only). N ≤ 8 keeps the B
  // pairs of its two MMAs instead: c_hi = {hi, lo}, c_lo = {lo, hi} of dims 2t, 2t+1.
  const float abs_centroids = ABS_SCALE * 2.f * sqrtf(max_norm);
  unsigned c_hi[NT][KT][2], c_lo[NT][KT][2];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
#pragma unroll
    for (int kt = 0; kt < KT; ++kt)
#pragma unroll
      for (int e = 0; e < (NDIM <= 8 ? 1 : 2); ++e) {
        const int slot = 8 * j + COLUMN_SLOT(g);
        const int dim = NDIM <= 4 ? 2 * (t & 1) : 16 * kt + 8 * e + 2 * t;
        const float v0 = (slot < SUMK && dim < NDIM) ? -2.f * OPERAND_C(slot * NDIM + dim) : 0.f;
        const float v1 = (slot < SUMK && dim + 1 < NDIM) ? -2.f * OPERAND_C(slot * NDIM + dim + 1) : 0.f;
        split_half2(v0, v1, c_hi[j][kt][e], c_lo[j][kt][e]);
        if (NDIM > 4 && NDIM <= 8) {
          c_hi[j][kt][1] = PIN_IF_ROOM(c_lo[j][kt][0]);
          c_lo[j][kt][1] = PIN_IF_ROOM(c_hi[j][kt][0]);
        }
      }
  }
#else
  unsigned b_hi[NT][DK][2], b_lo[NT][DK][2];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
#pragma unroll
    for (int kk = 0; kk < DK; ++kk)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int slot = 8 * j + COLUMN_SLOT(g), dim = 8 * kk + 2 * t + e;
        const float v = (slot < SUMK && dim < NDIM) ? -2.f * s_c[slot * NDIM + dim] : 0.f;
        const unsigned hi = tf32_rna(v);
        b_hi[j][kk][e] = hi;
        b_lo[j][kk][e] = tf32_rna(v - __uint_as_float(hi));
      }
  }
#endif
#if INT_GROUP_MIN
  // The bias sits in every accumulator, so the products' alignment errors scale with it: the
  // window grows by TIE_SCALE·key_bias. Its floor keeps min + window above min for any key
  // (see INT_GROUP_MIN at the argmin).
  const float tie_base = fmaxf(fmaf(TIE_SCALE, fmaf(2.f, max_norm, key_bias), abs_centroids), 0x1p-100f);
#elif DIST_F16
  const float tie_base = fmaf(TIE_SCALE, 2.f * max_norm, abs_centroids);
#else
  const float tie_base = TIE_SCALE * 2.f * max_norm;
#endif
#if LEAN_STEP
  // The window's FP16 floor ABS_SCALE·‖x‖ without a square root a step: for any s > 0,
  // ‖x‖ ≤ (‖x‖²/s + s)/2, equal at ‖x‖ = s, so the window stays one FMA on ‖x‖². s is the
  // largest centroid norm (points' norms are of its order), floored at ABS_SCALE/TIE_SCALE:
  // below that the relative term TIE_SCALE·‖x‖² outweighs the floor anyway, and the floor caps
  // what the bound adds to ‖x‖²'s coefficient at TIE_SCALE/2. (1/s rounded up by 2^-20: the
  // bound then holds for every ‖x‖, whatever the division's and the square root's error.)
  const float norm_pivot = fmaxf(sqrtf(max_norm), ABS_SCALE / TIE_SCALE);
  const float tie_per_xx = fmaf(0.5f * ABS_SCALE, (1.f + 0x1p-20f) / norm_pivot, TIE_SCALE);
  const float tie_const = fmaf(0.5f * ABS_SCALE, norm_pivot, tie_base);
#endif
  // The distance tiles' initial accumulators: lane t of tile j starts rows g and g+8 at
  // (‖c‖² of slot 8j+t, of slot 8j+4+t), stored as the quad the MMA reads as its C operand.
  for (int j = threadIdx.x; j < NT * 4; j += BLOCK) {
    const int tile = j >> 2, lane_t = j & 3;
    const int s0 = 8 * tile + lane_t, s1 = s0 + 4;
#if INT_GROUP_MIN
    const float n0 = (s0 < SUMK ? s_norm[s0] : 0.f) + key_bias, n1 = (s1 < SUMK ? s_norm[s1] : 0.f) + key_bias;
#else
    const float n0 = s0 < SUMK ? s_norm[s0] : 0.f, n1 = s1 < SUMK ? s_norm[s1] : 0.f;
#endif
    s_norm_quads[j] = make_float4(n0, n1, n0, n1);
  }
#if CFRAG_SHARED && DIST_F16
  if (warp == 0) {
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int kt = 0; kt < KT; ++kt)
        s_bfrag[(j * KT + kt) * 32 + lane] = make_uint4(c_hi[j][kt][0], c_hi[j][kt][1], c_lo[j][kt][0], c_lo[j][kt][1]);
  }
#elif CFRAG_SHARED
  if (warp == 0) {
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int kk = 0; kk < DK; ++kk)
        s_bfrag[(j * DK + kk) * 32 + lane] = make_uint4(b_hi[j][kk][0], b_hi[j][kk][1], b_lo[j][kk][0], b_lo[j][kk][1]);
  }
#endif
  __syncthreads();

  // One tile's centroid operands: from the registers filled above, or (CFRAG_SHARED) one
  // conflict-free LDS.128 per tile and k-step, which frees 4·NT·DK registers for the whole
  // kernel at the price of that load every step.
  // Register mode names the arrays directly, as before the shared mode existed, so its kernels
  // stay byte-identical to session 7's under NVRTC.
#if CFRAG_SHARED
#define B_HI(bf, j, kk, e) ((e) ? bf.y : bf.x)
#define B_LO(bf, j, kk, e) ((e) ? bf.w : bf.z)
#elif DIST_F16
#define B_HI(bf, j, kk, e) c_hi[j][kk][e]
#define B_LO(bf, j, kk, e) c_lo[j][kk][e]
#else
#define B_HI(bf, j, kk, e) b_hi[j][kk][e]
#define B_LO(bf, j, kk, e) b_lo[j][kk][e]
#endif

  // Update accumulators: acc[q][s] = D[16 × 8] with rows 0-7 the hi and 8-15 the lo parts of
  // dims 8q..8q+7 and the columns of tile s (see flush_counts for which slots).
  float acc[UPDATE_TILES][NT][4];
  unsigned tile_counts[NT];
#pragma unroll
  for (int q = 0; q < UPDATE_TILES; ++q)
#pragma unroll
    for (int s = 0; s < NT; ++s) acc[q][s][0] = acc[q][s][1] = acc[q][s][2] = acc[q][s][3] = 0.f;
#pragma unroll
  for (int s = 0; s < NT; ++s) tile_counts[s] = 0u;
  // Inertia: FP32 partials per lane, every FOLD_STEPS steps summed over the warp and added to the
  // warp's FP64 total in shared memory (FP64 registers for every K would cost occupancy).
  float partial_inertia[KCOUNT];
#pragma unroll
  for (int k = 0; k < KCOUNT; ++k) partial_inertia[k] = 0.f;
  double* warp_inertia = s_inertia + warp * KCOUNT;
  if (lane < KCOUNT) warp_inertia[lane] = 0.0;
  __syncwarp();
  int steps_since_fold = 0;

#if !EARLY_FETCH && !FETCH_REGS
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) fetch_next();
#endif
  // The update's FP16 one-hot bit (bit g of each half) and the first lane of its point pairs.
  const unsigned half_bits = PIN_IF_ROOM(0x00010001u << g);
  const int pair_lane = (int)PIN_IF_ROOM(DIST_F16 ? 2 * t : t);
// (With 128 registers, and at N=4 with 80: at 80, N=8 K=1..4 spills with them.)
#define PIN_PAIR_SOURCES (PREPARED_OPERANDS && (BLOCK * MIN_BLOCKS <= 512 || NDIM == 4))
#if PIN_PAIR_SOURCES
  // The update's shuffle sources: ptxas otherwise adds 8, 16 and 24 to pair_lane every step.
  int pair_sources[2][2];
#pragma unroll
  for (int kg = 0; kg < 2; ++kg)
#pragma unroll
    for (int h = 0; h < 2; ++h) pair_sources[kg][h] = (int)PIN_IF_ROOM(16 * kg + 8 * h + pair_lane);
#endif
#define PINNED_RING (DIST_F16 && (NDIM == 4 || NDIM == 8) && !FETCH_REGS)
#if PREPARED_OPERANDS
  // This lane's fragment words and its point's ‖x‖², one step ahead. Word r of vector i is
  // af[i][0][r] (N=4: vector 0 holds af[0][0][0..1], then af[1][0][0..1]).
  const uint4* frag_src = reinterpret_cast<const uint4*>(pinned_pointer(reinterpret_cast<const float*>(frag_layout + lane)));
  const float* norm_src = pinned_pointer(point_norms + lane);
  uint4 frag_words[FRAG_VECS];
  float next_xx;
  const int last_step = BLOCK * MIN_BLOCKS <= 512 ? (int)PIN_IF_ROOM(steps - 1) : steps - 1;  // (pinned: else recomputed every step)
#if TWO_AHEAD
  uint4 words_ahead[FRAG_VECS];
  float xx_ahead;
#endif
  auto load_fragment_pairs = [&](int fetch_step) {
    const uint4* src = frag_src + (long long)fetch_step * (32 * FRAG_VECS);
#if TWO_AHEAD
#pragma unroll
    for (int r = 0; r < FRAG_VECS; ++r) frag_words[r] = words_ahead[r];
    next_xx = xx_ahead;
#pragma unroll
    for (int r = 0; r < FRAG_VECS; ++r) words_ahead[r] = __ldcg(src + 32 * r);
    xx_ahead = __ldcg(norm_src + 32LL * fetch_step);
#else
#pragma unroll
    for (int r = 0; r < FRAG_VECS; ++r) frag_words[r] = __ldcg(src + 32 * r);
    next_xx = __ldcg(norm_src + 32LL * fetch_step);
#endif
  };
#if PREPARED_RING
  // Each lane copies and later reads only its own words and ‖x‖², so its own cp.async.wait_group
  // orders them: no warp barrier. Slot bytes of the step in registers, and of the ring's others:
  const unsigned ring_words = PIN_IF_ROOM(ring_shared + 16 * lane);
  const unsigned ring_norm = PIN_IF_ROOM(ring_shared + 512 * FRAG_VECS + 4 * lane);
  unsigned ring_slot_bytes = 0u;
  // Steps past the end commit an empty group, so wait_group's count stays one group per step.
  auto copy_to_ring = [&](unsigned fetch_step, unsigned slot_bytes) {
    if (fetch_step < (unsigned)steps) {
      const uint4* src = frag_src + (long long)fetch_step * (32 * FRAG_VECS);
#pragma unroll
      for (int r = 0; r < FRAG_VECS; ++r)
        cp_async16(ring_words + slot_bytes + 512 * r, reinterpret_cast<const float*>(src + 32 * r));
      cp_async4(ring_norm + slot_bytes, norm_src + 32LL * fetch_step);
    }
    cp_async_commit();
  };
  auto read_ring = [&](unsigned slot_bytes) {
#pragma unroll
    for (int r = 0; r < FRAG_VECS; ++r) {
      const float4 w = lds128(ring_words + slot_bytes + 512 * r);
      frag_words[r] = make_uint4(__float_as_uint(w.x), __float_as_uint(w.y), __float_as_uint(w.z), __float_as_uint(w.w));
    }
    next_xx = lds32(ring_norm + slot_bytes);
  };
#pragma unroll
  for (int s = 0; s < STAGES; ++s)
    copy_to_ring((unsigned)warp_global + (unsigned)s * (unsigned)warps_total, s * (PREPARED_STEP_FLOATS * 4));
  cp_async_wait<STAGES - 1>();
  read_ring(0u);
#define FETCH_DEPTH STAGES
#elif TWO_AHEAD
#if EARLY_PREPARED
  static_assert(kEarlySteps == 2, "TWO_AHEAD is N=4's");
#pragma unroll
  for (int r = 0; r < FRAG_VECS; ++r) frag_words[r] = early_words[0][r], words_ahead[r] = early_words[1][r];
  next_xx = early_xx[0], xx_ahead = early_xx[1];
#else
  load_fragment_pairs(min(warp_global, steps - 1));
  load_fragment_pairs(min(warp_global + warps_total, steps - 1));
#endif
#define FETCH_DEPTH 2
#else
#if EARLY_PREPARED
  static_assert(kEarlySteps == 1, "one step ahead");
#pragma unroll
  for (int r = 0; r < FRAG_VECS; ++r) frag_words[r] = early_words[0][r];
  next_xx = early_xx[0];
#else
  load_fragment_pairs(min(warp_global, steps - 1));
#endif
#define FETCH_DEPTH 1
#endif
  // The loads above reach FETCH_DEPTH steps ahead; one (fetch=registers) covers a DRAM round
  // trip only partly: with the step shortened, N=4 stalled 2 cycles per instruction on them
  // (session 16 profile). The step PREFETCH_AHEAD beyond the furthest fetched is asked into L2
  // meanwhile, so those loads hit L2.
  auto prefetch_to_l2 = [&](int fetch_step) {
    const uint4* src = frag_src + (long long)fetch_step * (32 * FRAG_VECS);
#pragma unroll
    for (int r = 0; r < FRAG_VECS; ++r) asm volatile("prefetch.global.L2 [%0];" ::"l"(src + 32 * r));
    asm volatile("prefetch.global.L2 [%0];" ::"l"(norm_src + 32LL * fetch_step));
  };
#elif FETCH_REGS
  // Lane (g, t)'s fragment pairs of a step: rows g + 8r, dims 2t, 2t+1 (N=4: 2(t&1), +1, so lanes
  // t and t+2 read the same pair, their hi and lo features). The first step's go out now.
  const float* frag_src = pinned_pointer(points + g * NDIM + (NDIM <= 4 ? 2 * (t & 1) : 2 * t));
  float2 frag_pairs[4];
  auto load_fragment_pairs = [&](int fetch_step) {
    const float* src = frag_src + (long long)fetch_step * STEP_FLOATS;
#pragma unroll
    for (int r = 0; r < 4; ++r) frag_pairs[r] = __ldcg(reinterpret_cast<const float2*>(src + 8 * r * NDIM));
  };
  load_fragment_pairs(min(warp_global, steps - 1));
#endif
#if PINNED_RING
  // A lane's fragment pair and own point in ring slot 0; a step adds its slot's bytes.
  const unsigned frag_shared = PIN_IF_ROOM(ring_shared + 4 * offsets.frag[0]);
  // N=8: a quarter-warp's 8 own rows span 256 bytes, so reading chunk 0 of all of them and
  // then chunk 1 meets every bank twice (2 wavefronts per 8 lanes, ncu: 16 per step where 8
  // are ideal). Lanes 4-7 of each quarter read chunk 1 first: ‖x‖² does not care about order.
  const unsigned own_shared = PIN_IF_ROOM(ring_shared + 4 * offsets.own[0] + (NDIM == 8 ? 16 * ((lane >> 2) & 1) : 0));
#if NDIM == 8
  const unsigned own_shared_second = PIN_IF_ROOM(ring_shared + 4 * offsets.own[0] + 16 - 16 * ((lane >> 2) & 1));
#endif
#endif
  // fetch=registers at N=8 frees 10 of the 128 registers: the first two tiles' ‖c‖² quads stay
  // in registers for the whole kernel (8 of the 16 wavefronts a step spent reloading them; a
  // third tile spills 8 bytes). Prepared operands free more: every tile's quad (up to 4) stays.
  // Only where launch bounds leave 128 registers (at 80, 384 × 2, N=8 K=16 and K=1..4 spill).
  // N=4 with prepared operands needs 64 of its 80, so its (at most two) quads stay too: two
  // shared loads a step fewer on an L1 pipe that was 82 % busy (session 16).
#define NORM_REG_TILES                                                                                  \
  (FETCH_REGS && NDIM == 8 && BLOCK * MIN_BLOCKS <= 512 ? (PREPARED_OPERANDS ? (NT < 4 ? NT : 4) : 2) \
   : PREPARED_OPERANDS && NDIM == 4 && NT <= 2       ? NT                                             \
                                                      : 0)
  float4 norm_quads[NORM_REG_TILES > 0 ? NORM_REG_TILES : 1];
#pragma unroll
  for (int j = 0; j < NORM_REG_TILES; ++j) norm_quads[j] = lds128(norms_shared + 64 * j);
  // (The clamped index keeps the unrolled, never-taken register branch of later tiles in range.)
  auto tile_norms = [&](int j) {
    return j < NORM_REG_TILES ? norm_quads[j < NORM_REG_TILES ? j : 0] : lds128(norms_shared + 64 * j);
  };
  // One step's update from its one-hot word (and, EARLY_PARTNER, its partner's), its update
  // operands (operands=prepared), its distance A fragments (f16x2, per-step operands) or its
  // staged rows X (the others).
#if DIST_F16
  typedef unsigned AfArray[2][FT][4];
#else
  typedef unsigned AfArray[2][4];  // (no distance fragments to pass: update_a stands in)
#endif
  auto update_step = [&](hot_t hot, unsigned partner_word, const unsigned(&update_a)[2][4], const AfArray& af,
                         const float* X) {
    (void)partner_word, (void)update_a, (void)af, (void)X;
#if UPDATE_F16
    // Update: D[dims hi|lo × slots] += Xᵀ[16 × 16 points] · onehot[16 points × 8 slots] in
    // FP16 for each half-step kg of 16 points. The MMA's k index 2t, 2t+1, 2t+8, 2t+9 stands
    // for points t, t+4, t+8, t+12 of the half-step, so lane (g,t) reads dim 8q+g of those
    // four rows (bank-conflict free) and the one-hot bits of two point pairs (t, t+4) and
    // (t+8, t+12).
    // Pair words: lane p (p & 4 == 0) interleaves its one-hot bytes with those of point p+4,
    // so one shuffle brings a receiver both points' bytes and one AND (after a byte shift
    // for tiles 2 and 3 of a word) leaves bit g of each in its own half: an FP16 operand.
#if DIST_F16
    // The transposed point operands put points 2t, 2t+1 at k = 2t, 2t+1: pairs are adjacent lanes.
#define PARTNER_LANE 1
#else
#define PARTNER_LANE 4
#endif
#if PIN_PAIR_SOURCES
#define PAIR_SOURCE(kg, h) pair_sources[kg][h]
#else
#define PAIR_SOURCE(kg, h) (16 * (kg) + 8 * (h) + pair_lane)
#endif
    // Up to 2 tiles (ΣK ≤ 16) a point's one-hot bits fill 2 bytes, so one word carries both
    // tiles of the pair (own.b0, own.b1, partner.b0, partner.b1): half the broadcast shuffles.
    // N=4 K=3..5 spent 82 % of its L1 pipe's cycles (ncu, session 16), 9.4 shuffles a step of it.
#define ONE_PAIR_WORD (NT <= 2)
    unsigned pair_even[WORDS], pair_odd[WORDS];
#pragma unroll
    for (int w = 0; w < WORDS; ++w) {
      const unsigned own = (unsigned)(hot >> (32 * w));
#if EARLY_PARTNER
      const unsigned partner = partner_word;
#else
      const unsigned partner = __shfl_xor_sync(FULL_MASK, own, PARTNER_LANE);
#endif
      // Selector nibble n (from the low end) names result byte n; bytes 0-3 are own, 4-7 partner.
      if (ONE_PAIR_WORD) {
        pair_even[w] = __byte_perm(own, partner, 0x5410);  // own.b0, own.b1, partner.b0, partner.b1
        pair_odd[w] = 0u;
      } else {
        pair_even[w] = __byte_perm(own, partner, 0x6420);  // own.b0, own.b2, partner.b0, partner.b2
        pair_odd[w] = __byte_perm(own, partner, 0x7531);   // own.b1, own.b3, partner.b1, partner.b3
      }
    }
    // (half_bits and pair_lane are pinned before the loop.)
#pragma unroll
    for (int kg = 0; kg < 2; ++kg) {
      unsigned b[NT][2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int src = PAIR_SOURCE(kg, h);
#pragma unroll
        for (int w = 0; w < WORDS; ++w) {
          const unsigned even = __shfl_sync(FULL_MASK, pair_even[w], src);
          const unsigned odd = !ONE_PAIR_WORD && 4 * w + 1 < NT ? __shfl_sync(FULL_MASK, pair_odd[w], src) : 0u;
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int s = 4 * w + i;
            if (s < NT) {
              // Tile i's byte: i & 1 picks the word, i & 2 its upper byte (one word: tile 1 is there).
              const unsigned word = ONE_PAIR_WORD || !(i & 1) ? even : odd;
              b[s][h] = ((ONE_PAIR_WORD ? i : i & 2) ? word >> 8 : word) & half_bits;
            }
          }
        }
      }
#pragma unroll
      for (int s = 0; s < NT; ++s) tile_counts[s] += b[s][0] + b[s][1];
#if DIST_F16
      // Features × points of this half-step: the distance fragments of m-tile kg, transposed.
#if UPDATE_T
      // N ≤ 4 has 8 features: slots × features instead (one-hot as A, tiles 2p and 2p+1 as its
      // rows; the transposed points as B), one MMA per tile pair and no zero rows.
      {
#if PREPARED_OPERANDS
        const unsigned b0 = update_a[kg][0], b1 = update_a[kg][2];
#else
        const unsigned b0 = transpose8x8(af[kg][0][0]), b1 = transpose8x8(af[kg][0][1]);  // points 0-7, 8-15
#endif
#pragma unroll
        for (int p = 0; p < PAIRS; ++p) {
          const unsigned a[4] = {b[2 * p][0], 2 * p + 1 < NT ? b[2 * p + 1][0] : 0u, b[2 * p][1],
                                 2 * p + 1 < NT ? b[2 * p + 1][1] : 0u};
          mma_f16(acc[0][p], a, b0, b1);
        }
      }
#elif PREPARED_OPERANDS
#pragma unroll
      for (int s = 0; s < NT; ++s) mma_f16(acc[0][s], update_a[kg], b[s][0], b[s][1]);
#else
#pragma unroll
      for (int ft = 0; ft < FT; ++ft) {
        unsigned a[4];
        a[0] = transpose8x8(af[kg][ft][0]);  // features 0-7 (of the tile), points 0-7
        a[2] = transpose8x8(af[kg][ft][1]);  // features 0-7, points 8-15
        if (NDIM <= 4) {
          a[1] = a[3] = 0u;  // features 8-15 repeat 0-7
        } else {
          a[1] = transpose8x8(af[kg][ft][2]);  // features 8-15, points 0-7
          a[3] = transpose8x8(af[kg][ft][3]);
        }
#pragma unroll
        for (int s = 0; s < NT; ++s) mma_f16(acc[ft][s], a, b[s][0], b[s][1]);
      }
#endif
#else
#pragma unroll
      for (int q = 0; q < DK; ++q) {
        const int dim = 8 * q + g;
        float v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          v[u] = (NDIM % 8 == 0 || dim < NDIM) ? UPDATE_VALUE(q, u, 16 * kg * NDIM) : 0.f;
#if SCALE_X
          v[u] *= x_scale;
#endif
        }
        unsigned a[4];
        split_half2(v[0], v[1], a[0], a[1]);
        split_half2(v[2], v[3], a[2], a[3]);
#pragma unroll
        for (int s = 0; s < NT; ++s) mma_f16(acc[q][s], a, b[s][0], b[s][1]);
      }
#endif
    }
#else
    // Update: D[dims hi|lo × slots] += Xᵀ[16 × 8 points] · onehot[8 points × 8 slots] for
    // each group of 8 points; lane (g,t) feeds points t and t+4 of the group, dim 8q+g, and
    // WORD_TILES(w) adjacent bits of each one-hot word w.
#pragma unroll
    for (int group = 0; group < 4; ++group) {
      const int src0 = 8 * group + t, src1 = src0 + 4;
      unsigned nib0[WORDS], nib1[WORDS];
      {
        const hot_t h0 = __shfl_sync(FULL_MASK, hot, src0), h1 = __shfl_sync(FULL_MASK, hot, src1);
#pragma unroll
        for (int w = 0; w < WORDS; ++w) {
          nib0[w] = (unsigned)(h0 >> (32 * w)) >> (WORD_TILES(w) * g);
          nib1[w] = (unsigned)(h1 >> (32 * w)) >> (WORD_TILES(w) * g);
        }
      }
      unsigned b0[NT], b1[NT];
#pragma unroll
      for (int s = 0; s < NT; ++s) {
        // 1.0f = 0x3f8 << 20 is divisible by 2^0..2^3.
        const unsigned bit = 1u << TILE_SUB(s);
        const unsigned m0 = nib0[TILE_WORD(s)] & bit, m1 = nib1[TILE_WORD(s)] & bit;
        tile_counts[s] += m0 + m1;
        b0[s] = m0 * (0x3f800000u >> TILE_SUB(s));
        b1[s] = m1 * (0x3f800000u >> TILE_SUB(s));
      }
#pragma unroll
      for (int q = 0; q < DK; ++q) {
        const int dim = 8 * q + g;
        const float v0 = (NDIM % 8 == 0 || dim < NDIM) ? UPDATE_VALUE(q, 0, 8 * group * NDIM) : 0.f;
        const float v1 = (NDIM % 8 == 0 || dim < NDIM) ? UPDATE_VALUE(q, 1, 8 * group * NDIM) : 0.f;
        unsigned a[4];
        split_truncate(v0, a[0], a[1]);
        split_truncate(v1, a[2], a[3]);
#pragma unroll
        for (int s = 0; s < NT; ++s) mma_tf32(acc[q][s], a, b0[s], b1[s]);
      }
    }
#endif
  };
#if DEFERRED
  hot_t pending_hot = 0;  // all zero: the first step's call adds nothing
  unsigned pending_partner = 0u, pending_a[2][4];
  const AfArray no_af = {};  // (the prepared update reads no distance fragments)
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int r = 0; r < 4; ++r) pending_a[i][r] = 0u;
#endif
  int ring_slot = 0;
#if DYNAMIC
  static_assert((TAIL_CHUNK & (TAIL_CHUNK - 1)) == 0 && TAIL_CHUNK >= 2, "TAIL_CHUNK: a power of two, 2 or more");
  // Every warp has `strided` grid-strided steps below tail_start; the counter hands out the
  // rest. Too few steps for a tail: all grid-strided.
  // (Only fast_end lives through the first loop: at N=8's 128 registers, tail_start beside it spilled.)
  const int strided = (steps - (steps >> TAIL_SHIFT)) / warps_total;
  const int fast_end = strided >= TAIL_STRIDED ? (strided - TAIL_STRIDED) * warps_total : steps;
#endif
  // One step of the warp: `step` is computed; operands=prepared loads `load_step`'s words (the
  // step FETCH_DEPTH ahead in this warp's order) and, with `prefetch`, asks a later one into L2.
  // `defer` (DEFERRED only): this step's update waits for the next step's first block.
  auto step_body = [&](const int step, const int load_step, const bool prefetch, const bool defer) {
#if !FETCH_REGS
    fetch_next();  // into the slot the previous step consumed (its readers passed the last __syncwarp)
    cp_async_wait<STAGES - 1>();
    __syncwarp();
    const float* X = ring + ring_slot * STEP_FLOATS;
#endif
#if LEAN_STEP
    const bool valid = step < lane_steps;
#else
    const bool valid = step < steps - 1 || lane < last_step_points;
#endif

    // This lane's point: ‖x‖² and the error scale of its expansion (fetch=registers: after the
    // transpose, from the partial sums the fragments' lanes left in the row).
    float xx = 0.f;
#if !FETCH_REGS
    {
      float x_own[NDIM];
#if PINNED_RING
      const unsigned slot_bytes = ring_slot * (STEP_FLOATS * 4);
#pragma unroll
      for (int c = 0; c < NDIM / 4; ++c) {
#if NDIM == 8
        const float4 v = lds128((c ? own_shared_second : own_shared) + slot_bytes);
#else
        const float4 v = lds128(own_shared + slot_bytes + 16 * c);
#endif
        x_own[4 * c] = v.x, x_own[4 * c + 1] = v.y, x_own[4 * c + 2] = v.z, x_own[4 * c + 3] = v.w;
      }
#else
      load_own_point(X, offsets.own, x_own);
#endif
#pragma unroll
      for (int d = 0; d < NDIM; ++d) {
#if DSCALE
        x_own[d] *= x_scale;
#endif
        xx = fmaf(x_own[d], x_own[d], xx);
      }
    }
#elif PREPARED_OPERANDS
    xx = next_xx;
#endif
#if INT_GROUP_MIN
    const float xx_less_bias = xx - key_bias;  // a key plus this is the point's distance
#endif
    // The window TIE_SCALE·(‖x‖² + 2·max‖c‖²) (+ FP16's absolute floor), as FMAs on xx from the
    // kernel's constant part; the guard is GUARD_OVER_TIE windows.
    float tie_bound;
#if !ARGMIN_MASK || !LEAN_STEP
    float guard_bound;
#endif
    auto set_bounds = [&]() {
#if LEAN_STEP
      tie_bound = fmaf(tie_per_xx, xx, tie_const);  // FP16's subnormal floor included (tie_per_xx)
#elif DIST_F16
      // FP16's subnormal floor adds an absolute error, ABS_SCALE·(‖x‖ + 2·max‖c‖) of the window.
      float x_norm;
      asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(x_norm) : "f"(xx));
      tie_bound = fmaf(ABS_SCALE, x_norm, fmaf(TIE_SCALE, xx, tie_base));
#else
      tie_bound = fmaf(TIE_SCALE, xx, tie_base);
#endif
#if !ARGMIN_MASK || !LEAN_STEP
      guard_bound = GUARD_OVER_TIE * tie_bound;
#endif
    };
#if !XX_IN_TILE
    set_bounds();
#endif

#if DIST_F16
    // A fragments of the distance product (rows = points 16i+g and 16i+g+8, k = features), kept
    // for the update, which reads them transposed.
    unsigned af[2][FT][4];
#if XX_IN_TILE
    float xx_partials[2][2];  // rows 16i+g, 16i+g+8: this lane's two dims of ‖x‖²
#elif PREPARED_OPERANDS
    unsigned update_a[2][4];  // the update's A operands (features × points) of each half-step
#endif
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#if PREPARED_OPERANDS
#if NDIM == 8
      af[i][0][0] = frag_words[i].x, af[i][0][1] = frag_words[i].y, af[i][0][2] = frag_words[i].z,
      af[i][0][3] = frag_words[i].w;
#else
      af[i][0][0] = af[i][0][2] = i ? frag_words[0].z : frag_words[0].x;
      af[i][0][1] = af[i][0][3] = i ? frag_words[0].w : frag_words[0].y;
#endif
#elif NDIM <= 8
#if FETCH_REGS
      float2 r0 = frag_pairs[2 * i], r1 = frag_pairs[2 * i + 1];
#elif PINNED_RING
      const unsigned frag_step = frag_shared + ring_slot * (STEP_FLOATS * 4);
      float2 r0 = lds64(frag_step + 4 * (16 * i) * NDIM), r1 = lds64(frag_step + 4 * (16 * i + 8) * NDIM);
#else
      const int dim = NDIM <= 4 ? 2 * (t & 1) : 2 * t;
      float2 r0 = load_pair(X + offsets.frag[0], 16 * i, dim), r1 = load_pair(X + offsets.frag[0], 16 * i + 8, dim);
#endif
#if DSCALE
      r0.x *= x_scale, r0.y *= x_scale, r1.x *= x_scale, r1.y *= x_scale;
#endif
      unsigned hi0, lo0, hi1, lo1;
      split_half2(r0.x, r0.y, hi0, lo0);
      split_half2(r1.x, r1.y, hi1, lo1);
#if XX_IN_TILE
      xx_partials[i][0] = fmaf(r0.x, r0.x, r0.y * r0.y);
      xx_partials[i][1] = fmaf(r1.x, r1.x, r1.y * r1.y);
#endif
#if NDIM <= 4
      // (Features 8-15 as [lo | hi] instead, so that no register appears twice in the operand, with
      // the update then counting every part twice: 8 fewer moves a step, and 0.8 % slower at N=4,
      // session 11 call 9.)
      const bool lo_lane = t >= 2;  // features 2t, 2t+1 are lo parts for t = 2, 3
      af[i][0][0] = af[i][0][2] = lo_lane ? lo0 : hi0;
      af[i][0][1] = af[i][0][3] = lo_lane ? lo1 : hi1;
#else
      af[i][0][0] = hi0, af[i][0][1] = hi1, af[i][0][2] = lo0, af[i][0][3] = lo1;
#endif
#else
#pragma unroll
      for (int kt = 0; kt < KT; ++kt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int h = 2 * kt + e;  // 8-dim block: dims 8h + 2t, +1
          unsigned hi0 = 0u, lo0 = 0u, hi1 = 0u, lo1 = 0u;
          if (h < DK) {
            float2 r0 = load_pair(X + offsets.frag[h], 16 * i, 8 * h + 2 * t);
            float2 r1 = load_pair(X + offsets.frag[h], 16 * i + 8, 8 * h + 2 * t);
#if DSCALE
            r0.x *= x_scale, r0.y *= x_scale, r1.x *= x_scale, r1.y *= x_scale;
#endif
            split_half2(r0.x, r0.y, hi0, lo0);
            split_half2(r1.x, r1.y, hi1, lo1);
          }
          af[i][kt][2 * e] = hi0, af[i][kt][2 * e + 1] = hi1;
          af[i][KT + kt][2 * e] = lo0, af[i][KT + kt][2 * e + 1] = lo1;
        }
#endif
    }
#if XX_IN_TILE
    // The pairs are split: their registers take the next step's, a whole step ahead of use.
    load_fragment_pairs(min(step + warps_total, steps - 1));
#endif
#else
    // A fragments of the distance product: rows = points 16i+g and 16i+g+8.
    unsigned a_hi[2][DK][4], a_lo[2][DK][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int kk = 0; kk < DK; ++kk) {
        const float* frag = X + offsets.frag[kk];
        const float2 r0 = load_pair(frag, 16 * i, 8 * kk + 2 * t);
        const float2 r1 = load_pair(frag, 16 * i + 8, 8 * kk + 2 * t);
        split_nearest(r0.x, a_hi[i][kk][0], a_lo[i][kk][0]);
        split_nearest(r1.x, a_hi[i][kk][1], a_lo[i][kk][1]);
        split_nearest(r0.y, a_hi[i][kk][2], a_lo[i][kk][2]);
        split_nearest(r1.y, a_hi[i][kk][3], a_lo[i][kk][3]);
      }
#endif

#if !(DIST_F16 && PREPARED_OPERANDS && !XX_IN_TILE)
    const unsigned update_a[2][4] = {};  // (only operands=prepared has update operands of its own)
#endif
#if DIST_F16
#define AF_ARG af
#else
#define AF_ARG update_a
#endif
#if FETCH_REGS
#define X_ARG nullptr
#else
#define X_ARG X
#endif
#if EARLY_PARTNER
#define PARTNER_ARG partner_word
#else
#define PARTNER_ARG 0u
#endif

    // Per K group: the winner goes straight into the one-hot word and the inertia term; groups
    // that need exact FP32 (a near tie, or a point so near its centroid that the expansion's
    // absolute error would show in the inertia) are flagged and fixed up after the scan, in
    // one warp-uniform branch that spread data rarely takes.
    hot_t hot = 0;
#if ARGMIN_MASK
#if NCB != 1
#error "argmin=mask needs every K group in one 32-slot column block (ΣK <= 32)"
#endif
    float nearest = 0.f;  // the smallest distance key of any group, for the near-point guard
#else
    // Flag bit k-KMIN set (as a float, so the FMA pipe builds it) when group k needs the exact
    // fix-up. The argmin's FMNMX runs on the half-rate ALU pipe, so the near-tie test counts
    // the centroids inside the window with saturating FFMAs instead of tracking a runner-up:
    // sat((best + window − key)·F) is 1 for a key inside, 0 outside, F = 2^20/window.
    float flags_f = 0.f;
    float window_scale;  // 2^20 / window; an approximate reciprocal is plenty for a scale
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(window_scale) : "f"(tie_bound * 0x1p-20f));
    const float near_scaled = (guard_bound - xx) * window_scale;
#endif
    float terms[KCOUNT];
    float best = 0.f, second = 0.f;  // running argmin of a K group split across column blocks
#pragma unroll
    for (int cb = 0; cb < NCB; ++cb) {
      // N ≤ 8: all of the block's products first, then the stores, so 8 independent MMA chains
      // keep the tensor pipe busy where one chain at a time would wait on each result. Wider
      // points go tile by tile (two chains), which keeps 32 fewer registers live.
      const int tiles = (NT - 4 * cb) < 4 ? (NT - 4 * cb) : 4;  // a constant once unrolled
#if DIST_F16
      // The small products first (x·c_lo), then x_hi·c_hi, as the TF32 path orders them.
      if (NDIM <= 8) {
        float d[2][4][4];
#if CFRAG_SHARED
        uint4 bf[4];
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj) bf[jj] = s_bfrag[(4 * cb + jj) * 32 + lane];
#endif
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj) {
          const int j = 4 * cb + jj;
          const float4 norms = tile_norms(j);
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            // N ≤ 4: [x_hi | x_lo] fills k = 0..7, so two k = 8 MMAs (c_lo, then c_hi) take the
            // lane's two words as they are. One m16n8k16 needed each word twice in an aligned
            // quad, and ptxas built a fresh quad for every MMA: 16 moves a step (session 16).
            if (NDIM <= 4)
              mma_f16_k8_from(d[i][jj], af[i][0][0], af[i][0][1], B_LO(bf[jj], j, 0, 0), norms);
            else
              mma_f16_from(d[i][jj], af[i][0], B_LO(bf[jj], j, 0, 0), B_LO(bf[jj], j, 0, 1), norms);
          }
        }
        if (NDIM > 4) {
#pragma unroll
          for (int jj = 0; jj < tiles; ++jj)
#pragma unroll
            for (int i = 0; i < 2; ++i)
              mma_f16(d[i][jj], af[i][0], B_HI(bf[jj], 4 * cb + jj, 0, 0), B_HI(bf[jj], 4 * cb + jj, 0, 1));
        } else {
#pragma unroll
          for (int jj = 0; jj < tiles; ++jj)
#pragma unroll
            for (int i = 0; i < 2; ++i) mma_f16_k8(d[i][jj], af[i][0][0], af[i][0][1], B_HI(bf[jj], 4 * cb + jj, 0, 0));
        }
#if XX_IN_TILE
        // Words D[.][2t+1] of the last tile are slots 8(NT-1)+4+t, free: they take this lane's
        // ‖x‖² partials of rows g and g+8.
#pragma unroll
        for (int i = 0; i < 2; ++i) d[i][NT - 1][1] = xx_partials[i][0], d[i][NT - 1][3] = xx_partials[i][1];
#elif PREPARED_OPERANDS
        // The update's operands are transposed now, so the loaded words are dead and their
        // registers take the next step's straight away: transposed at the update instead, the
        // loop would have to copy every word into the register the next load overwrites.
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          update_a[i][0] = transpose8x8(af[i][0][0]);  // features 0-7, points 0-7
          update_a[i][2] = transpose8x8(af[i][0][1]);  // features 0-7, points 8-15
          update_a[i][1] = NDIM <= 4 ? 0u : transpose8x8(af[i][0][2]);  // features 8-15 (N=4: repeats, zero)
          update_a[i][3] = NDIM <= 4 ? 0u : transpose8x8(af[i][0][3]);
        }
#if PREPARED_RING
        // This step's slot was read into the registers the MMAs above consumed: it takes the step
        // STAGES ahead, and the next step's words come out of the following slot.
        copy_to_ring((unsigned)step + STAGES * (unsigned)warps_total, ring_slot_bytes);
        ring_slot_bytes = ring_slot_bytes == (STAGES - 1) * (PREPARED_STEP_FLOATS * 4) ? 0u
                                                                                       : ring_slot_bytes + PREPARED_STEP_FLOATS * 4;
        cp_async_wait<STAGES - 1>();
        read_ring(ring_slot_bytes);
#else
#if TWO_AHEAD
        load_fragment_pairs((int)min((unsigned)load_step, (unsigned)last_step));
#else
        // (The signed form: the unsigned one above measured 0.5 % slower at N=8, session 17 call 3.)
        load_fragment_pairs(min(load_step, last_step));
#endif
#endif
#if PREFETCH_AHEAD
        // (Unsigned: no overflow near 2^31 steps.)
        if (prefetch)
          prefetch_to_l2((int)min((unsigned)step + (FETCH_DEPTH + PREFETCH_AHEAD) * (unsigned)warps_total, (unsigned)last_step));
#endif
#endif
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj)
#pragma unroll
          for (int i = 0; i < 2; ++i)
            store_fragment(tbuf, stsm_base, stsm_half_base, i, jj, HALF_TILE(4 * cb + jj), d[i][jj], lane);
      } else {
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj) {
          const int j = 4 * cb + jj;
          const float4 norms = lds128(norms_shared + 64 * j);
          float d[2][4];
#if CFRAG_SHARED
          uint4 bf[KT];
#pragma unroll
          for (int kt = 0; kt < KT; ++kt) bf[kt] = s_bfrag[(j * KT + kt) * 32 + lane];
#endif
#pragma unroll
          for (int i = 0; i < 2; ++i) mma_f16_from(d[i], af[i][0], B_LO(bf[0], j, 0, 0), B_LO(bf[0], j, 0, 1), norms);
#pragma unroll
          for (int kt = 0; kt < KT; ++kt)
#pragma unroll
            for (int i = 0; i < 2; ++i) {
              if (kt > 0) mma_f16(d[i], af[i][kt], B_LO(bf[kt], j, kt, 0), B_LO(bf[kt], j, kt, 1));
              mma_f16(d[i], af[i][KT + kt], B_HI(bf[kt], j, kt, 0), B_HI(bf[kt], j, kt, 1));
              mma_f16(d[i], af[i][kt], B_HI(bf[kt], j, kt, 0), B_HI(bf[kt], j, kt, 1));
            }
#pragma unroll
          for (int i = 0; i < 2; ++i) store_fragment(tbuf, stsm_base, stsm_half_base, i, jj, HALF_TILE(j), d[i], lane);
        }
      }
#else
      if (DK == 1) {
        float d[2][4][4];
#if CFRAG_SHARED
        uint4 bf[4];
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj) bf[jj] = s_bfrag[(4 * cb + jj) * DK * 32 + lane];
#endif
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj) {
          const float4 norms = lds128(norms_shared + 64 * (4 * cb + jj));
#pragma unroll
          for (int i = 0; i < 2; ++i)
            mma_tf32_from(d[i][jj], a_hi[i][0], B_LO(bf[jj], 4 * cb + jj, 0, 0), B_LO(bf[jj], 4 * cb + jj, 0, 1), norms);
        }
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj)
#pragma unroll
          for (int i = 0; i < 2; ++i)
            mma_tf32(d[i][jj], a_lo[i][0], B_HI(bf[jj], 4 * cb + jj, 0, 0), B_HI(bf[jj], 4 * cb + jj, 0, 1));
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj)
#pragma unroll
          for (int i = 0; i < 2; ++i)
            mma_tf32(d[i][jj], a_hi[i][0], B_HI(bf[jj], 4 * cb + jj, 0, 0), B_HI(bf[jj], 4 * cb + jj, 0, 1));
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj)
#pragma unroll
          for (int i = 0; i < 2; ++i)
            store_fragment(tbuf, stsm_base, stsm_half_base, i, jj, HALF_TILE(4 * cb + jj), d[i][jj], lane);
      } else {
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj) {
          const int j = 4 * cb + jj;
          const float4 norms = lds128(norms_shared + 64 * j);
          float d[2][4];
#if CFRAG_SHARED
          uint4 bf[DK];
#pragma unroll
          for (int kk = 0; kk < DK; ++kk) bf[kk] = s_bfrag[(j * DK + kk) * 32 + lane];
#endif
#pragma unroll
          for (int i = 0; i < 2; ++i) mma_tf32_from(d[i], a_hi[i][0], B_LO(bf[0], j, 0, 0), B_LO(bf[0], j, 0, 1), norms);
#pragma unroll
          for (int kk = 0; kk < DK; ++kk)
#pragma unroll
            for (int i = 0; i < 2; ++i) {
              if (kk > 0) mma_tf32(d[i], a_hi[i][kk], B_LO(bf[kk], j, kk, 0), B_LO(bf[kk], j, kk, 1));
              mma_tf32(d[i], a_lo[i][kk], B_HI(bf[kk], j, kk, 0), B_HI(bf[kk], j, kk, 1));
              mma_tf32(d[i], a_hi[i][kk], B_HI(bf[kk], j, kk, 0), B_HI(bf[kk], j, kk, 1));
            }
#pragma unroll
          for (int i = 0; i < 2; ++i) store_fragment(tbuf, stsm_base, stsm_half_base, i, jj, HALF_TILE(j), d[i], lane);
        }
      }
#endif
      __syncwarp();
      // This lane's point: slots 32cb + 4h + u sit in chunk h, word u.
      float v[8][4];
#pragma unroll
      for (int h = 0; h < 8; ++h)
        if (32 * cb + 4 * h < SUMK) {
          const float4 chunk = lds128(row_shared + 16 * h);
          v[h][0] = chunk.x, v[h][1] = chunk.y, v[h][2] = chunk.z, v[h][3] = chunk.w;
        }
#if XX_IN_TILE
      {
        // ‖x‖² from the partials of the lanes t = 0..3 (N=4: t = 0, 1; lanes 2, 3 repeat their dims).
        const float4 partials = lds128(row_shared + 16 * (2 * NT - 1));
        xx = NDIM <= 4 ? partials.x + partials.y : (partials.x + partials.y) + (partials.z + partials.w);
        set_bounds();
      }
#endif
#if DEFERRED
      if (defer && cb == 0) update_step(pending_hot, pending_partner, pending_a, no_af, nullptr);
#endif
      __syncwarp();  // tbuf is rewritten by the next block or step

#if ARGMIN_MASK
      // argmin=mask (ΣK ≤ 32, one column block): per group the plain minimum, then one bit per
      // slot for "inside the window of its group's minimum", taken from the sign of
      // key − (min + window) by a funnel shift. The bits are the point's one-hot word whenever
      // every group holds exactly one, which a popcount checks for all groups at once; so a
      // key costs an FMNMX, an FADD and an SHF, with no index packed into it and no per-group
      // flag arithmetic (argmin=packed: LOP3, FMNMX, FFMA.SAT, FADD per key).
      float edges[KCOUNT];
#pragma unroll
      for (int k = KMIN; k <= KMAX; ++k) {
        float scratch[KMAX];
#pragma unroll
        for (int c = 0; c < k; ++c) {
          const int col = OFFSET(k) + c;
          scratch[c] = v[col >> 2][col & 3];
        }
#if INT_GROUP_MIN
        // group_min=int: keys carry +key_bias from their accumulators, so the keys of most points
        // are positive and their bits order as integers; sm_90 ptxas fuses integer mins into a
        // three-input min (up to two keys an instruction where FMNMX takes one). Where two or
        // more keys of a group are negative the integer min returns the negative key nearest
        // zero, above the true minimum; every negative key then lies below min + window (the
        // window > 0 and wider than an ulp of the key) and gets its bit, so the group has at
        // least two bits and goes to the exact fix-up like a near tie. The min is exact otherwise.
        // (A pairwise tree: chains through __vimin3_s32 fuse more but spilled 4-16 bytes at N=8
        // under the 128-register cap, NVRTC.)
        int key_bits[KMAX];
#pragma unroll
        for (int c = 0; c < k; ++c) key_bits[c] = __float_as_int(scratch[c]);
#pragma unroll
        for (int stride = 1; stride < KMAX; stride *= 2)
#pragma unroll
          for (int i = 0; i + stride < KMAX; i += 2 * stride)
            if (i + stride < k) key_bits[i] = min(key_bits[i], key_bits[i + stride]);
        const float group_best = __int_as_float(key_bits[0]);
        terms[k - KMIN] = xx_less_bias + group_best;
#else
        const float group_best = tree_reduce(scratch, k, [](float a, float b) { return fminf(a, b); });
        terms[k - KMIN] = xx + group_best;
#endif
        edges[k - KMIN] = group_best + tie_bound;
        nearest = k == KMIN ? group_best : fminf(nearest, group_best);
      }
      // Slots from the highest down, each appending its bit below the ones before; eight slots
      // per chain, so NT independent chains instead of one dependent SHF per slot.
      unsigned chains[NT];
#pragma unroll
      for (int j = 0; j < NT; ++j) chains[j] = 0u;
#pragma unroll
      for (int k = KMAX; k >= KMIN; --k)
#pragma unroll
        for (int c = k - 1; c >= 0; --c) {
          const int s = OFFSET(k) + c;
          const float below = v[s >> 2][s & 3] - edges[k - KMIN];
          chains[s >> 3] = __funnelshift_l(__float_as_uint(below), chains[s >> 3], 1);  // (chain << 1) | sign
        }
      // Each chain holds at most 8 bits, so the adds never carry: one IMAD or LEA per chain where
      // shift-and-or took two.
      hot = chains[0];
#pragma unroll
      for (int j = 1; j < NT; ++j) hot += chains[j] << (8 * j);
#else
#pragma unroll
      for (int k = KMIN; k <= KMAX; ++k) {
        const bool inside = OFFSET(k) >= 32 * cb && OFFSET(k) + k <= 32 * cb + 32;
        if (inside) {
          // The group lies in this block: min, then the window count.
          float keys[KMAX];
#pragma unroll
          for (int c = 0; c < k; ++c) {
            const int col = OFFSET(k) + c - 32 * cb;
            keys[c] = __int_as_float((__float_as_int(v[col >> 2][col & 3]) & keep_mask) | c);
          }
          float scratch[KMAX];
#pragma unroll
          for (int c = 0; c < k; ++c) scratch[c] = keys[c];
          const float group_best = tree_reduce(scratch, k, [](float a, float b) { return fminf(a, b); });
          // A near point counts as one more key inside the window: the group is flagged when
          // the count reaches 2 (the winner itself is always inside).
          float within = __saturatef(fmaf(group_best, -window_scale, near_scaled));
          if (k > 1) {
            const float edge = fmaf(group_best, window_scale, 1048576.f);  // (best + window)·scale
#pragma unroll
            for (int c = 0; c < k; ++c) scratch[c] = __saturatef(fmaf(keys[c], -window_scale, edge));
            within += tree_reduce(scratch, k, [](float a, float b) { return a + b; });
          } else {
            within += 1.f;
          }
          flags_f = fmaf(__saturatef(fmaf(within, 4.f, -6.f)), (float)(1u << (k - KMIN)), flags_f);
          terms[k - KMIN] = xx + group_best;
          hot |= ((hot_t)1 << OFFSET(k)) << (__float_as_int(group_best) & IDX_MASK);
        } else {
          // Split across blocks (ΣK > 32): a running best and runner-up carry over.
#pragma unroll
          for (int c = 0; c < k; ++c) {
            const int s = OFFSET(k) + c;
            if (s >= 32 * cb && s < 32 * cb + 32) {
              const int col = s - 32 * cb;
              const float key = __int_as_float((__float_as_int(v[col >> 2][col & 3]) & keep_mask) | c);
              if (c == 0) {
                best = key;
                second = __int_as_float(0x7f7fffff);
              } else {
                second = fminf(second, fmaxf(best, key));
                best = fminf(best, key);
              }
              if (c == k - 1) {
                const float term = xx + best;
                terms[k - KMIN] = term;
                if ((k > 1 && second - best <= tie_bound) || term < guard_bound)
                  flags_f += (float)(1u << (k - KMIN));
                hot |= ((hot_t)1 << OFFSET(k)) << (__float_as_int(best) & IDX_MASK);
              }
            }
          }
        }
      }
#endif
    }
#if ARGMIN_MASK
    // A group with no bit (a zero window: all-zero data) or with several needs the fix-up, as
    // does a point nearer to any centroid than the guard.
#if INT_GROUP_MIN
#define GUARD_KEY fmaf(GUARD_OVER_TIE, tie_bound, -xx_less_bias)
#else
#define GUARD_KEY fmaf(GUARD_OVER_TIE, tie_bound, -xx)
#endif
    // (LEAN_STEP: without short-circuits, no branch and reconvergence a step: N=4 1 %, N=8 K=16
    // 1 % faster, H200, session 19 call 2.)
#if LEAN_STEP
    const bool needs_exact = valid & ((__popc((unsigned)hot) != KCOUNT) | (nearest < GUARD_KEY));
#else
    const bool needs_exact = valid && (__popc((unsigned)hot) != KCOUNT || nearest < GUARD_KEY);
#endif
#undef GUARD_KEY
    if (!valid) hot = 0;
    // The update's partner word is shuffled before the fix-up branch (and again inside it, where
    // the word may change): after it, its PRMT was the step's largest single stall, 3 % of the
    // samples at N=8 (session 14), waiting on this shuffle.
#if EARLY_PARTNER
    unsigned partner_word = __shfl_xor_sync(FULL_MASK, (unsigned)hot, DIST_F16 ? 1 : 4);
#endif
    if (__any_sync(FULL_MASK, EXACT_INERTIA || needs_exact)) {
      // (Deriving the flags under `if (needs_exact)` instead saves N=16 a 4-byte spill and N=8
      // 14 registers, but measured 6 % slower at N=8 and 1.5 % at N=16: session 10, call 5.)
      unsigned flags = 0u;
#if LEAN_STEP
      const float guard_bound = GUARD_OVER_TIE * tie_bound;
#endif
#pragma unroll
      for (int k = KMIN; k <= KMAX; ++k) {
        const unsigned field = (unsigned)(hot >> OFFSET(k)) & (k >= 32 ? ~0u : (1u << k) - 1u);
        if (valid && (field == 0u || (field & (field - 1u)) != 0u || terms[k - KMIN] < guard_bound))
          flags |= 1u << (k - KMIN);
      }
#else
    if (!valid) hot = 0, flags_f = 0.f;
    if (__any_sync(FULL_MASK, EXACT_INERTIA || flags_f != 0.f)) {
      // flags: groups needing a full exact argmin (near tie or near point). EXACT_INERTIA
      // also takes every other group's term as the exact distance to its winner.
      const unsigned flags = valid ? (unsigned)flags_f : 0u;
#endif
      float x_exact[NDIM];
#if FETCH_REGS
      {
        const float4* own_row = reinterpret_cast<const float4*>(points + (32LL * step + lane) * NDIM);
#pragma unroll
        for (int c = 0; c < NDIM / 4; ++c) {
          const float4 q = __ldcg(own_row + c);
          x_exact[4 * c] = q.x, x_exact[4 * c + 1] = q.y, x_exact[4 * c + 2] = q.z, x_exact[4 * c + 3] = q.w;
        }
      }
#else
      load_own_point(X, offsets.own, x_exact);
#endif
#if DSCALE
#pragma unroll
      for (int d = 0; d < NDIM; ++d) x_exact[d] *= x_scale;
#endif
#pragma unroll
      for (int k = KMIN; k <= KMAX; ++k) {
        const unsigned bit = 1u << (k - KMIN);
        const float* group = s_c + OFFSET(k) * NDIM;
        const int approx = group_label(hot, k);
        if (flags & bit) {
          int label = approx < 0 ? 0 : approx;  // argmin=mask: an empty field has no approximate winner
          float exact_best = __int_as_float(0x7f7fffff);
#if NCB == 1
          // The step's transposed row is still in tbuf (one column block: nothing rewrote it),
          // so only the centroids whose expanded distance lies within two windows of the
          // group's best get an exact distance — usually two — not all k. The true winner is
          // among them: its expanded distance is within one window of the best. Ascending
          // order keeps the lowest index on an exact tie, as the full scan did.
          const float* row = tbuf + lane * TROW + OFFSET(k);
          float expanded[KMAX];
          float group_min = __int_as_float(0x7f7fffff);
#pragma unroll
          for (int c = 0; c < k; ++c) expanded[c] = row[c], group_min = fminf(group_min, expanded[c]);
          const float reach = group_min + 2.f * tie_bound;
          unsigned candidates = 0u;
#pragma unroll
          for (int c = 0; c < k; ++c) candidates |= (expanded[c] <= reach ? 1u : 0u) << c;
#pragma unroll 1
          while (candidates) {
            const int cc = __ffs(candidates) - 1;
            candidates &= candidates - 1u;
            const float e = exact_distance(x_exact, group + cc * NDIM);
            if (e < exact_best) exact_best = e, label = cc;
          }
#else
#pragma unroll 1
          for (int cc = 0; cc < k; ++cc) {
            const float e = exact_distance(x_exact, group + cc * NDIM);
            if (e < exact_best) exact_best = e, label = cc;
          }
#endif
          terms[k - KMIN] = exact_best;
#if ARGMIN_MASK
          // The field may hold several bits (or none): it becomes exactly the exact winner's.
          hot = (hot & ~((k >= 32 ? ~0u : (1u << k) - 1u) << OFFSET(k))) | (1u << (OFFSET(k) + label));
#else
          hot ^= (((hot_t)1 << approx) ^ ((hot_t)1 << label)) << OFFSET(k);
#endif
        } else if (EXACT_INERTIA && valid) {
          terms[k - KMIN] = exact_distance(x_exact, group + approx * NDIM);
        }
      }
#if EARLY_PARTNER
      partner_word = __shfl_xor_sync(FULL_MASK, (unsigned)hot, DIST_F16 ? 1 : 4);
#endif
    }
    if (valid) {
#pragma unroll
      for (int k = 0; k < KCOUNT; ++k) partial_inertia[k] += terms[k];
#if STORE_LABELS
      if (labels) {
#pragma unroll
        for (int k = KMIN; k <= KMAX; ++k)
          labels[(long long)(k - KMIN) * m + 32LL * step + lane] = group_label(hot, k);
      }
#endif
    }

    // Every FOLD_STEPS steps: inertia partials to the warp's FP64 total (FP32 partials stay
    // short sums) and one-hot counts to the block's counters. 64 rather than 32 halves the fold's
    // share (6 % of the stall samples at N=8, session 15).
#if LEAN_STEP
    // As a vote, ptxas knows the branch is uniform: no reconvergence barrier around the fold and
    // no divergence check before the update's shuffles (N=4 1.3 % faster, session 19 call 5; at
    // N=8 K=3..7 it spilled 4 bytes for 0.2 %). (The steps in chunks of FOLD_STEPS with the fold
    // after each, no per-step test at all: N=4 0.5 % faster, N=8 K=16 3 % slower, call 9.)
    if (__all_sync(FULL_MASK, ++steps_since_fold == FOLD_STEPS)) {
#else
    if (++steps_since_fold == FOLD_STEPS) {
#endif
      steps_since_fold = 0;
      flush_counts(tile_counts, block_counts, g, t);
#pragma unroll
      for (int k = 0; k < KCOUNT; ++k) {
        float value = partial_inertia[k];
        partial_inertia[k] = 0.f;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) value += __shfl_xor_sync(FULL_MASK, value, off);
        if (lane == 0) warp_inertia[k] += (double)value;
      }
    }

#if DEFERRED
    if (defer) {
      // This step's update runs in the next step's first block (or after the loop).
      pending_hot = hot;
#if EARLY_PARTNER
      pending_partner = partner_word;
#endif
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int r = 0; r < 4; ++r) pending_a[i][r] = update_a[i][r];
    } else {
      update_step(hot, PARTNER_ARG, update_a, AF_ARG, X_ARG);
    }
#else
    update_step(hot, PARTNER_ARG, update_a, AF_ARG, X_ARG);
#endif
    // Every lane is done with this stage (and, fetch=registers, with its transposed row, which the
    // fix-up reads after the argmin) before the next step refills it.
    __syncwarp();
    ring_slot = ring_slot == STAGES - 1 ? 0 : ring_slot + 1;
  };

#if DYNAMIC
  // Grid-strided up to fast_end, as without the tail; then this warp's last TAIL_STRIDED
  // grid-strided steps (their loads already out), then chunks of the tail in claim order.
  int step = warp_global;
#if TWO_AHEAD
#pragma unroll 2
#endif
  for (; step < fast_end; step += warps_total)
    step_body(step, TWO_AHEAD ? (int)((unsigned)step + 2u * (unsigned)warps_total) : step + warps_total, true, true);
#if DEFERRED && !TAIL_DEFERRED
  // The tail's steps update in place: the loop-1 step still pending goes now.
  update_step(pending_hot, pending_partner, pending_a, no_af, nullptr);
#endif
  const int tail_start = fast_end < steps ? fast_end + TAIL_STRIDED * warps_total : steps;
  // Lane 0's claim on the tail: asked now, read TAIL_STRIDED - FETCH_DEPTH steps later. It holds
  // the counter's raw answer: an instruction reading it would wait there for the atomic.
  unsigned claimed = 0u;
  if (lane == 0 && step < steps) claimed = atomicAdd(blocks_done + 1, 1u);
  // The step after x in this warp's order (x itself past the end: the loop is over).
  // (The claim's branch as a vote: ptxas then knows it is uniform.)
  auto successor = [&](const int x) {
    const bool strided_next = x + warps_total < tail_start;
    const bool in_chunk = x >= tail_start && ((x + 1 - tail_start) & (TAIL_CHUNK - 1)) != 0;
    int next = x >= steps ? x : strided_next ? x + warps_total : x + 1;
    if (__any_sync(FULL_MASK, x < steps && !strided_next && !in_chunk)) {
      next = tail_start + TAIL_CHUNK * (int)__shfl_sync(FULL_MASK, claimed, 0);
      if (lane == 0) claimed = atomicAdd(blocks_done + 1, 1u);
    }
    return next;
  };
#if TWO_AHEAD
  // `step`'s words are in frag_words, `ahead`'s on their way.
  int ahead = step + warps_total;
#pragma unroll 2
  while (step < steps) {
    const int next = successor(ahead);
    step_body(step, next, false, TAIL_DEFERRED);
    step = ahead;
    ahead = next;
  }
#else
  while (step < steps) {
    const int next = successor(step);
    step_body(step, next, false, TAIL_DEFERRED);
    step = next;
  }
#endif
#else
#if TWO_AHEAD
#pragma unroll 2
#endif
  for (int step = warp_global; step < steps; step += warps_total)
    step_body(step, TWO_AHEAD ? (int)((unsigned)step + 2u * (unsigned)warps_total) : step + warps_total, true, true);
#endif
#if DEFERRED && (!DYNAMIC || TAIL_DEFERRED)
  update_step(pending_hot, pending_partner, pending_a, no_af, nullptr);
#endif
  cp_async_wait<0>();
  if (lane == 0) STAMP(TIMELINE_FIELDS + warp);

  // Inertia: warp totals meet in shared memory and each block adds one FP64 atomic per K.
  // (An atomic per warp put every warp of the grid on the same KCOUNT addresses at the end of
  // the kernel, where they serialise.)
#pragma unroll
  for (int k = 0; k < KCOUNT; ++k) {
    double value = (double)partial_inertia[k];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) value += __shfl_xor_sync(FULL_MASK, value, off);
    if (lane == 0) warp_inertia[k] += value;
  }
  __syncthreads();  // every warp is done with its ring: the area holds the block's sums now
  if (threadIdx.x == 0) STAMP(3);
  for (int k = threadIdx.x; k < KCOUNT; k += BLOCK) {
    double value = 0.0;
    for (int w = 0; w < WARPS; ++w) value += s_inertia[w * KCOUNT + k];
#if DSCALE
    value *= 1.0 / ((double)x_scale * (double)x_scale);  // distances were ×x_scale² (a power of two)
#endif
    if (value != 0.0) atomicAdd(inertia_scratch + k, value);
  }
  // Each warp's sums go to its own (now idle) ring as plain stores: every (slot, dim) is one
  // lane's, so no shared atomics (float ones are CAS loops, contended by every warp of the
  // block). The ring holds ≥ 64·NDIM floats ≥ SUMK·NDIM.
  flush_counts(tile_counts, block_counts, g, t);
#if UPDATE_F16
  // Column c's one-hot value was 2^(c-24) and the points were scaled by x_scale (a power of
  // two): both come off exactly here.
  const float unscale0 = __int_as_float((127 + 24 - 2 * t) << 23) / x_scale, unscale1 = 0.5f * unscale0;
#else
  const float unscale0 = 1.f, unscale1 = 1.f;
#endif
#if DIST_F16
  static_assert(SUMK * FEATS <= WARP_FLOATS, "a warp's ring holds its slots × features");
#endif
#if UPDATE_T
  // Rows are slots (16p + g and 16p + 8 + g, one-hot value 2^(g-24) for both), columns the
  // features 2t, 2t+1.
  {
    const float unscale_row = __int_as_float((127 + 24 - g) << 23) / x_scale;
#pragma unroll
    for (int p = 0; p < PAIRS; ++p) {
      const int slot0 = 16 * p + g, slot1 = slot0 + 8;
      if (slot0 < SUMK) {
        ring[slot0 * FEATS + 2 * t] = acc[0][p][0] * unscale_row;
        ring[slot0 * FEATS + 2 * t + 1] = acc[0][p][1] * unscale_row;
      }
      if (slot1 < SUMK) {
        ring[slot1 * FEATS + 2 * t] = acc[0][p][2] * unscale_row;
        ring[slot1 * FEATS + 2 * t + 1] = acc[0][p][3] * unscale_row;
      }
    }
  }
#elif DIST_F16
  // Rows are features: each (slot, feature) to the ring.
#pragma unroll
  for (int ft = 0; ft < FT; ++ft)
#pragma unroll
    for (int s = 0; s < NT; ++s) {
      const int slot0 = TILE_SLOT(s, 2 * t), slot1 = TILE_SLOT(s, 2 * t + 1), feature = 16 * ft + g;
      if (slot0 < SUMK) {
        ring[slot0 * FEATS + feature] = acc[ft][s][0] * unscale0;
        ring[slot0 * FEATS + feature + 8] = acc[ft][s][2] * unscale0;
      }
      if (slot1 < SUMK) {
        ring[slot1 * FEATS + feature] = acc[ft][s][1] * unscale1;
        ring[slot1 * FEATS + feature + 8] = acc[ft][s][3] * unscale1;
      }
    }
#endif
#if DIST_F16
  // A dimension sums its hi and lo features over the block's warps.
  __syncthreads();
  for (int j = threadIdx.x; j < SUMK * NDIM; j += BLOCK) {
    const int slot = j / NDIM, dim = j - slot * NDIM;
    const int hi = slot * FEATS + dim, lo = slot * FEATS + LO_FEATURE(dim);
    float value = 0.f;
#pragma unroll 4
    for (int w = 0; w < WARPS; ++w) value += warp_areas[w * WARP_FLOATS + hi] + warp_areas[w * WARP_FLOATS + lo];
    if (value != 0.f) atomicAdd(sums + j, (double)value);
  }
#else
#pragma unroll
  for (int q = 0; q < DK; ++q) {
    const int dim = 8 * q + g;
#pragma unroll
    for (int s = 0; s < NT; ++s) {
      const int slot0 = TILE_SLOT(s, 2 * t), slot1 = TILE_SLOT(s, 2 * t + 1);
      if (dim < NDIM) {
        if (slot0 < SUMK) ring[slot0 * NDIM + dim] = (acc[q][s][0] + acc[q][s][2]) * unscale0;
        if (slot1 < SUMK) ring[slot1 * NDIM + dim] = (acc[q][s][1] + acc[q][s][3]) * unscale1;
      }
    }
  }
  __syncthreads();
  for (int j = threadIdx.x; j < SUMK * NDIM; j += BLOCK) {
    float value = 0.f;
#pragma unroll 4
    for (int w = 0; w < WARPS; ++w) value += warp_areas[w * WARP_FLOATS + j];
    if (value != 0.f) atomicAdd(sums + j, (double)value);
  }
#endif
  for (int s = threadIdx.x; s < SUMK; s += BLOCK)
    if (block_counts[s]) atomicAdd(counts_scratch + s, (u64)block_counts[s]);

  // The last block to arrive turns the sums into centroids. Every other block has read the
  // old centroids (at its start) before it arrived, so they can be overwritten in place.
  // Ticket: thread 0 releases the block's atomics (ordered before it by the barrier) and, in
  // the last block, acquires everyone's. Only one thread pays the fence, and acq_rel is
  // lighter than the sequentially consistent __threadfence.
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned ticket;
    asm volatile("fence.acq_rel.gpu;\n atom.relaxed.gpu.global.add.u32 %0, [%1], 1;" : "=r"(ticket) : "l"(blocks_done)
                 : "memory");
    if (ticket == gridDim.x - 1) asm volatile("fence.acq_rel.gpu;" ::: "memory");
    s_ticket = ticket;
    STAMP(4);
  }
  __syncthreads();
  if (s_ticket != gridDim.x - 1) return;
  // One L2 round trip for the whole division: each thread loads its (slot, dim) sum and the
  // slot's count together (a loop over dims per slot made NDIM+1 dependent round trips, at
  // the end of the kernel's critical path).
  for (int j = threadIdx.x; j < SUMK * NDIM; j += BLOCK) {
    const int s = j / NDIM;
    const u64 count = (u64)__ldcg((const long long*)(counts_scratch + s));
    const double sum = __ldcg(sums + j);
    // An empty cluster keeps its previous centroid (the documented policy).
#if PREPARED_OPERANDS
    // The sums are of the centred points.
    if (count) centroids[j] = (float)((double)point_shift[j - s * NDIM] + sum * (1.0 / (double)count));
#else
    if (count) centroids[j] = (float)(sum * (1.0 / (double)count));
#endif
    sums[j] = 0.0;
    if (j - s * NDIM == 0) counts_out[s] = count;
  }
  for (int k = threadIdx.x; k < KCOUNT; k += BLOCK) {
    inertia_out[k] = __ldcg(inertia_scratch + k);
    inertia_scratch[k] = 0.0;
  }
  __syncthreads();  // every count is read before it is cleared
  for (int s = threadIdx.x; s < SUMK; s += BLOCK) counts_scratch[s] = 0ull;
  if (threadIdx.x == 0) *blocks_done = 0u;
#if DYNAMIC
  if (threadIdx.x == 0) blocks_done[1] = 0u;  // every claim was made before its block's ticket
#endif
#if TIMELINE
  if (threadIdx.x == 0 && timeline) {
    unsigned long long now_ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now_ns)::"memory");
    timeline[gridDim.x * (TIMELINE_FIELDS + WARPS)] = now_ns;
  }
#endif
}
)MKSRC";

// Register budget: centroid fragments (4 per n-tile and k-step) and update accumulators (4
// per n-tile and row tile) stay resident for the whole kernel.
constexpr int kMaxSlots = 64;
constexpr int kMaxTilesTimesSteps = 8;
// A point's inertia term is taken exactly when the expansion's error bound (TIE_SCALE/2 of the
// scale) could exceed 1/128 of its distance: data whose points sit close to their centroids
// (tight blobs) then gets exact terms, while on uniform data 0.001–0.09 % of points per K
// group pay (N=16 down to N=4, first-K initial centroids). A fixed 2 % of the scale,
// registers-multik's rule, flags 0.2–0.9 % per K group at N=8, and every flagged point costs
// its warp a pass through the fix-up.
constexpr double kGuardOverTieScale = 64.0;
// operands=prepared: the step this many steps beyond the next one is asked into L2.
constexpr int kDefaultPrefetchAhead = 0;

int n_tiles(int sum_k) { return (sum_k + 7) / 8; }
int k_steps(int n) { return (n + 7) / 8; }

// Forward-error window (relative to ‖x‖² + 2·max‖c‖²) inside which two expanded distances
// may be mis-ordered. Per centroid, with Σ|x_d c_d| ≤ (‖x‖² + max‖c‖²)/2 ≤ scale/2:
//   3xTF32 products, x split to nearest and c via cvt.rna: ≤ 4·2^-22 of 2Σ|x_d c_d|;
//   each of the 3·DK MMAs sums 8 products and its accumulator with alignment truncation:
//     ≤ 10·2^-23 of the scale each, 15·DK·2^-22 in all (16·DK below);
//   ‖c‖² as an FP32 FMA chain: N·2^-24 relative;
//   argmin=packed only: the packed index in the mantissa, 2^(bits-23) of |d'| ≤ scale.
// Twice that bounds the mis-ordering of two centroids; 1.25 covers second-order terms.
// distance=f16x2 (FP16 hi + lo of x and of −2c, both to nearest): each value keeps 2^-22 of
// itself, so the products err by ≤ 3·2^-22 of 2Σ|x_d c_d| (the dropped lo·lo included); each
// m16n8k16 sums 16 products and its accumulator, ≤ 18·2^-23 of the scale (an m16n8k8, 10·2^-23):
// two m16n8k8 per tile for N ≤ 4, two m16n8k16 for N ≤ 8, 3·ceil(N/16) wider. FP16's subnormal
// floor (2^-25 per value) is an absolute error instead, which abs_window_scale bounds.
// operands=prepared centres points and centroids on μ, each coordinate rounded once
// (fl(x − μ) = (x − μ)(1 + ε), |ε| ≤ 2^-24): with a = x − μ, b = c − μ, the squared distance moves
// by ≤ 2‖a − b‖·2^-24(‖a‖ + ‖b‖) ≤ 2^-22(‖a‖² + ‖b‖²) ≤ 2^-22 of the (centred) scale, one more
// unit per centroid.
// Accumulation error of the f16x2 distance product per centroid, in units of 2^-22 of the scale:
// an MMA summing k products and its accumulator errs by ≤ (k + 2)·2^-23. N ≤ 4: two m16n8k8
// (5 each); N ≤ 8: two m16n8k16 (9 each); wider: 3·ceil(N/16) m16n8k16.
double f16_distance_accumulation(int n) { return n <= 4 ? 2 * 5.0 : n <= 8 ? 2 * 9.0 : 3 * ((n + 15) / 16) * 9.0; }

double tie_scale(int n, int kmax, bool packed_keys, bool f16_distance, bool centred) {
  const double u22 = std::ldexp(1.0, -22);
  const double products = (f16_distance ? 3.0 + f16_distance_accumulation(n) : 4.0 + 16.0 * k_steps(n)) + (centred ? 1.0 : 0.0);
  const double per_centroid = (products + n / 4.0) * u22 +
                              (packed_keys ? std::ldexp(1.0, packed_index_bits(kmax) - 23) : 0.0);
  return 2.0 * per_centroid * 1.25;
}

// The subnormal floor: Σ_d (|x_d|·2^-25 + |2c_d|·2^-25) ≤ 2^-25·√N·(‖x‖ + 2‖c‖) per centroid;
// twice that (two centroids), 1.25 as above and 1 % for the kernel's approximate square roots.
double abs_window_scale(int n) { return 2.0 * 1.25 * 1.01 * std::ldexp(1.0, -25) * std::sqrt(double(n)); }

// Dynamic shared memory of one block, in bytes: exact centroids, norms, and per warp a ring
// of `stages` 32-point steps plus the 32-row transpose buffer. The ring holds FP32 rows
// (32·N floats a step), prepared words (N/4 16-byte words and ‖x‖² per lane: 32·(N+1)), or
// nothing (fetch=registers).
enum class Ring { rows, prepared, none };
int64_t dynamic_smem_bytes(int n, int sum_k, int block, int stages, Ring ring_kind = Ring::rows) {
  const int transpose_row = std::min(32, 8 * n_tiles(sum_k)) + 4;  // TROW in the kernel
  const int64_t ring = ring_kind == Ring::none ? 0 : int64_t(stages) * 32 * (ring_kind == Ring::prepared ? n + 1 : n);
  const int64_t floats = ((int64_t(sum_k) * n + 3) & ~int64_t(3)) + ((sum_k + 3) & ~3) +
                         int64_t(block / 32) * (ring + 32 * transpose_row);
  return floats * 4;
}

int64_t smem_limit(const DeviceInfo& device) {
  return device.smem_per_block_optin > 0 ? device.smem_per_block_optin : 48 * 1024;
}

struct KernelConfig {
  int n, kmin, kmax, block, min_blocks, stages;
  bool stmatrix;
  bool update_f16;
  bool scale_points;  // the FP16 update multiplies points by a power of two first
  bool shared_fragments;  // centroid operands re-read from shared memory every step
  bool argmin_mask;       // in-window bit masks instead of index-packed keys
  bool f16_distance;      // distance product in FP16 hi + lo (m16n8k16), operands shared with the update
  bool fetch_registers;   // points straight from global memory into fragment registers, no stage ring
  bool prepared_operands;   // operands=prepared: FP16 fragment words and ‖x‖² prepared once
  bool prepared_ring;       // operands=prepared with fetch=ring: those words through a cp.async ring
  int cc_major, cc_minor;
  // operands=prepared compiles the labels store in or out (its pointer test cost ~5
  // instructions a step): iterations that keep labels get their own kernel, built on first use.
  // Per-step kernels keep the test (compiled out, N=16 and N=5 spilled 4 bytes more).
  bool store_labels = false;
  int prefetch_ahead = 0;  // operands=prepared: steps beyond the next one asked into L2 (0: none)
  bool int_group_min = false;  // group_min=int: keys biased non-negative, minimised as integers
  bool timeline = false;       // MKBENCH_TIMELINE: the kernel stamps where each block's time goes
  bool operator<(const KernelConfig& o) const {
    return std::tie(n, kmin, kmax, block, min_blocks, stages, stmatrix, update_f16, scale_points, shared_fragments,
                    argmin_mask, f16_distance, fetch_registers, prepared_operands, prepared_ring, cc_major, cc_minor,
                    store_labels, prefetch_ahead, int_group_min, timeline) <
           std::tie(o.n, o.kmin, o.kmax, o.block, o.min_blocks, o.stages, o.stmatrix, o.update_f16, o.scale_points,
                    o.shared_fragments, o.argmin_mask, o.f16_distance, o.fetch_registers, o.prepared_operands,
                    o.prepared_ring, o.cc_major, o.cc_minor, o.store_labels, o.prefetch_ahead, o.int_group_min, o.timeline);
  }
};

gpu::RuntimeCompileRequest compile_request(const KernelConfig& config) {
  const int sum_k = (config.kmin + config.kmax) * (config.kmax - config.kmin + 1) / 2;
  const int bits = packed_index_bits(config.kmax);
  const double window = tie_scale(config.n, config.kmax, !config.argmin_mask, config.f16_distance, config.prepared_operands);
  std::ostringstream defines;
  defines << "#define NDIM " << config.n << "\n#define KMIN " << config.kmin << "\n#define KMAX " << config.kmax
          << "\n#define SUMK " << sum_k << "\n#define BLOCK " << config.block << "\n#define STAGES " << config.stages
          << "\n#define MIN_BLOCKS " << config.min_blocks << "\n#define USE_STMATRIX " << (config.stmatrix ? 1 : 0)
          << "\n#define UPDATE_F16 " << (config.update_f16 ? 1 : 0) << "\n#define SCALE_X " << (config.scale_points ? 1 : 0)
          << "\n#define CFRAG_SHARED " << (config.shared_fragments ? 1 : 0)
          << "\n#define ARGMIN_MASK " << (config.argmin_mask ? 1 : 0) << "\n#define IDX_BITS " << bits
          << "\n#define DIST_F16 " << (config.f16_distance ? 1 : 0)
          << "\n#define FETCH_REGS " << (config.fetch_registers ? 1 : 0)
          << "\n#define PREPARED_OPERANDS " << (config.prepared_operands ? 1 : 0)
          << "\n#define PREPARED_RING " << (config.prepared_ring ? 1 : 0)
          << "\n#define STORE_LABELS " << (config.store_labels || !config.prepared_operands ? 1 : 0)
          << "\n#define PREFETCH_AHEAD " << (config.prepared_operands ? config.prefetch_ahead : 0)
          << "\n#define INT_GROUP_MIN " << (config.int_group_min ? 1 : 0)
          // More than 4 packed index bits: their mantissa error would show in the inertia, so
          // every winner's term is an exact distance. Mask keys carry no index.
          << "\n#define EXACT_INERTIA " << (bits > 4 && !config.argmin_mask ? 1 : 0) << std::scientific
          << "\n#define TIE_SCALE " << window << "f\n#define GUARD_OVER_TIE " << kGuardOverTieScale << "f\n#define ABS_SCALE "
          << abs_window_scale(config.n) << "f\n" << (config.timeline ? "#define TIMELINE 1\n" : "");
  gpu::RuntimeCompileRequest request{defines.str() + kTensorMultiKSource, "tensor_multik.cu", config.cc_major, config.cc_minor};
  request.description = "N=" + std::to_string(config.n) + " K=" + std::to_string(config.kmin) + ".." +
                        std::to_string(config.kmax) + " block=" + std::to_string(config.block) + " min_blocks=" +
                        std::to_string(config.min_blocks) + " stages=" + std::to_string(config.stages) +
                        (config.stmatrix ? " stmatrix" : "") + (config.update_f16 ? " update=f16" : " update=tf32") +
                        (config.scale_points ? " scaled" : "") + (config.shared_fragments ? " fragments=shared" : "") +
                        (config.argmin_mask ? " argmin=mask" : "") + (config.f16_distance ? " distance=f16x2" : "") +
                        (config.prepared_ring ? " fetch=ring" : config.fetch_registers ? " fetch=registers" : "") +
                        (config.prepared_operands ? " operands=prepared prefetch=" + std::to_string(config.prefetch_ahead) : "") +
                        (config.int_group_min ? " group_min=int" : "") + (config.store_labels ? " labels" : "") +
                        (config.timeline ? " timeline" : "");
  request.dump_tag = "tensor-n" + std::to_string(config.n) + "-k" + std::to_string(config.kmin) + "-" +
                     std::to_string(config.kmax) + "-b" + std::to_string(config.block) + "x" +
                     std::to_string(config.min_blocks) + "-s" +
                     std::to_string(config.stages) + (config.stmatrix ? "-stmatrix" : "-sts") +
                     (config.update_f16 ? "-f16" : "-tf32") + (config.scale_points ? "-scaled" : "") +
                     (config.shared_fragments ? "-sfrag" : "") + (config.argmin_mask ? "-mask" : "") +
                     (config.f16_distance ? "-d16" : "") + (config.prepared_ring ? "-ringfetch" : config.fetch_registers ? "-regfetch" : "") +
                     (config.prepared_operands ? "-prepared-p" + std::to_string(config.prefetch_ahead) : "") +
                     (config.int_group_min ? "-imin" : "") + (config.store_labels ? "-labels" : "");
  return request;
}

cudaKernel_t compiled_kernel(const KernelConfig& config) {
  static std::mutex mutex;
  static std::map<KernelConfig, cudaKernel_t> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache.find(config);
  if (found != cache.end()) return found->second;
  cudaLibrary_t library = gpu::compile_and_load(compile_request(config));
  cudaKernel_t kernel = nullptr;
  gpu::check(cudaLibraryGetKernel(&kernel, library, "tensor_multik_iteration"), "tensor_multik_iteration");
  return cache.emplace(config, kernel).first->second;
}

// The FP16 update's operands must stay inside FP16's range with its ~22-bit hi+lo split intact:
// points are multiplied by a power of two that brings the largest |x| to [2^13, 2^14), unless
// it already lies in [2^-6, 2^14), where the split's absolute floor (2^-25) is below 2^-19 of
// it and no multiply is needed.
float point_scale_for_update(const Dataset& data) {
  float largest = 0.f;
  const float* values = data.values.data();
  const int64_t count = int64_t(data.values.size());
#pragma omp parallel for reduction(max : largest) schedule(static)
  for (int64_t i = 0; i < count; ++i) largest = std::max(largest, std::fabs(values[i]));
  if (largest == 0.f || (largest >= 0x1p-6f && largest < 0x1p14f)) return 1.f;
  // Capped at 2^126, the largest power of two a float holds: data below 2^-114 (subnormal
  // floats) then land under 2^12 instead of overflowing the scale to infinity.
  return std::ldexp(1.f, std::min(126, 13 - std::ilogb(largest)));
}

// distance=f16x2 is the default wherever it applies: N ≤ 16 with the FP16 update.
bool f16_distance_applies(int n, const Params& params) {
  return n <= 16 && params.value("update", std::string("f16")) == "f16";
}

bool prepared_operands_requested(const Params& params) {
  return params.value("operands", std::string("per-step")) == "prepared";
}

// fetch=registers: the kernel's #error names the same conditions. From FP32 rows, ‖x‖² travels
// in the free half of the last distance tile, so ΣK must leave 4 to 7 slots of it empty;
// operands=prepared brings ‖x‖² prepared and needs no free slots.
// `form` names what is refused: the prepared words have the same layout (any fetch form).
std::optional<std::string> fetch_registers_refusal(int n, int sum_k, const Params& params,
                                                   const std::string& form = "fetch=registers") {
  if (n != 4 && n != 8) return form + " needs N of 4 or 8 (one float2 per fragment row and lane)";
  if (params.value("distance", std::string(f16_distance_applies(n, params) ? "f16x2" : "tf32x3")) != "f16x2")
    return form + " needs distance=f16x2";
  if (params.value("argmin", std::string(sum_k <= 32 ? "mask" : "packed")) != "mask")
    return form + " needs argmin=mask";
  if (!prepared_operands_requested(params) && sum_k - 8 * (n_tiles(sum_k) - 1) > 4)
    return "fetch=registers from operands=per-step needs ΣK mod 8 in 1..4 (the last tile's free slots carry ‖x‖²), ΣK=" + std::to_string(sum_k);
  return std::nullopt;
}

// operands=prepared has words for N of 4 and 8 only, in the layout of fetch=registers' fragment
// registers, which both fetch forms fill (fetch=ring through its cp.async ring).
std::optional<std::string> prepared_operands_refusal(int n, int sum_k, const Params& params) {
  if (!prepared_operands_requested(params)) return std::nullopt;
  return fetch_registers_refusal(n, sum_k, params, "operands=prepared");
}

bool prepared_ring_requested(const Params& params) {
  return prepared_operands_requested(params) && params.value("fetch", std::string("ring")) == "ring";
}

bool int_group_min_requested(const Params& params) { return params.value("group_min", std::string("float")) == "int"; }

// group_min=int biases every key by the data's mean ‖x'‖², a constant the prepared run computes.
std::optional<std::string> int_group_min_refusal(const Params& params) {
  if (int_group_min_requested(params) && !prepared_operands_requested(params))
    return std::string("group_min=int needs operands=prepared (whose run computes the key bias)");
  return std::nullopt;
}

Ring ring_kind(const Params& params) {
  if (prepared_ring_requested(params)) return Ring::prepared;
  return params.value("fetch", std::string("ring")) == "registers" ? Ring::none : Ring::rows;
}

KernelConfig config_for(const Problem& problem, const Params& params, int cc_major, int cc_minor,
                        float point_scale = 1.f) {
  return {problem.n,
          problem.k.kmin,
          problem.k.kmax,
          params.at("block").get<int>(),
          params.at("min_blocks").get<int>(),
          params.at("stages").get<int>(),
          params.at("transpose").get<std::string>() == "stmatrix",
          params.at("update").get<std::string>() == "f16",
          point_scale != 1.f,
          params.value("fragments", std::string("registers")) == "shared",
          params.value("argmin", std::string(problem.k.sum() <= 32 ? "mask" : "packed")) == "mask",
          params.value("distance", std::string(f16_distance_applies(problem.n, params) ? "f16x2" : "tf32x3")) == "f16x2",
          // The prepared kernel has no row ring: both of its fetch forms fill fetch=registers' registers.
          params.value("fetch", std::string("ring")) == "registers" || prepared_operands_requested(params),
          prepared_operands_requested(params),
          prepared_ring_requested(params),
          cc_major,
          cc_minor,
          false,
          params.value("prefetch", kDefaultPrefetchAhead),
          int_group_min_requested(params)};
}

// The centre of operands=prepared: each column's mean, summed in FP64 over fixed blocks of rows
// and then the blocks in order, so the same data gives the same μ whatever the thread count.
std::vector<float> column_means(const Dataset& data) {
  const int n = data.n;
  const int64_t m = data.m, rows_per_block = 1 << 16, blocks = (m + rows_per_block - 1) / rows_per_block;
  std::vector<double> partial(size_t(blocks) * n, 0.0);
  const float* values = data.values.data();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t end = std::min(m, (b + 1) * rows_per_block);
    for (int64_t row = b * rows_per_block; row < end; ++row)
      for (int d = 0; d < n; ++d) partial[size_t(b) * n + d] += values[row * n + d];
  }
  std::vector<float> mean(size_t(n), 0.f);
  for (int d = 0; d < n; ++d) {
    double sum = 0.0;
    for (int64_t b = 0; b < blocks; ++b) sum += partial[size_t(b) * n + d];
    mean[d] = m > 0 ? float(sum / double(m)) : 0.f;
  }
  return mean;
}

// group_min=int's key bias: the mean of ‖x − μ‖² over the rows, in FP64 over fixed blocks of
// rows like column_means. Any bias ≥ 0 gives exact labels (see INT_GROUP_MIN in the kernel); it
// only moves where the fix-up runs: a larger bias widens the window (by TIE_SCALE·bias), a
// smaller one leaves more points with two negative keys. The share of 32-point steps that need
// the fix-up, by an FP64 simulation of the kernel's rule (reports/probes/near_tie_rate.cpp,
// 3 Lloyd iterations, K=3..7 at N=8, K=3..5 at N=4):
//   N=8 uniform: 1.0 % without a bias; the mean 1.6 %, 0.75 of it 1.5 %, 0.45 of it 9 %, the
//   largest ‖x'‖² 2.7 %; N=8 Gaussian: 1.0 %, the mean 1.7 %, the largest 4.5 %;
//   N=4 uniform: 0.2 % → 0.3 % at the mean; N=4 Gaussian: 0.25 % → 3.2 %.
// The last is why the form is not a default: its gain (H200, session 18: N=4 K=3..5 −1.8 %,
// N=8 K=16 −1 % on uniform data, N=8 K=3..7 +3.1 %) depends on the data.
double mean_centred_square(const Dataset& data, const std::vector<float>& mean) {
  const int n = data.n;
  const int64_t m = data.m, rows_per_block = 1 << 16, blocks = (m + rows_per_block - 1) / rows_per_block;
  std::vector<double> partial(size_t(blocks), 0.0);
  const float* values = data.values.data();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t end = std::min(m, (b + 1) * rows_per_block);
    double sum = 0.0;
    for (int64_t row = b * rows_per_block; row < end; ++row)
      for (int d = 0; d < n; ++d) {
        const double centred = double(values[row * n + d]) - double(mean[size_t(d)]);
        sum += centred * centred;
      }
    partial[size_t(b)] = sum;
  }
  double sum = 0.0;
  for (const double p : partial) sum += p;
  return m > 0 ? sum / double(m) : 0.0;
}

// operands=prepared, built once per run: thread (step, lane) writes that lane's fragment words of
// the step, the registers the kernel's own split would make of the centred point x' = fl(x − μ)
// (hi = x' rounded to FP16, lo = x' − hi rounded again, x' multiplied by the update's
// power-of-two scale first), and ‖x'‖² of point 32·step + lane, summed in FP64 (the kernel's FP32
// sums of the same products erred by up to N·2^-24 of it; the window never relied on more). Rows
// past M are zero.
// Centring on the data's mean μ shrinks the window, which scales with ‖x'‖² + 2·max‖c'‖²: on
// uniform [0,1)^8 with moved centroids (K=3..7, 2M points, FP64 simulation) the share of
// 32-point steps with a near tie falls from 7.7 % to 1.0 %, and each such step pays the exact
// fix-up.
//   N=8: vector i (m-tile i) = {hi(g), hi(g+8), lo(g), lo(g+8)} of rows 16i + g and 16i + g + 8,
//        dims 2t, 2t+1;
//   N=4: one vector {row g, row g+8 of m-tile 0, then of m-tile 1}, each the hi (t < 2) or lo
//        (t ≥ 2) pair of dims 2(t&1), 2(t&1)+1.
__global__ void build_prepared_operands(const float* __restrict__ points, int64_t m, int n, int64_t steps,
                                      float x_scale, const float* __restrict__ shift, uint4* __restrict__ words,
                                      float* __restrict__ norms) {
  const int64_t threads = steps * 32;
  for (int64_t id = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; id < threads;
       id += int64_t(gridDim.x) * blockDim.x) {
    const int64_t step = id >> 5;
    const int lane = int(id & 31), g = lane >> 2, t = lane & 3;
    auto value = [&](int64_t row, int d) {
      return row < m ? __fmul_rn(__fsub_rn(points[row * n + d], shift[d]), x_scale) : 0.f;
    };
    auto split = [&](int64_t row, int d, unsigned& hi, unsigned& lo) {
      const float v0 = value(row, d), v1 = value(row, d + 1);
      const __half2 h = __floats2half2_rn(v0, v1);
      const __half2 l = __floats2half2_rn(__fsub_rn(v0, __low2float(h)), __fsub_rn(v1, __high2float(h)));
      hi = *reinterpret_cast<const unsigned*>(&h);
      lo = *reinterpret_cast<const unsigned*>(&l);
    };
    unsigned w[2][4];
    for (int i = 0; i < 2; ++i) {
      const int64_t row = 32 * step + 16 * i + g;
      unsigned hi0, lo0, hi1, lo1;
      split(row, n == 8 ? 2 * t : 2 * (t & 1), hi0, lo0);
      split(row + 8, n == 8 ? 2 * t : 2 * (t & 1), hi1, lo1);
      if (n == 8) {
        w[i][0] = hi0, w[i][1] = hi1, w[i][2] = lo0, w[i][3] = lo1;
      } else {
        w[0][2 * i] = t >= 2 ? lo0 : hi0;
        w[0][2 * i + 1] = t >= 2 ? lo1 : hi1;
      }
    }
    const int vectors = n == 8 ? 2 : 1;
    for (int i = 0; i < vectors; ++i)
      words[step * 32 * vectors + 32 * i + lane] = make_uint4(w[i][0], w[i][1], w[i][2], w[i][3]);
    double norm = 0.0;
    for (int d = 0; d < n; ++d) {
      const double v = value(id, d);
      norm += v * v;
    }
    norms[id] = float(norm);
  }
}

class TensorMultiKRun : public gpu::GpuRun {
 public:
  TensorMultiKRun(const Problem& problem, const Dataset& data, const Params& params, const DeviceInfo& device)
      : GpuRun(problem, data, Layout::AoS) {
    if (params.at("update").get<std::string>() == "f16") point_scale_ = point_scale_for_update(data);
    const KernelConfig config = config_for(problem, params, device.cc_major, device.cc_minor, point_scale_);
    // Before NVRTC, whose #error would say the same less plainly.
    if (config.fetch_registers)
      if (auto refusal = fetch_registers_refusal(problem.n, problem.k.sum(), params))
        throw UnsupportedError("tensor-multik: " + *refusal);
    if (auto refusal = prepared_operands_refusal(problem.n, problem.k.sum(), params))
      throw UnsupportedError("tensor-multik: " + *refusal);
    if (auto refusal = int_group_min_refusal(params)) throw UnsupportedError("tensor-multik: " + *refusal);
    config_ = config;
    if (const char* path = std::getenv("MKBENCH_TIMELINE")) {
      timeline_path_ = path;
      config_.timeline = true;
    }
    block_ = config.block;
    dynamic_smem_ = size_t(dynamic_smem_bytes(problem.n, problem.k.sum(), config.block, config.stages, ring_kind(params)));
    kernel_ = loaded_kernel(config_);
    const int64_t steps = (problem.m + 31) / 32;
    const int64_t useful_blocks = (steps + block_ / 32 - 1) / (block_ / 32);
    int64_t grid = params.at("grid").get<int64_t>();
    if (grid == 0) {
      // Persistent grid: the blocks resident at once on every SM, no partial second wave.
      int resident = 0;
      gpu::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, reinterpret_cast<const void*>(kernel_),
                                                               block_, dynamic_smem_),
                 "occupancy query");
      if (resident < 1)
        throw UnsupportedError("tensor-multik: block=" + std::to_string(block_) +
                               " cannot be resident on this device (registers or shared memory)");
      grid = int64_t(resident) * std::max(1, device.sm_count);
    }
    grid_ = std::max<int64_t>(1, std::min(grid, useful_blocks));
    keep_mask_ = packed_keep_mask(problem.k.kmax);
    const int sum_k = problem.k.sum();
    sums_.allocate(size_t(sum_k) * problem.n, "tensor-multik sums");
    counts_.allocate(size_t(sum_k), "tensor-multik counts");
    inertia_.allocate(size_t(problem.k.count()), "tensor-multik inertia");
    // The blocks' ticket and the dynamic tail's chunk counter.
    blocks_done_.allocate(2, "tensor-multik block counter");
    if (config_.timeline) {
      timeline_.allocate(size_t(grid_) * timeline_record() + 1, "tensor-multik timeline");
      gpu::check(cudaMemsetAsync(timeline_.get(), 0, timeline_.bytes(), state_.stream()), "zero timeline");
    }
    // The kernel leaves these zero for the next launch; only the first needs clearing.
    cudaStream_t stream = state_.stream();
    gpu::check(cudaMemsetAsync(sums_.get(), 0, sums_.bytes(), stream), "zero sums");
    gpu::check(cudaMemsetAsync(counts_.get(), 0, counts_.bytes(), stream), "zero counts");
    gpu::check(cudaMemsetAsync(inertia_.get(), 0, inertia_.bytes(), stream), "zero inertia");
    gpu::check(cudaMemsetAsync(blocks_done_.get(), 0, blocks_done_.bytes(), stream), "zero block counter");
    if (config.prepared_operands) prepare_operands_once(problem, data, steps, stream);
    gpu::check(cudaStreamSynchronize(stream), "tensor-multik scratch");
  }

  ~TensorMultiKRun() override {
    if (timeline_.get()) write_timeline();
  }

  std::optional<double> conversion_ms() const override {
    if (!fragment_words_.get()) return std::nullopt;
    return conversion_ms_;
  }

  void iterate(bool store_labels) override {
    if (store_labels && !labels_kernel_) {
      KernelConfig with_labels = config_;
      with_labels.store_labels = config_.prepared_operands;
      labels_kernel_ = config_.prepared_operands ? loaded_kernel(with_labels) : kernel_;
    }
    auto acc = state_.accumulators(store_labels);
    const float* points = state_.points().data;
    long long m = state_.problem().m;
    float* centroids = state_.centroids_mutable();
    double* sums = sums_.get();
    unsigned long long* counts = counts_.get();
    double* inertia = inertia_.get();
    unsigned* done = blocks_done_.get();
    const uint4* fragment_words = fragment_words_.get();
    unsigned long long* timeline = timeline_.get();
    const float* point_norms = point_norms_.get();
    const float* point_shift = point_shift_.get();
    void* args[] = {&points,     &m,           &centroids,  &sums,       &counts,        &inertia,
                    &done,       &acc.counts,  &acc.inertia, &acc.labels, &keep_mask_,    &point_scale_,
                    &fragment_words, &point_norms, &point_shift, &key_bias_, &timeline};
    const cudaKernel_t kernel = store_labels ? labels_kernel_ : kernel_;
    gpu::check(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(unsigned(grid_)), dim3(unsigned(block_)),
                                args, dynamic_smem_, state_.stream()),
               "tensor_multik_iteration");
  }

 private:
  cudaKernel_t loaded_kernel(const KernelConfig& config) const {
    const cudaKernel_t kernel = compiled_kernel(config);
    gpu::check(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(dynamic_smem_)),
               "tensor-multik shared memory limit");
    return kernel;
  }

  // Timed with events (the one-time cost a fit pays before its first iteration), so results
  // can report it beside the per-iteration time.
  void prepare_operands_once(const Problem& problem, const Dataset& data, int64_t steps, cudaStream_t stream) {
    fragment_words_.allocate(size_t(steps) * 8 * problem.n, "tensor-multik operands=prepared words");
    point_norms_.allocate(size_t(steps) * 32, "tensor-multik operands=prepared norms");
    const std::vector<float> mean = column_means(data);
    // In the kernel's units (points ×point_scale_, a power of two), rounded up a little so the
    // float never undercuts the FP64 mean; zero for the float min, which reads no bias.
    if (config_.int_group_min)
      key_bias_ = float(mean_centred_square(data, mean) * double(point_scale_) * double(point_scale_) * (1.0 + 0x1p-20));
    point_shift_.allocate(mean.size(), "tensor-multik operands=prepared centre");
    gpu::check(cudaMemcpyAsync(point_shift_.get(), mean.data(), mean.size() * sizeof(float), cudaMemcpyHostToDevice,
                               stream),
               "tensor-multik centre");
    struct Events {
      cudaEvent_t start = nullptr, stop = nullptr;
      ~Events() {
        if (start) cudaEventDestroy(start);
        if (stop) cudaEventDestroy(stop);
      }
    } events;
    gpu::check(cudaEventCreate(&events.start), "conversion event");
    gpu::check(cudaEventCreate(&events.stop), "conversion event");
    cudaEvent_t start = events.start, stop = events.stop;
    gpu::check(cudaEventRecord(start, stream), "conversion event");
    const int64_t threads = steps * 32;
    const unsigned blocks = unsigned(std::min<int64_t>((threads + 255) / 256, 65535));
    build_prepared_operands<<<blocks, 256, 0, stream>>>(state_.points().data, problem.m, problem.n, steps, point_scale_,
                                                      point_shift_.get(), fragment_words_.get(), point_norms_.get());
    gpu::check_launch("build_prepared_operands");
    gpu::check(cudaEventRecord(stop, stream), "conversion event");
    gpu::check(cudaEventSynchronize(stop), "build_prepared_operands");
    float ms = 0.f;
    gpu::check(cudaEventElapsedTime(&ms, start, stop), "conversion time");
    conversion_ms_ = ms;
  }

  // Per block: SM, then global-timer ns at entry, after the prologue, after the loop's block
  // barrier, at the ticket, then each warp's loop end (the kernel's TIMELINE_FIELDS + WARPS).
  int64_t timeline_record() const { return 5 + block_ / 32; }

  // MKBENCH_TIMELINE=file.csv: the last launch's stamps, one row per block, in ns after the first
  // block's entry (the last block's finish in the header).
  void write_timeline() const {
    std::vector<unsigned long long> stamps(timeline_.size());
    if (cudaStreamSynchronize(state_.stream()) != cudaSuccess ||
        cudaMemcpy(stamps.data(), timeline_.get(), timeline_.bytes(), cudaMemcpyDeviceToHost) != cudaSuccess) {
      std::fprintf(stderr, "mkbench: tensor-multik timeline: could not read it back\n");
      return;
    }
    const int64_t record = timeline_record();
    unsigned long long origin = ~0ull;
    for (int64_t b = 0; b < grid_; ++b) origin = std::min(origin, stamps[size_t(b * record + 1)]);
    std::ofstream out(timeline_path_);
    out << "# tensor-multik timeline, grid " << grid_ << " x " << block_ << "; last block finished at "
        << (stamps.back() - origin) << " ns\nblock,sm,entry_ns,prologue_ns,loop_barrier_ns,ticket_ns";
    for (int w = 0; w < block_ / 32; ++w) out << ",warp" << w << "_loop_ns";
    out << "\n";
    for (int64_t b = 0; b < grid_; ++b) {
      const unsigned long long* r = stamps.data() + b * record;
      out << b << "," << r[0];
      for (int64_t f = 1; f < record; ++f) {
        out << ",";
        if (r[f]) out << (long long)(r[f] - origin);  // (empty: a stamp this kernel shape leaves out)
      }
      out << "\n";
    }
    if (!out) std::fprintf(stderr, "mkbench: tensor-multik timeline: could not write %s\n", timeline_path_.c_str());
  }

  KernelConfig config_{};
  cudaKernel_t kernel_ = nullptr;
  cudaKernel_t labels_kernel_ = nullptr;  // built by the first iteration that keeps labels
  int block_ = 256;
  int64_t grid_ = 1;
  size_t dynamic_smem_ = 0;
  unsigned keep_mask_ = ~0u;
  float point_scale_ = 1.f;
  float key_bias_ = 0.f;  // group_min=int: mean ‖x'‖² (scaled), added to every key
  gpu::DeviceBuffer<double> sums_;
  gpu::DeviceBuffer<unsigned long long> counts_;
  gpu::DeviceBuffer<double> inertia_;
  gpu::DeviceBuffer<unsigned> blocks_done_;
  gpu::DeviceBuffer<uint4> fragment_words_;  // operands=prepared only: steps × 32 lanes × N/4 vectors
  gpu::DeviceBuffer<float> point_norms_;     // operands=prepared only: ‖x'‖² (scaled), zero past M
  gpu::DeviceBuffer<float> point_shift_;     // operands=prepared only: the centre μ (N floats, unscaled)
  gpu::DeviceBuffer<unsigned long long> timeline_;  // MKBENCH_TIMELINE only
  std::string timeline_path_;
  double conversion_ms_ = 0.0;
};

class TensorMultiK : public Variant {
 public:
  std::string name() const override { return "tensor-multik"; }
  std::string description() const override {
    return "seed 000 MultiK with tensor-core distances (FP16 hi+lo features, or 3xTF32), per-lane argmin after an "
           "stmatrix transpose, FP16 one-hot tensor-core update, cp.async point ring; one launch per iteration";
  }
  bool runs_on_gpu() const override { return true; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    if (device.cc_major < 8) return "needs TF32 tensor cores (CC >= 8.0)";
    if (problem.m >= (int64_t(1) << 36)) return "M of 2^36 points or more (the kernel counts 32-point steps in 32 bits)";
    const int sum_k = problem.k.sum();
    if (sum_k > kMaxSlots)
      return "ΣK=" + std::to_string(sum_k) + " exceeds " + std::to_string(kMaxSlots) +
             " slots (one-hot words and fragments in registers); use registers-multik or gemm-tf32x3";
    if (n_tiles(sum_k) * k_steps(problem.n) > kMaxTilesTimesSteps)
      return "ceil(ΣK/8)·ceil(N/8) = " + std::to_string(n_tiles(sum_k) * k_steps(problem.n)) + " exceeds " +
             std::to_string(kMaxTilesTimesSteps) +
             " register-resident centroid tiles; use registers-multik or gemm-tf32x3";
    if (dynamic_smem_bytes(problem.n, sum_k, 128, 2) > smem_limit(device))
      return "the smallest block (128 threads, 2 stages) needs " +
             std::to_string(dynamic_smem_bytes(problem.n, sum_k, 128, 2)) + " bytes of shared memory, device allows " +
             std::to_string(smem_limit(device));
    return gpu::check_fits_in_memory(problem, device, double(sum_k) * problem.n * 8.0);
  }

  // LloydState's buffers, the run's own FP64 sums, and operands=prepared's copy of the points
  // (FP16 fragment words of every 32-point step) with their norms.
  DeviceFootprint device_footprint(const Problem& problem, const Params& params, const DeviceInfo& device,
                                   bool with_labels) const override {
    DeviceFootprint footprint = Variant::device_footprint(problem, params, device, with_labels);
    footprint.add("tensor-multik sums", double(problem.k.sum()) * problem.n * 8.0);
    if (params.is_object() && params.value("operands", std::string()) == "prepared") {
      const double steps = double((problem.m + 31) / 32);
      footprint.add("prepared operands", steps * 8.0 * problem.n * 16.0 + steps * 32.0 * 4.0);
    }
    return footprint;
  }

  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    ParamSpace space;
    const int sms = std::max(1, device.sm_count);
    std::vector<nlohmann::json> grids{0};
    for (int factor : {1, 2, 3, 4, 6, 8}) grids.push_back(int64_t(factor) * sms);
    space.axes.push_back({"grid", grids, "blocks; 0 = the resident blocks of every SM (persistent grid)"});
    // 640 and 768: one block per SM at 96 and 80 registers. N=4 K=3..5 takes 640 × 1 (below).
    space.axes.push_back({"block", {128, 256, 384, 512, 640, 768}, "threads per block"});
    // 5 and 6 (20 and 24 warps of 128-thread blocks at 96 and 80 registers) measured 7-15 %
    // slower at N=8 K=3..7 and 11 % at N=4 K=3..5 (session 9), so the space stops at 4.
    space.axes.push_back({"min_blocks", {1, 2, 3, 4},
                          "launch-bounds minimum of resident blocks per SM: caps registers at 65536/(block·min_blocks)"});
    space.axes.push_back({"stages", {2, 3, 4, 6}, "cp.async ring depth per warp, in steps of 32 points (FP32 rows: stages - 1 in flight beside the one read; prepared words: stages in flight)"});
    space.axes.push_back({"transpose", {"stmatrix", "shared-stores"},
                          "how distance fragments reach the per-lane rows: stmatrix (sm_90) or 4 scalar stores"});
    space.axes.push_back({"update", {"f16", "tf32"},
                          "one-hot(labels)ᵀ·X product: FP16 m16n8k16 (points split hi+lo in FP16, one-hot bits "
                          "as FP16 operands straight from shuffled bytes) or TF32 m16n8k8 (hi+lo TF32)"});
    space.axes.push_back({"fragments", {"registers", "shared"},
                          "where the centroid operands of the distance product live: registers for the whole "
                          "kernel, or shared memory, one LDS.128 per tile and k-step each step (4·tiles fewer registers)"});
    space.axes.push_back({"argmin", {"packed", "mask"},
                          "per-point argmin and near-tie test: packed (index in the key's low mantissa bits, window "
                          "count by saturating FFMAs; 4 instructions per key) or mask (plain minimum, then one "
                          "in-window bit per key by a funnel shift of key − edge's sign; 3 per key; ΣK <= 32)"});
    space.axes.push_back({"distance", {"tf32x3", "f16x2"},
                          "distance product: tf32x3 (m16n8k8, x and c split hi+lo in TF32, 3 MMAs per 8 dims) or "
                          "f16x2 (m16n8k16, hi+lo in FP16 as features of k: 1 MMA per tile for N <= 4, 2 for N <= 8; "
                          "the update reads the same registers transposed by movmatrix)"});
    space.axes.push_back({"fetch", {"ring", "registers"},
                          "how points reach the distance fragments: ring (cp.async into a per-warp shared ring of "
                          "`stages` steps, read back by shared loads; with operands=prepared the ring carries the "
                          "prepared words and ‖x‖², `stages` steps in flight) or registers (each lane loads its fragment "
                          "pairs from global memory one step ahead, `stages` unused; N of 4 or 8, and with operands=per-step ΣK mod 8 "
                          "in 1..4)"});
    space.axes.push_back({"operands", {"per-step", "prepared"},
                          "the distance product's FP16 point operands and ‖x‖²: per-step (split from the FP32 rows "
                          "every step) or prepared (converted once when the run is prepared into the fragment words "
                          "in lane order, plus ‖x‖², which either fetch form brings into the fragment registers as "
                          "they are; N of 4 or 8, distance=f16x2, argmin=mask; the rows stay for the exact fix-up)"});
    space.axes.push_back({"prefetch", {0, 1, 2, 4},
                          "operands=prepared only (ignored otherwise): while a step runs, the step this many steps "
                          "beyond the furthest one fetched (the next with fetch=registers, `stages` ahead with "
                          "fetch=ring) is asked into L2 (prefetch.global.L2), so its loads hit L2 instead of "
                          "waiting on DRAM; 0 = none"});
    space.axes.push_back({"group_min", {"float", "int"},
                          "argmin=mask's minimum of each K group: float (FMNMX, one key an instruction) or int (every "
                          "key biased by the data's mean ‖x'‖² in its accumulator, so most are positive and their bits "
                          "order as integers: sm_90's three-input integer min takes two keys an instruction; a group "
                          "with two keys below zero goes to the exact fix-up; operands=prepared only)"});
    space.axes.push_back({"layout", {"aos"}, "point layout in device memory (both fetch forms read whole rows)"});
    const bool hopper = device.cc_major >= 9;
    space.restrictions.push_back({"transpose=stmatrix needs sm_90", [hopper](const Params& p) {
                                    return hopper || p.at("transpose").get<std::string>() != "stmatrix";
                                  }});
    const int n = problem.n, sum_k = problem.k.sum();
    const int64_t limit = smem_limit(device);
    space.restrictions.push_back(
        {"shared memory: centroids + (block/32)·(ring + 32·(min(32, 8·ceil(ΣK/8)) + 4)) floats fit the per-block limit "
         "(ring: stages·32·N floats, stages·32·(N+1) with operands=prepared, none with fetch=registers)",
         [n, sum_k, limit](const Params& p) {
           return dynamic_smem_bytes(n, sum_k, p.at("block").get<int>(), p.at("stages").get<int>(), ring_kind(p)) <= limit;
         }});
    space.restrictions.push_back({"argmin=mask needs ΣK <= 32 (one 32-bit in-window word per point)",
                                  [sum_k](const Params& p) {
                                    return sum_k <= 32 || p.value("argmin", std::string("packed")) != "mask";
                                  }});
    space.restrictions.push_back({"distance=f16x2 needs update=f16 (they share the FP16 point operands)",
                                  [](const Params& p) {
                                    return p.value("distance", std::string("tf32x3")) != "f16x2" ||
                                           p.at("update").get<std::string>() == "f16";
                                  }});
    // Wider points keep 4+ feature tiles of fragments alive through the argmin: N=20 and N=32
    // spill 28-32 bytes at 128 registers (NVRTC, sm_90).
    space.restrictions.push_back({"distance=f16x2 needs N <= 16 (its point fragments live until the update)",
                                  [n](const Params& p) {
                                    return n <= 16 || p.value("distance", std::string("tf32x3")) != "f16x2";
                                  }});
    space.restrictions.push_back({"fetch=registers needs N of 4 or 8, distance=f16x2, argmin=mask and (operands=per-step) ΣK mod 8 in 1..4",
                                  [n, sum_k](const Params& p) {
                                    return p.value("fetch", std::string("ring")) != "registers" ||
                                           !fetch_registers_refusal(n, sum_k, p).has_value();
                                  }});
    space.restrictions.push_back({"operands=prepared needs N of 4 or 8, distance=f16x2 and argmin=mask",
                                  [n, sum_k](const Params& p) { return !prepared_operands_refusal(n, sum_k, p).has_value(); }});
    space.restrictions.push_back({"group_min=int needs operands=prepared",
                                  [](const Params& p) { return !int_group_min_refusal(p).has_value(); }});
    space.restrictions.push_back({"block·min_blocks <= 2048 threads per SM", [](const Params& p) {
                                    return p.at("block").get<int>() * p.at("min_blocks").get<int>() <= 2048;
                                  }});
    const int64_t steps = (problem.m + 31) / 32;
    space.restrictions.push_back({"no idle blocks: (grid-1)·block/32 warps < steps of 32 points", [steps](const Params& p) {
                                    const int64_t grid = p.at("grid").get<int64_t>();
                                    return grid == 0 || (grid - 1) * (p.at("block").get<int64_t>() / 32) < steps;
                                  }});
    return space;
  }

  // Occupancy is set by registers: the resident centroid tiles and update accumulators grow
  // with tiles = ceil(ΣK/8)·ceil(N/8), and sm_90 ptxas (tests/test_tensor_multik.cpp keeps
  // it honest) fits them without spilling as follows:
  //   tiles ≤ 2 (N=4 K=3..5, N=8 K=16): ≤ 80 registers → block 384 × 2 = 24 warps per SM
  //   (N ≤ 4 with prepared operands: 640 × 1, below);
  //   tiles ≤ 4 (N=8 K=3..7: 140 uncapped): 128 → block 256 × 2 = 16 warps;
  //   more (N=16 K=3..7: 168 with register fragments): the centroid operands move to shared
  //   memory (fragments=shared, 128 registers without spilling) → block 512 × 1 = 16 warps:
  //   1.232 against 1.274 ms for 384 × 1 with register fragments (H200, session 8), while at
  //   N=8 shared fragments cost 4 % (0.82 against 0.78 ms: they save only 5 registers there).
  // Other architectures get block 256 × 1 (sm_80 spills at N=3 K=3..7 under a 128 cap).
  // argmin=mask wherever it applies (ΣK ≤ 32): on the H200, same call, tuned blocks, it took
  // N=8 K=3..7 from 0.785 to 0.715 ms, N=4 K=3..5 0.475 → 0.444, N=16 1.236 → 1.181 and
  // K=16 0.137 → 0.132 (session 10).
  // 4 stages keep 3 steps of loads in flight per warp (48 KB per SM at 16 warps and N=8);
  // fewer where the ring would not fit.
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    const int tiles = n_tiles(problem.k.sum()) * k_steps(problem.n);
    int block = 256, min_blocks = 1;
    bool shared_fragments = false;
    if (device.cc_major >= 9) {
      if (tiles <= 2) block = 384, min_blocks = 2;
      else if (tiles <= 4) block = 256, min_blocks = 2;
      else block = 512, min_blocks = 1, shared_fragments = true;
    }
    int stages = shared_fragments ? 3 : 4;
    while (stages > 2 && int64_t(min_blocks) * dynamic_smem_bytes(problem.n, problem.k.sum(), block, stages) >
                             std::max<int64_t>(smem_limit(device), device.smem_per_sm > 0 ? device.smem_per_sm : 0))
      --stages;
    while (stages > 2 && dynamic_smem_bytes(problem.n, problem.k.sum(), block, stages) > smem_limit(device)) --stages;
    Params params = {{"grid", 0},
                     {"block", block},
                     {"min_blocks", min_blocks},
                     {"stages", stages},
                     {"transpose", device.cc_major >= 9 ? "stmatrix" : "shared-stores"},
                     {"update", "f16"},
                     {"fragments", shared_fragments ? "shared" : "registers"},
                     {"argmin", problem.k.sum() <= 32 ? "mask" : "packed"},
                     {"distance", problem.n <= 16 ? "f16x2" : "tf32x3"},
                     {"fetch", "ring"},
                     {"operands", "per-step"},
                     {"prefetch", kDefaultPrefetchAhead},
                     {"group_min", "float"},
                     {"layout", "aos"}};
    // fetch=registers at N=8 on Hopper: 0.633 → 0.605 ms at N=8 K=3..7 (H200, session 14, same call),
    // and 4 % slower at N=4 K=3..5, where the ring's L1 traffic was a smaller share.
    if (device.cc_major >= 9 && problem.n == 8 && !fetch_registers_refusal(problem.n, problem.k.sum(), params))
      params["fetch"] = "registers";
    // Prepared operands on Hopper wherever they apply and their copy (the points again, plus
    // ‖x‖²) fits beside the rest: H200, same call (session 15), against each shape's best
    // per-step form, N=8 K=3..7 0.582 → 0.537 ms, N=4 K=3..5 0.360 → 0.325 (against its ring),
    // N=8 K=16 0.122 → 0.109 (against its ring; ΣK = 16 has no free half tile for the per-step
    // fetch=registers).
    Params prepared = params;
    prepared["fetch"] = "registers";
    prepared["operands"] = "prepared";
    const double prepared_bytes = problem.data_bytes() + 4.0 * double(problem.m);
    if (device.cc_major >= 9 && !prepared_operands_refusal(problem.n, problem.k.sum(), prepared) &&
        !gpu::check_fits_in_memory(problem, device, double(problem.k.sum()) * problem.n * 8.0 + prepared_bytes))
      params = prepared;
    // L2 prefetch one step beyond the next: N=4 K=3..5 0.290 → 0.281 ms; at N=8 (K=3..7 and 16)
    // every distance was slower, 0.514 → 0.521 and 0.098 → 0.104 at 1 (H200, session 16, same
    // call). (Loading the words through the non-coherent path instead of __ldcg cost N=4 3 %.)
    if (params.at("operands") == "prepared" && problem.n <= 4) params["prefetch"] = 1;
    // N ≤ 4 with prepared operands needs ~94 registers with the lean step and the deferred
    // update: 640 × 1 (20 warps at 96) beat 384 × 2 (24 at 80, its cap): N=4 K=3..5 0.2510-0.2531
    // against 0.2564-0.2599 ms in three calls; 576 × 1 ran 0.273-0.275 and 704 × 1 (80 registers)
    // 0.265-0.268 (H200, session 21, same calls). Not measured on other GPUs.
    if (params.at("operands") == "prepared" && problem.n <= 4 && tiles <= 2) params["block"] = 640, params["min_blocks"] = 1;
    return params;
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    if (auto reason = can_implement(problem, device)) throw UnsupportedError("tensor-multik: " + *reason);
    return std::make_unique<TensorMultiKRun>(problem, data, params, device);
  }
};

MKBENCH_REGISTER_VARIANT(TensorMultiK);

}  // namespace

namespace tensor_multik {

std::string compile_report(const Problem& problem, const Params& params, int cc_major, int cc_minor,
                           float point_scale) {
  return gpu::compile_only(compile_request(config_for(problem, params, cc_major, cc_minor, point_scale)));
}

float update_point_scale(const Dataset& data) { return point_scale_for_update(data); }

}  // namespace tensor_multik
}  // namespace mk
