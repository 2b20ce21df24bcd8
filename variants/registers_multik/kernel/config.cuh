// registers-multik, runtime-compiled: the sizes, the centroid table in __constant__ memory and
// the helpers both kernels use. The host (variants/registers_multik/kernel_config.cpp) prepends
// the #defines of one specialisation (NDIM, KMIN, KMAX, SUMK, BLOCK, SMEM_SLOTS, LANE_POINTS, SOA,
// ACCUM_MMA, PLANT_SLOWDOWN, CENTROIDS_SHARED, TIE_SCALE, GENERATED, STAGE_ROWS) and then
// `#include "kernel.cuh"`.
#pragma once

#if !defined(NDIM) || !defined(KMIN) || !defined(KMAX) || !defined(SUMK) || !defined(BLOCK) || \
    !defined(SMEM_SLOTS) || !defined(LANE_POINTS) || !defined(SOA) || !defined(ACCUM_MMA) ||   \
    !defined(PLANT_SLOWDOWN) || !defined(CENTROIDS_SHARED) || !defined(TIE_SCALE) || !defined(GENERATED) || \
    !defined(STAGE_ROWS)
#error "registers-multik's kernel is compiled with the #defines of one specialisation (compile_request)"
#endif

#define FULL_MASK 0xffffffffu
typedef unsigned long long u64;

// Slot offset of K's first centroid: K=KMIN starts at 0.
#define OFFSET(k) (((KMIN) + (k) - 1) * ((k) - (KMIN)) / 2)
#define WORDS ((SUMK + 31) / 32)
#define NTILES ((SUMK + 7) / 8)
#define DCHUNKS ((NDIM + 7) / 8)
// Per slot: ‖c‖² followed by −2c (N values). Then max‖c‖² for the tie bound.
#define CSTRIDE (NDIM + 1)
#define UNROLL_LIMIT 1024
// Large K packs many index bits into the mantissa: take inertia from exact distances.
#define EXACT_INERTIA (KMAX > 8)
// Winner nearer than this fraction of ‖x‖²+2max‖c‖²: exact distance for the inertia term.
#define INERTIA_GUARD 0.02f

__constant__ float c_centroids[SUMK * CSTRIDE + 1];

__device__ __forceinline__ unsigned tf32_bits(float v) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return r;
}

__device__ __forceinline__ void mma_tf32(float& c0, float& c1, float& c2, float& c3, unsigned a0,
                                         unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                         unsigned b1) {
#if __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

__device__ __forceinline__ float load_point(const float* __restrict__ points, long long m, long long i,
                                            int d) {
#if SOA
  return __ldg(points + (long long)d * m + i);
#else
  return __ldg(points + i * NDIM + d);
#endif
}

// STAGE_ROWS: a warp step's rows reach the lanes through shared memory. Straight from global
// memory, each lane's 16-byte loads of its own row touch 32 lines per instruction, and the
// update's second read touches them again: L1 was 96 % busy with DRAM at 37 % (N=32 K=8 10M,
// one H200, ncu at cc8e15d). Staged, the copy reads whole lines, and with a row stride of
// STAGE_STRIDE floats (an odd number of 16-byte units) the lanes' 16-byte reads of their own rows
// fall in distinct banks. The update's 4-byte reads of its TF32 operands still conflict two ways:
// 29 % of the shared wavefronts at N=32 K=8 (profile-registers-multik-N32-K8.txt, ceaa308).
#if STAGE_ROWS
#if SOA || GENERATED || (NDIM % 4 != 0)
#error "STAGE_ROWS stages row-major rows of a multiple of 4 floats"
#endif
#define STAGE_STRIDE (((NDIM / 4) % 2) ? NDIM : NDIM + 4)
#define STAGE_FLOATS (LANE_POINTS * 32 * STAGE_STRIDE)

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_one() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// One warp step's rows (first .. first + 32·LANE_POINTS) into a stage, 16 bytes a lane at a time,
// consecutive lanes on consecutive addresses: chunk c of the step is 16 bytes at 4c floats from its
// first row, and at 4c + (STAGE_STRIDE - NDIM)·(c / (NDIM/4)) in the stage. A step whose rows all
// lie below m (every step but a grid's last) copies with no test and immediate offsets; in the
// last one, rows past m are filled with zeros (src-size 0). The untested copy took a step at N=32
// K=8 M=10M from 0.4546 to 0.4105 ms on an H200 (reports/results/nvidia-h200/ab/registers-multik-stage-fast-path.txt).
__device__ __forceinline__ void stage_step_rows(float* stage_rows, const float* __restrict__ points, long long m,
                                                long long first, int lane) {
  constexpr int kChunksPerRow = NDIM / 4;
  constexpr int kPasses = LANE_POINTS * kChunksPerRow;  // chunks a lane copies (LANE_POINTS·32 rows)
  const float* const step_rows = points + first * NDIM;
  const unsigned stage = (unsigned)__cvta_generic_to_shared(stage_rows);
  if (first + LANE_POINTS * 32 <= m) {
#pragma unroll
    for (int j = 0; j < kPasses; ++j) {
      const int c = lane + 32 * j;
      const unsigned dst = stage + 16u * c + 4u * (STAGE_STRIDE - NDIM) * (c / kChunksPerRow);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(step_rows + 4 * c) : "memory");
    }
  } else {
#pragma unroll
    for (int j = 0; j < kPasses; ++j) {
      const int c = lane + 32 * j;
      const bool inside = first + c / kChunksPerRow < m;
      const unsigned dst = stage + 16u * c + 4u * (STAGE_STRIDE - NDIM) * (c / kChunksPerRow);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(inside ? step_rows + 4 * c : points),
                   "r"(inside ? 16 : 0)
                   : "memory");
    }
  }
}
#endif

