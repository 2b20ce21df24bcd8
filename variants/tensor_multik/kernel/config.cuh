// tensor-multik, runtime-compiled: the sizes and per-shape rules every stage reads. The host
// (variants/tensor_multik/kernel_config.cpp) prepends the #defines of one specialisation and
// then `#include "kernel.cuh"`; the rules below follow from those defines alone, so each is
// a constant of the compiled kernel. Why each rule is what it is: ../README.md.
#pragma once

// The host's defines: the shape and the parameter point (see compile_request).
#if !defined(NDIM) || !defined(KMIN) || !defined(KMAX) || !defined(SUMK) || !defined(BLOCK) || !defined(STAGES) || \
    !defined(MIN_BLOCKS) || !defined(USE_STMATRIX) || !defined(UPDATE_F16) || !defined(SCALE_X) ||              \
    !defined(CFRAG_SHARED) || !defined(ARGMIN_MASK) || !defined(IDX_BITS) || !defined(DIST_F16) ||              \
    !defined(FETCH_REGS) || !defined(PREPARED_OPERANDS) || !defined(STORE_LABELS) || !defined(PREFETCH_AHEAD) || \
    !defined(INT_GROUP_MIN) || !defined(EXACT_INERTIA) || !defined(TIE_SCALE) || !defined(GUARD_OVER_TIE) ||    \
    !defined(ABS_SCALE) || !defined(TIMELINE) || !defined(SUMS_OUT)
#error "tensor-multik's kernel is compiled with the #defines of one specialisation (compile_request)"
#endif

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
// slots of the last distance tile. (ncu put the ring's N=8 kernel at 90 % of the L1 data pipe:
// the cp.async copies cost 12 wavefronts per 512 bytes, 4 ideal, and the ring's fragment and
// own-point reads 16 more per step.)
// operands=prepared (PREPARED_OPERANDS, read by fetch=registers): the points were converted once,
// when the run was prepared, into the FP16 hi/lo words of the distance product's A fragments, in
// the order the lanes hold them (N=8: two 16-byte words per lane and step, N=4: one), and ‖x‖²
// into an array of its own. A step then loads its operands and ‖x‖² and computes neither: the
// split, the ‖x‖² partials and their trip through the transpose were ~40 of the ~300
// instructions of an N=8 step. The FP32 rows stay for the exact fix-up.
#define XX_IN_TILE (FETCH_REGS && !PREPARED_OPERANDS)
#if PREPARED_OPERANDS && !FETCH_REGS
#error "operands=prepared is read by fetch=registers"
#endif
#if FETCH_REGS
#if !(DIST_F16 && (NDIM == 4 || NDIM == 8) && ARGMIN_MASK && (PREPARED_OPERANDS || SUMK - 8 * (NT - 1) <= 4))
#error "fetch=registers needs distance=f16x2, N of 4 or 8, argmin=mask and (per-step operands) 4 free slots in the last tile"
#endif
#define FRAG_VECS (NDIM == 8 ? 2 : 1)
#if INT_GROUP_MIN && !(PREPARED_OPERANDS && ARGMIN_MASK)
#error "group_min=int needs operands=prepared (its key bias) and argmin=mask"
#endif
#define RING_FLOATS 0
#else
#define RING_FLOATS (STAGES * STEP_FLOATS)
#endif
#define WARP_FLOATS (RING_FLOATS + 32 * TROW)
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

// ---- Register-budget rules: each form is on where ptxas fits it without spilling (NVRTC,
// sm_90) and where it measured faster (../README.md, "Design decisions").

// Values pinned in registers through a shuffle (pinned() in instructions.cuh): only up to N=8
// and where launch bounds leave more than 64 registers; N=16 at 128, and N=8 K=16 at 64
// (512 × 2), spill with them.
#define PIN_IF_ROOM_ENABLED (NDIM <= 8 && BLOCK * MIN_BLOCKS < 1024)
// The lean step: forms that save instructions a step but cost registers or change ptxas's
// schedule: the window as one FMA on ‖x‖² (its coefficient held beside its constant, no square
// root), the lane's step limit held (one compare), the fix-up test without short-circuits (no
// branch), the guard's multiply inside the fix-up, and the fold's test as a warp vote. On with
// prepared operands above 512 threads per SM (N=4 K=3..5, N=8 K=16: 3-6 % faster), and at
// N=8 K=3..7's 256 × 2 (four n-tiles) together with the deferred update it brings (1 % faster;
// alone it was 1 % slower; with scaled points it spills 8 bytes). N=16 (per-step operands) and
// group_min=int spill 4-16 bytes with it.
#define LEAN_STEP                                                            \
  (DIST_F16 && PREPARED_OPERANDS && !INT_GROUP_MIN && PIN_IF_ROOM_ENABLED && \
   (BLOCK * MIN_BLOCKS > 512 || (BLOCK * MIN_BLOCKS == 512 && NDIM == 8 && NT == 4 && !DSCALE)))
