// The compile-time shape of one subset-batch specialisation (variants/subset_batch/cuda_engine.cu
// writes these #defines before including kernel.cuh). Everything a thread keeps per problem
// is indexed by these constants, so it lives in registers.
#pragma once

#if !defined(S_COLS) || !defined(K_CLUSTERS) || !defined(N_ATTRS) || !defined(CLASSES) || !defined(BLOCK) || \
    !defined(LABEL_BLOCK) || !defined(TILE_GROUPS) || !defined(INDEX_BITS)
#error "subset_batch kernels need S_COLS, K_CLUSTERS, N_ATTRS, CLASSES, BLOCK, LABEL_BLOCK, TILE_GROUPS, INDEX_BITS"
#endif

// The table on the device: groups of 4 consecutive rows, each attribute's 4 values one float4
// ([group][attribute] float4), so one 16-byte shared-memory load gives a thread 4 rows of one
// of its columns, and a tile is one contiguous range of the array.
#define GROUP_ROWS 4

// A thread's accumulators for one cluster: its S_COLS sums and its count, in whole float4s.
#define ACC_QUADS ((S_COLS + 1 + 3) / 4)
#define COUNT_QUAD (S_COLS / 4)  // the count lane: component S_COLS % 4 of quad COUNT_QUAD
#define COUNT_COMPONENT (S_COLS % 4)

// Two classes: a step also counts each cluster's class-1 points, in the count lane. A point adds
// its weight 1 + 4096·class there, which stays an exact integer in FP32 while a lane holds at
// most 4095 points (4095 + 4096·4095 < 2^24), so every FLUSH_TILES tiles (at most 4095 rows)
// a thread moves its lanes into integer counters (total and class 1). The scoring then needs
// no pass of its own (docs/explore.md, "The score"). Other class counts leave the step as it
// is and count in subset_label_pass.
#define FOLD_CLASSES (CLASSES == 2)
#define FOLD_SHIFT 12
#define FLUSH_TILES (4095 / (TILE_GROUPS * GROUP_ROWS))
static_assert(TILE_GROUPS * GROUP_ROWS <= 4095, "a tile must fit in one flush of the count lanes");

// The low INDEX_BITS mantissa bits of a distance key carry the centroid index.
#define INDEX_MASK ((1u << INDEX_BITS) - 1u)

static_assert(S_COLS >= 1 && K_CLUSTERS >= 1 && N_ATTRS >= S_COLS && CLASSES >= 1, "shape");
static_assert((1 << INDEX_BITS) >= K_CLUSTERS, "INDEX_BITS must hold every centroid index");
static_assert(BLOCK % 32 == 0 && LABEL_BLOCK % 32 == 0, "whole warps");

// The group loop's unroll: 4 (8 points in flight per thread at 124 registers, still two blocks
// of 256 an SM) took the 5 steps of seed 000's run from 0.599 to 0.586 s and its label pass from
// 0.116 to 0.112 s against 2 on an H200 (reports/results/nvidia-h200/ab/explore-kernel.txt).
#define GROUP_UNROLL 4
#define SUBSET_PRAGMA_STR(x) #x
#define SUBSET_PRAGMA(x) _Pragma(SUBSET_PRAGMA_STR(x))
#define UNROLL_GROUPS SUBSET_PRAGMA(unroll GROUP_UNROLL)