// GENERATED: the points are rows of the uniform generator, made here from their counters
// (datasets/counter_rng.hpp: value = 24 bits of mix64(counter) · 2^-24, the counter of entry e
// being the first entry's plus e · the increment), bit for bit the rows generate() makes.
#define COUNTER_INCREMENT 0x9e3779b97f4a7c15ULL
//
// mix64 in 32-bit halves: the value needs bits 40-63 only, which the last xor-shift leaves
// alone and which are the top word of the second product, so that product is three IMADs
// (hi(lo·lo) + the cross terms) instead of a 64-bit one. The same bits as mix64 (checked against
// it for 10^8 consecutive counters); 10.25 against 10.37 ms on one H100 at 0573cfe (N=8 K=3..7
// 256M in 32M chunks).
__device__ __forceinline__ float generated_value(u64 counter) {
  const unsigned c_lo = (unsigned)counter, c_hi = (unsigned)(counter >> 32);
  const unsigned x_lo = c_lo ^ __funnelshift_r(c_lo, c_hi, 30), x_hi = c_hi ^ (c_hi >> 30);  // c ^ c >> 30
  const unsigned z_lo = x_lo * 0x1ce4e5b9u;                                                   // · 0xbf58476d1ce4e5b9
  const unsigned z_hi = __umulhi(x_lo, 0x1ce4e5b9u) + x_lo * 0xbf58476du + x_hi * 0x1ce4e5b9u;
  const unsigned y_lo = z_lo ^ __funnelshift_r(z_lo, z_hi, 27), y_hi = z_hi ^ (z_hi >> 27);  // z ^ z >> 27
  const unsigned top = __umulhi(y_lo, 0x133111ebu) + y_lo * 0x94d049bbu + y_hi * 0x133111ebu;  // · 0x94d049bb133111eb
  return (float)(top >> 8) * 0x1p-24f;
}
// The accumulation's second read of a step's points (the MMA lanes take other points than the
// distance lanes) comes from a per-warp copy in shared memory: rows of an odd stride, so the
// lanes' stores and the MMA lanes' loads fall in different banks.
#define GEN_STRIDE (NDIM | 1)

// Centroid operands: __constant__ (ULDC/LDC into registers) or a shared-memory copy read
// with 16-byte broadcasts; which is faster is a tunable axis (seed 004's question).
#if CENTROIDS_SHARED
#define CEN_NORM(s) s_norms[s]
#define CEN_COORD(s, d) s_coords[(s) * NDIM + (d)]
#else
#define CEN_NORM(s) c_centroids[(s) * CSTRIDE]
#define CEN_COORD(s, d) c_centroids[(s) * CSTRIDE + 1 + (d)]
#endif
// The exact paths index centroids by a per-lane label: divergent __constant__ reads
// serialise, so they read the shared copy when it is small enough to keep, else global.
#define EXACT_FROM_SHARED (SUMK * NDIM <= 4096)  // kExactTableFloats on the host
#if CENTROIDS_SHARED || EXACT_FROM_SHARED
#define NEG2C_DIVERGENT(s, d) s_coords[(s) * NDIM + (d)]
#else
#define NEG2C_DIVERGENT(s, d) __ldg(packed_global + (s) * CSTRIDE + 1 + (d))
#endif
// x − c exactly: the tables hold −2c, and halving is exact.
#define EXACT_DIFF(xd, s, d) fmaf(NEG2C_DIVERGENT(s, d), 0.5f, (xd))