// The update's partner word is shuffled before the fix-up branch (see the step).
#define EARLY_PARTNER (ARGMIN_MASK && UPDATE_F16 && WORDS == 1)
// The deferred update: a step's update (its shuffles, masks and MMAs) runs in the next step's
// first block, beside that step's distance MMAs, loads and transposes, so ptxas can overlap the
// two dependency chains in one warp; the last step's runs after the loop. Until then the step's
// one-hot word, partner word and update operands wait in registers. Where the lean step is
// (N=4 K=3..5 -2.1 %, N=8 K=16 -1.2 %); without it N=8 K=3..7 spills 8 bytes at its
// 128-register cap and ran 4 % slower.
#define DEFERRED (LEAN_STEP && PREPARED_OPERANDS && UPDATE_F16 && DIST_F16 && EARLY_PARTNER)
// The dynamic tail: the last eighth of the steps is handed out in chunks of 8 contiguous steps
// from one counter in global memory, instead of grid-strided. With fixed shares the warp
// scheduler's favourites finish first: at N=8 K=3..7 (two blocks per SM) one block of every SM
// ended ~40 µs ahead of the other, so the SMs ran their last stretch half full. Operands=prepared
// with fetch=registers (their loads follow the warp's order of steps), at N=8's 128-register
// shapes: N=8 K=3..7 0.514 → 0.491 ms (chunks of 16 or a sixteenth as tail: 0.496). At N=4
// (640 × 1) it measured 1.5-2 % slower. The tail's steps update in place: beside the deferred
// update the tail loop's state spilled 44 bytes at 128 registers.
#define DYNAMIC (NDIM == 8 && BLOCK * MIN_BLOCKS <= 512 && PREPARED_OPERANDS && FETCH_REGS)
#define TAIL_SHIFT 3    // the tail is the last 2^-TAIL_SHIFT of the steps
#define TAIL_CHUNK 8    // contiguous steps a claim hands out
// Grid-strided steps each warp takes in the tail loop before its first chunk: its first claim
// has their time to come back.
#define TAIL_STRIDED 4
// N=4 (prepared operands): the words are loaded two steps ahead, not one. Its step is short
// (~150 instructions) and it waited on those loads (long scoreboard 2.0 cycles per
// instruction); the step loop is unrolled by 2 so that the two register sets trade roles
// without moves (a move would wait on the load as the use does). 2.9 % faster; N=8 has no
// registers to spare at 128.
#define TWO_AHEAD (PREPARED_OPERANDS && NDIM == 4)
// The first steps' loads go out before the centroids are read and turned into fragments: they
// do not depend on them, and each is a DRAM round trip the prologue then hides. With more than
// 4 register-resident tiles the fetch state live across the fragment build costs a spill
// (N=5 K=3..10), so those shapes fetch after it.
#define EARLY_FETCH (NT * DK <= 4 && !FETCH_REGS)
// Operands=prepared, the same for its register loads (TWO_AHEAD's depth at N=4): 0.6-1 % faster
// at N=4; at N=8 K=3..7 the registers held through the prologue spill 8 bytes.
#define EARLY_PREPARED (NDIM == 4 && PREPARED_OPERANDS)
// The update's shuffle sources pinned (ptxas otherwise adds 8, 16 and 24 to pair_lane every
// step): with 128 registers, and at N=4 with 80; at 80, N=8 K=1..4 spills with them.
#define PIN_PAIR_SOURCES (PREPARED_OPERANDS && (BLOCK * MIN_BLOCKS <= 512 || NDIM == 4))
// fetch=ring at N of 4 and 8 reads its fragment pair and own point at pinned shared addresses.
#define PINNED_RING (DIST_F16 && (NDIM == 4 || NDIM == 8) && !FETCH_REGS)
// The tiles' ‖c‖² quads held in registers for the whole kernel. fetch=registers at N=8 frees 10
// of the 128 registers: the first two tiles' quads stay (8 of the 16 wavefronts a step spent
// reloading them; a third tile spills 8 bytes). Prepared operands free more: every tile's quad
// (up to 4) stays. Only where launch bounds leave 128 registers (at 80, 384 × 2, N=8 K=16 and
// K=1..4 spill). N=4 with prepared operands needs 64 of its 80, so its (at most two) quads stay
// too: two shared loads a step fewer on an L1 pipe that was 82 % busy.
#define NORM_REG_TILES                                                                                  \
  (FETCH_REGS && NDIM == 8 && BLOCK * MIN_BLOCKS <= 512 ? (PREPARED_OPERANDS ? (NT < 4 ? NT : 4) : 2) \
   : PREPARED_OPERANDS && NDIM == 4 && NT <= 2       ? NT                                             \
                                                      : 0)
// Steps between folds of the inertia partials and one-hot counts (see the step).
#define FOLD_STEPS 64
#if DYNAMIC && (TWO_AHEAD || EARLY_PREPARED)
#error "the dynamic tail's successor loads one step ahead (N=8)"
#endif
