// registers-multik: the MultiK kernel of seed 000, the core of mkbench.
//
// One fused Lloyd iteration evaluates every K of the range for every point it reads, so a
// point fetched from DRAM feeds 3·ΣK·N operations instead of 3·K·N. Specialisation on N
// and the K range is done the way the seed's code generator did it, but at run time:
// NVRTC compiles a kernel with N, Kmin, Kmax and the accumulation strategy baked in, so
// every register array is indexed by compile-time constants and no (N, K) set has to be
// chosen at build time (which would also blow up CI compile time).
//
// Per point (one lane = one point of a 32-point warp step):
//   distances  d'_c = ‖c‖² − 2·x·c   (‖x‖² is constant per point, so argmin is unchanged)
//              with −2c and ‖c‖² read straight from __constant__ memory as FFMA operands;
//   argmin     the centroid index is packed into the low mantissa bits of d' so one FMNMX
//              tracks value and index; the runner-up is tracked too, and when the two are
//              within the proven rounding bound of the expansion the lane re-decides with
//              exact FP32 Σ(x−c)² — labels stay FP32-faithful at the cost of a rare branch;
//   update     accumulate="mma": the one-hot(labels)ᵀ·X product on tensor cores
//              (mma.m16n8k8 TF32, X split hi+lo so sums keep ~22 bits), accumulators live
//              in MMA fragments = registers; accumulate="registers": the seed's scheme, a
//              compile-time-indexed register array per (slot, dim) updated by select.
//   reduction  registers → shared memory (in passes when ΣK·N does not fit) → one FP64
//              global atomic per block per value → divide on the device. No CPU step.
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/common/nvrtc_module.hpp"
#include "variants/common/packed_argmin.hpp"

namespace mk {
namespace {

// The kernel template. Placeholders are substituted as #defines in front of it.
const char* kMultiKSource = R"MKSRC(
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

// Small per-slot prologue: ‖c‖² and −2c into a scratch buffer that the host copies into
// __constant__ (kernels cannot write constant memory).
extern "C" __global__ void multik_prepare_centroids(const float* __restrict__ centroids,
                                                    float* __restrict__ packed) {
  __shared__ float block_max;
  if (threadIdx.x == 0) block_max = 0.f;
  __syncthreads();
  for (int s = threadIdx.x; s < SUMK; s += blockDim.x) {
    float norm = 0.f;
    for (int d = 0; d < NDIM; ++d) {
      float c = centroids[s * NDIM + d];
      norm = fmaf(c, c, norm);
      packed[s * CSTRIDE + 1 + d] = -2.f * c;
    }
    packed[s * CSTRIDE] = norm;
    atomicMax((int*)&block_max, __float_as_int(norm));  // norms are >= 0: int order == float order
  }
  __syncthreads();
  if (threadIdx.x == 0) packed[SUMK * CSTRIDE] = block_max;
}

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

// keep_mask arrives as a kernel argument on purpose: with it in a register the index is
// packed into the mantissa by one LOP3 ((bits & keep) | c) instead of two.
//
// Each lane takes LANE_POINTS points per warp step (lane, lane+32, ...): every centroid
// operand fetched from constant memory then feeds LANE_POINTS distance chains, which halves
// the uniform-load traffic per point that the SASS of v1-v3 showed (~150 ULDC per step).
extern "C" __global__ void __launch_bounds__(BLOCK) multik_iteration(
    const float* __restrict__ points, long long m, double* __restrict__ sums,
    u64* __restrict__ counts, double* __restrict__ inertia, int* __restrict__ labels,
    unsigned keep_mask, const float* __restrict__ packed_global) {
  extern __shared__ float block_sums[];  // SMEM_SLOTS * NDIM floats
  __shared__ unsigned block_counts[SUMK];
#if CENTROIDS_SHARED || EXACT_FROM_SHARED
  // −2c and ‖c‖² in shared memory: the distance operands when centroids=shared, and the
  // divergent exact paths' table either way.
  __shared__ __align__(16) float s_coords[SUMK * NDIM];
  for (int j = threadIdx.x; j < SUMK * NDIM; j += BLOCK)
    s_coords[j] = c_centroids[(j / NDIM) * CSTRIDE + 1 + (j % NDIM)];
#if CENTROIDS_SHARED
  __shared__ __align__(16) float s_norms[SUMK];
  for (int j = threadIdx.x; j < SUMK; j += BLOCK) s_norms[j] = c_centroids[j * CSTRIDE];
#endif
  __syncthreads();
#endif
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const long long warps_total = (long long)gridDim.x * (BLOCK / 32);
  const long long warp_global = (long long)blockIdx.x * (BLOCK / 32) + (threadIdx.x >> 5);
  const long long step_points = 32LL * LANE_POINTS;
  const long long steps = (m + step_points - 1) / step_points;

  for (int s = threadIdx.x; s < SUMK; s += BLOCK) block_counts[s] = 0u;

#if ACCUM_MMA
  float acc[DCHUNKS][NTILES][4];
#pragma unroll
  for (int q = 0; q < DCHUNKS; ++q)
#pragma unroll
    for (int s = 0; s < NTILES; ++s) acc[q][s][0] = acc[q][s][1] = acc[q][s][2] = acc[q][s][3] = 0.f;
  // Lane (g,t): slot 8s+g over the points t, t+4 it feeds. Counts accumulate the one-hot
  // bit where it sits (weight 2^(8(s&3)), 2^20 for s&3==3), folded every 128 steps so a
  // 32-bit counter cannot overflow (8·LANE_POINTS·128 < 2^12 increments per fold).
#if LANE_POINTS > 3
#error "tile_scaled folds every 128 steps: more than 3 points per lane overflow the 2^20-weighted counter"
#endif
  unsigned tile_counts[NTILES], tile_scaled[NTILES];
#pragma unroll
  for (int s = 0; s < NTILES; ++s) tile_counts[s] = 0u, tile_scaled[s] = 0u;
  int steps_since_count_fold = 0;
#else
  float acc[SUMK][NDIM];
#pragma unroll
  for (int s = 0; s < SUMK; ++s)
#pragma unroll
    for (int d = 0; d < NDIM; ++d) acc[s][d] = 0.f;
  unsigned lane_counts[WORDS];
#pragma unroll
  for (int w = 0; w < WORDS; ++w) lane_counts[w] = 0u;
#endif
  // FP64 per lane: with one block a lane sums 10^5 distances, beyond FP32's 1e-5 budget.
  // FP32 partials are folded into FP64 every 16 steps: 64-bit conversions run at 1/8 rate.
  double lane_inertia[KMAX - KMIN + 1];
  float partial_inertia[KMAX - KMIN + 1];
#pragma unroll
  for (int k = 0; k <= KMAX - KMIN; ++k) lane_inertia[k] = 0.0, partial_inertia[k] = 0.f;
  int steps_since_fold = 0;

  const float max_centroid_norm = c_centroids[SUMK * CSTRIDE];

  for (long long step = warp_global; step < steps; step += warps_total) {
    const long long first = step * step_points;
    const bool full_step = first + step_points <= m;
    float x[LANE_POINTS][NDIM];
    float xx[LANE_POINTS], tie_bound[LANE_POINTS];
    bool valid[LANE_POINTS];
    unsigned one_hot[LANE_POINTS][WORDS];
#pragma unroll
    for (int p = 0; p < LANE_POINTS; ++p) {
      const long long i = first + p * 32 + lane;
      valid[p] = i < m;
#if !SOA && (NDIM % 4 == 0)
      // 16-byte loads: rows are 16-byte aligned when N is a multiple of 4.
#pragma unroll
      for (int d = 0; d < NDIM; d += 4) {
        const float4 v = valid[p] ? __ldg(reinterpret_cast<const float4*>(points + i * NDIM + d))
                                  : make_float4(0.f, 0.f, 0.f, 0.f);
        x[p][d] = v.x; x[p][d + 1] = v.y; x[p][d + 2] = v.z; x[p][d + 3] = v.w;
      }
#else
#pragma unroll
      for (int d = 0; d < NDIM; ++d) x[p][d] = valid[p] ? load_point(points, m, i, d) : 0.f;
#endif
      xx[p] = 0.f;
#pragma unroll
      for (int d = 0; d < NDIM; ++d) xx[p] = fmaf(x[p][d], x[p][d], xx[p]);
      // Forward error bound of the expanded distance (FMA chain of N+1 terms, each at most
      // ‖x‖²+2·max‖c‖² in magnitude) plus the index bits packed into the mantissa; twice it
      // bounds how far two computed distances can be mis-ordered.
      tie_bound[p] = TIE_SCALE * (xx[p] + 2.f * max_centroid_norm);
#pragma unroll
      for (int w = 0; w < WORDS; ++w) one_hot[p][w] = 0u;
    }

#pragma unroll
    for (int k = KMIN; k <= KMAX; ++k) {
      const int base = OFFSET(k);
      const unsigned index_mask = ~keep_mask;  // bits for KMAX indices (the tie bound assumes them)
      float best[LANE_POINTS], second[LANE_POINTS];
#pragma unroll
      for (int p = 0; p < LANE_POINTS; ++p) best[p] = second[p] = __int_as_float(0x7f7fffff);
      // Full unrolling makes every centroid operand a compile-time constant, but NVRTC time
      // grows with ΣK·N; past UNROLL_LIMIT the centroid loop stays a loop.
#if SUMK * NDIM <= UNROLL_LIMIT
#pragma unroll
#else
#pragma unroll 1
#endif
      for (int c = 0; c < k; ++c) {
#pragma unroll
        for (int p = 0; p < LANE_POINTS; ++p) {
          float dist = CEN_NORM(base + c);
#pragma unroll
          for (int d = 0; d < NDIM; ++d) dist = fmaf(x[p][d], CEN_COORD(base + c, d), dist);
#if PLANT_SLOWDOWN
#pragma unroll
          for (int d = 0; d < NDIM; ++d) dist = fmaf(x[p][d], CEN_COORD(base + c, d) * 1e-30f, dist);
#endif
          const float key = __int_as_float((__float_as_int(dist) & keep_mask) | c);
          second[p] = fminf(second[p], fmaxf(best[p], key));
          best[p] = fminf(best[p], key);
        }
      }
#pragma unroll
      for (int p = 0; p < LANE_POINTS; ++p) {
        int label = __float_as_int(best[p]) & index_mask;
        float expanded = best[p];
        if (k > 1 && second[p] - best[p] <= tie_bound[p]) {
          // Near-tie: decide with exact FP32 distances (rare).
          float exact_best = __int_as_float(0x7f7fffff);
          // Not unrolled: unrolling this cold path costs the hot path its registers.
#pragma unroll 1
          for (int c = 0; c < k; ++c) {
            float e = 0.f;
#pragma unroll
            for (int d = 0; d < NDIM; ++d) {
              const float diff = EXACT_DIFF(x[p][d], base + c, d);
              e = fmaf(diff, diff, e);
            }
            if (e < exact_best) {
              exact_best = e;
              label = c;
            }
          }
          expanded = exact_best - xx[p];
        } else if (EXACT_INERTIA || xx[p] + expanded < INERTIA_GUARD * (xx[p] + 2.f * max_centroid_norm)) {
          // The expansion's rounding (and the index bits in the mantissa) is absolute, of
          // order ‖x‖²·2^-20: when the winner is much nearer than that scale, or many index
          // bits are packed (large K), the inertia term is the exact FP32 distance instead.
          float e = 0.f;
#pragma unroll
          for (int d = 0; d < NDIM; ++d) {
            const float diff = EXACT_DIFF(x[p][d], base + label, d);
            e = fmaf(diff, diff, e);
          }
          expanded = e - xx[p];
        }
        if (valid[p]) {
          partial_inertia[k - KMIN] += xx[p] + expanded;
          const int bit = base + label;
#pragma unroll
          for (int w = 0; w < WORDS; ++w)
            if ((bit >> 5) == w) one_hot[p][w] |= 1u << (bit & 31);
          if (labels) labels[(long long)(k - KMIN) * m + first + p * 32 + lane] = label;
#if !ACCUM_MMA
#pragma unroll
          for (int c = 0; c < k; ++c) {
            const bool mine = (label == c);
#pragma unroll
            for (int d = 0; d < NDIM; ++d) acc[base + c][d] += mine ? x[p][d] : 0.f;
          }
#endif
        }
      }
    }

    if (++steps_since_fold == 16) {
      steps_since_fold = 0;
#pragma unroll
      for (int k = 0; k <= KMAX - KMIN; ++k) lane_inertia[k] += (double)partial_inertia[k], partial_inertia[k] = 0.f;
    }
#if !ACCUM_MMA
    // Counts: one ballot per slot; lane (s mod 32) keeps slot s.
#pragma unroll
    for (int p = 0; p < LANE_POINTS; ++p)
#pragma unroll
      for (int s = 0; s < SUMK; ++s) {
        const unsigned votes = __ballot_sync(FULL_MASK, (one_hot[p][s >> 5] >> (s & 31)) & 1u);
        if (lane == (s & 31)) lane_counts[s >> 5] += __popc(votes);
      }
#else
    // Sums on tensor cores: D[16 × 8 slots] += A[16 × 8 points] · B[8 points × 8 slots] with
    // A rows 0-7 = the TF32 part of dims q*8+g, rows 8-15 = the remainder, and B the one-hot
    // labels, exact in TF32. Lane (g,t) feeds points t and t+4 of each 8-point group.
    // The split truncates: hi = v with the low 13 bits cleared, lo = v − hi (exact), so a
    // pair keeps ~21 bits for 2 instructions instead of the 8 that cvt.rna.tf32 costs twice.
#pragma unroll
    for (int p = 0; p < LANE_POINTS; ++p) {
      const long long sub_first = first + p * 32;
      // This lane's first operand: point t of the sub-step's first group, dim g.
      const float* lane_row = points + (sub_first + t) * NDIM + g;
#pragma unroll
      for (int group = 0; group < 4; ++group) {
        const int src0 = group * 8 + t, src1 = src0 + 4;
        unsigned hot0[WORDS], hot1[WORDS];
#pragma unroll
        for (int w = 0; w < WORDS; ++w) {
          hot0[w] = __shfl_sync(FULL_MASK, one_hot[p][w], src0) >> g;
          hot1[w] = __shfl_sync(FULL_MASK, one_hot[p][w], src1) >> g;
        }
        const long long p0 = sub_first + src0, p1 = sub_first + src1;
#pragma unroll
        for (int q = 0; q < DCHUNKS; ++q) {
          const int dim = q * 8 + g;
          float v0, v1;
#if !SOA
          if (full_step && (NDIM % 8 == 0)) {
            v0 = __ldg(lane_row + group * 8 * NDIM + q * 8);
            v1 = __ldg(lane_row + (group * 8 + 4) * NDIM + q * 8);
          } else
#endif
          {
            v0 = (dim < NDIM && p0 < m) ? load_point(points, m, p0, dim) : 0.f;
            v1 = (dim < NDIM && p1 < m) ? load_point(points, m, p1, dim) : 0.f;
          }
          // hi is masked explicitly: how many bits an MMA reads from a raw float is not
          // specified, and hi + lo must add up to v exactly.
          const unsigned hi0 = __float_as_uint(v0) & 0xffffe000u, hi1 = __float_as_uint(v1) & 0xffffe000u;
          const unsigned lo0 = __float_as_uint(v0 - __uint_as_float(hi0));
          const unsigned lo1 = __float_as_uint(v1 - __uint_as_float(hi1));
#pragma unroll
          for (int s = 0; s < NTILES; ++s) {
            const int word = s >> 2, j = s & 3;
            unsigned b0, b1;
            if (j < 3) {
              // 0x3f800000 (1.0f) = 0x3f8 << 20 is divisible by 2^0, 2^8 and 2^16.
              const unsigned m0 = hot0[word] & (1u << (8 * j));
              const unsigned m1 = hot1[word] & (1u << (8 * j));
              if (q == 0) tile_scaled[s] += m0 + m1;
              b0 = m0 * (0x3f800000u >> (8 * j));
              b1 = m1 * (0x3f800000u >> (8 * j));
            } else {
              const unsigned m0 = (hot0[word] >> 4) & (1u << 20);
              const unsigned m1 = (hot1[word] >> 4) & (1u << 20);
              if (q == 0) tile_scaled[s] += m0 + m1;
              b0 = m0 * 0x3f8u;
              b1 = m1 * 0x3f8u;
            }
            mma_tf32(acc[q][s][0], acc[q][s][1], acc[q][s][2], acc[q][s][3], hi0, lo0, hi1, lo1, b0, b1);
          }
        }
      }
    }
    if (++steps_since_count_fold == 128) {
      steps_since_count_fold = 0;
#pragma unroll
      for (int s = 0; s < NTILES; ++s) {
        tile_counts[s] += tile_scaled[s] >> ((s & 3) == 3 ? 20 : 8 * (s & 3));
        tile_scaled[s] = 0u;
      }
    }
#endif
  }

  // Inertia: warp shuffle reduction in FP64, one global atomic per warp and K.
#pragma unroll
  for (int k = 0; k <= KMAX - KMIN; ++k) {
    double v = lane_inertia[k] + (double)partial_inertia[k];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(FULL_MASK, v, off);
    if (lane == 0) atomicAdd(inertia + k, v);
  }
  __syncthreads();  // block_counts zeroed before anyone adds
#if ACCUM_MMA
#pragma unroll
  for (int s = 0; s < NTILES; ++s) {
    unsigned c = tile_counts[s] + (tile_scaled[s] >> ((s & 3) == 3 ? 20 : 8 * (s & 3)));
    c += __shfl_xor_sync(FULL_MASK, c, 1);
    c += __shfl_xor_sync(FULL_MASK, c, 2);
    const int slot = s * 8 + g;
    if (t == 0 && slot < SUMK && c) atomicAdd(&block_counts[slot], c);
  }
#else
#pragma unroll
  for (int w = 0; w < WORDS; ++w) {
    const int s = w * 32 + lane;
    if (s < SUMK && lane_counts[w]) atomicAdd(&block_counts[s], lane_counts[w]);
  }
#endif

  // Sums: registers → shared memory, SMEM_SLOTS slots per pass → FP64 global atomics.
  for (int pass_begin = 0; pass_begin < SUMK; pass_begin += SMEM_SLOTS) {
    for (int j = threadIdx.x; j < SMEM_SLOTS * NDIM; j += BLOCK) block_sums[j] = 0.f;
    __syncthreads();
#if ACCUM_MMA
#pragma unroll
    for (int q = 0; q < DCHUNKS; ++q) {
      const int dim = q * 8 + g;
#pragma unroll
      for (int s = 0; s < NTILES; ++s) {
        const int slot0 = s * 8 + 2 * t, slot1 = slot0 + 1;
        if (dim < NDIM) {
          if (slot0 < SUMK && slot0 >= pass_begin && slot0 < pass_begin + SMEM_SLOTS)
            atomicAdd(&block_sums[(slot0 - pass_begin) * NDIM + dim], acc[q][s][0] + acc[q][s][2]);
          if (slot1 < SUMK && slot1 >= pass_begin && slot1 < pass_begin + SMEM_SLOTS)
            atomicAdd(&block_sums[(slot1 - pass_begin) * NDIM + dim], acc[q][s][1] + acc[q][s][3]);
        }
      }
    }
#else
#pragma unroll
    for (int s = 0; s < SUMK; ++s)
      if (s >= pass_begin && s < pass_begin + SMEM_SLOTS)
#pragma unroll
        for (int d = 0; d < NDIM; ++d)
          if (acc[s][d] != 0.f) atomicAdd(&block_sums[(s - pass_begin) * NDIM + d], acc[s][d]);
#endif
    __syncthreads();
    const int pass_slots = min(SMEM_SLOTS, SUMK - pass_begin);
    for (int j = threadIdx.x; j < pass_slots * NDIM; j += BLOCK)
      if (block_sums[j] != 0.f) atomicAdd(sums + (long long)pass_begin * NDIM + j, (double)block_sums[j]);
    __syncthreads();
  }
  for (int s = threadIdx.x; s < SUMK; s += BLOCK)
    if (block_counts[s]) atomicAdd(counts + s, (u64)block_counts[s]);
}
)MKSRC";

struct KernelConfig {
  int n, kmin, kmax, block, smem_slots, lane_points;
  bool soa, mma, plant_slowdown, centroids_shared;
  int cc_major, cc_minor;
  bool operator<(const KernelConfig& o) const {
    return std::tie(n, kmin, kmax, block, smem_slots, lane_points, soa, mma, plant_slowdown, centroids_shared,
                    cc_major, cc_minor) < std::tie(o.n, o.kmin, o.kmax, o.block, o.smem_slots, o.lane_points, o.soa,
                                                   o.mma, o.plant_slowdown, o.centroids_shared, o.cc_major,
                                                   o.cc_minor);
  }
};

// Loaded through the runtime's library API (CUDA 12+), not the driver API, so the binary
// does not need libcuda.so on machines without a GPU.
struct CompiledKernel {
  cudaLibrary_t library = nullptr;
  cudaKernel_t iteration = nullptr;
  cudaKernel_t prepare = nullptr;
  void* constant_centroids = nullptr;
  size_t constant_bytes = 0;
};

// Index bits packed into the mantissa widen the tie bound: 2^(bits-23) relative.
double tie_scale(int n, int kmax) {
  const int bits = packed_index_bits(kmax);
  const double u = std::ldexp(1.0, -24);
  return 2.0 * ((2.0 * n + 4.0) * u + std::ldexp(1.0, bits - 23));
}

// Runtime compilation, cached per process: a suite sweeping grid sizes compiles once.
const CompiledKernel& compiled_kernel(const KernelConfig& config) {
  static std::mutex mutex;
  static std::map<KernelConfig, CompiledKernel> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache.find(config);
  if (found != cache.end()) return found->second;

  std::ostringstream defines;
  const int sum_k = (config.kmin + config.kmax) * (config.kmax - config.kmin + 1) / 2;
  defines << "#define NDIM " << config.n << "\n#define KMIN " << config.kmin << "\n#define KMAX " << config.kmax
          << "\n#define SUMK " << sum_k << "\n#define BLOCK " << config.block << "\n#define SMEM_SLOTS "
          << config.smem_slots << "\n#define LANE_POINTS " << config.lane_points << "\n#define SOA " << (config.soa ? 1 : 0) << "\n#define ACCUM_MMA "
          << (config.mma ? 1 : 0) << "\n#define PLANT_SLOWDOWN " << (config.plant_slowdown ? 1 : 0)
          << "\n#define CENTROIDS_SHARED " << (config.centroids_shared ? 1 : 0) << "\n#define TIE_SCALE " << std::scientific << tie_scale(config.n, config.kmax) << "f\n";
  gpu::RuntimeCompileRequest request{defines.str() + kMultiKSource, "registers_multik.cu", config.cc_major, config.cc_minor};
  request.description = "N=" + std::to_string(config.n) + " K=" + std::to_string(config.kmin) + ".." +
                        std::to_string(config.kmax);
  // For SASS inspection (cuobjdump -sass): MKBENCH_DUMP_CUBIN=/path/prefix.
  request.dump_tag = "n" + std::to_string(config.n) + "-k" + std::to_string(config.kmin) + "-" +
                     std::to_string(config.kmax) + (config.mma ? "-mma" : "-reg") + "-l" +
                     std::to_string(config.lane_points) + (config.soa ? "-soa" : "-aos") +
                     (config.centroids_shared ? "-shared" : "-const");
  CompiledKernel kernel;
  kernel.library = gpu::compile_and_load(request);
  gpu::check(cudaLibraryGetKernel(&kernel.iteration, kernel.library, "multik_iteration"), "multik_iteration");
  gpu::check(cudaLibraryGetKernel(&kernel.prepare, kernel.library, "multik_prepare_centroids"), "prepare");
  gpu::check(cudaLibraryGetGlobal(&kernel.constant_centroids, &kernel.constant_bytes, kernel.library, "c_centroids"),
             "c_centroids");
  return cache.emplace(config, kernel).first->second;
}

// Limits that keep every per-thread array in registers.
constexpr int kMaxSlotsMma = 256;
constexpr int kMaxRegisterValues = 256;  // ΣK·N for accumulate=registers (the seed's regime)
constexpr int kConstantFloats = 16384;   // 64 KB of __constant__
constexpr int kMaxAccumulatorRegisters = 128;
constexpr int kExactTableFloats = 4096;   // EXACT_FROM_SHARED in the kernel source

int accumulator_registers(const Problem& problem) {
  return ((problem.n + 7) / 8) * ((problem.k.sum() + 7) / 8) * 4;
}

class RegistersMultiKRun : public gpu::GpuRun {
 public:
  RegistersMultiKRun(const Problem& problem, const Dataset& data, const Params& params, const DeviceInfo& device)
      : GpuRun(problem, data, parse_layout(params.at("layout").get<std::string>())) {
    block_ = params.at("block").get<int>();
    const int64_t ppt = params.at("ppt").get<int64_t>();
    const int64_t grid = params.at("grid").get<int64_t>();
    if (grid > 0) grid_ = grid;
    else if (ppt > 0) grid_ = std::max<int64_t>(1, (problem.m + block_ * ppt - 1) / (block_ * ppt));
    const int sum_k = problem.k.sum();
    const int64_t smem_budget = std::min<int64_t>(device.smem_per_block_optin > 0 ? device.smem_per_block_optin : 49152,
                                                  96 * 1024);
    const bool centroids_shared = params.at("centroids").get<std::string>() == "shared";
    // Static shared memory of the kernel: block counts, plus −2c (and ‖c‖²) when the
    // distance loop or the exact paths read them from there (EXACT_FROM_SHARED).
    const int64_t table_floats = int64_t(sum_k) * problem.n;
    const int64_t static_smem = sum_k * 4 + ((centroids_shared || table_floats <= kExactTableFloats) ? table_floats * 4 : 0) +
                                (centroids_shared ? sum_k * 4 : 0) + 64;
    smem_slots_ = int(std::min<int64_t>(sum_k, (smem_budget - static_smem) / (problem.n * 4)));
    if (smem_slots_ < 1) throw UnsupportedError("registers-multik: one centroid row does not fit in shared memory");
    KernelConfig config{problem.n,
                        problem.k.kmin,
                        problem.k.kmax,
                        block_,
                        smem_slots_,
                        params.at("lane_points").get<int>(),
                        state_.layout() == Layout::SoA, params.at("accumulate").get<std::string>() == "mma",
#ifdef MKBENCH_PLANT_SLOWDOWN
                        true,
#else
                        false,
#endif
                        centroids_shared,
                        device.cc_major,
                        device.cc_minor};
    kernel_ = &compiled_kernel(config);
    keep_mask_ = packed_keep_mask(problem.k.kmax);
    dynamic_smem_ = size_t(smem_slots_) * problem.n * sizeof(float);
    if (dynamic_smem_ > 48 * 1024)
      gpu::check(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel_->iteration),
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, int(dynamic_smem_)),
                 "shared memory limit");
    if (grid == 0 && ppt == 0) {
      // Persistent grid: exactly the blocks that are resident at once on every SM, so no
      // partial second wave idles SMs (seed 000 §5.1's "multiple of the SM count").
      int resident = 0;
      gpu::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                     &resident, reinterpret_cast<const void*>(kernel_->iteration), block_, dynamic_smem_),
                 "occupancy query");
      const int64_t lane_points = params.at("lane_points").get<int64_t>();
      const int64_t steps = (problem.m + 32 * lane_points - 1) / (32 * lane_points);
      grid_ = std::max<int64_t>(1, std::min<int64_t>(int64_t(std::max(1, resident)) * std::max(1, device.sm_count),
                                                     (steps + block_ / 32 - 1) / (block_ / 32)));
    }
    packed_.allocate(size_t(sum_k) * (problem.n + 1) + 1, "packed centroids");
  }

  void iterate(bool store_labels) override {
    state_.zero_accumulators();
    cudaStream_t stream = state_.stream();
    const float* centroids = state_.centroids();
    float* packed = packed_.get();
    void* prepare_args[] = {&centroids, &packed};
    gpu::check(cudaLaunchKernel(reinterpret_cast<const void*>(kernel_->prepare), dim3(1), dim3(256), prepare_args, 0,
                                stream),
               "multik_prepare_centroids");
    gpu::check(cudaMemcpyAsync(kernel_->constant_centroids, packed, packed_.bytes(), cudaMemcpyDeviceToDevice, stream),
               "centroids to constant memory");
    auto acc = state_.accumulators(store_labels);
    const float* points = state_.points().data;
    long long m = state_.problem().m;
    const float* packed_global = packed;
    void* args[] = {&points, &m, &acc.sums, &acc.counts, &acc.inertia, &acc.labels, &keep_mask_, &packed_global};
    gpu::check(cudaLaunchKernel(reinterpret_cast<const void*>(kernel_->iteration), dim3(unsigned(grid_)),
                                dim3(unsigned(block_)), args, dynamic_smem_, stream),
               "multik_iteration");
    state_.finalize();
  }

 private:
  int block_ = 256;
  int64_t grid_ = 1;
  unsigned keep_mask_ = ~0u;
  int smem_slots_ = 0;
  size_t dynamic_smem_ = 0;
  const CompiledKernel* kernel_ = nullptr;
  gpu::DeviceBuffer<float> packed_;
};

class RegistersMultiK : public Variant {
 public:
  std::string name() const override { return "registers-multik"; }
  std::string description() const override {
    return "seed 000 MultiK: all K of the range per point read, register accumulation, NVRTC-specialised";
  }
  bool runs_on_gpu() const override { return true; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    const int sum_k = problem.k.sum();
    if (problem.k.kmax > 256) return "K above 256 per range end: use gemm-cublas or gemm-tf32x3";
    if (sum_k > kMaxSlotsMma) return "ΣK=" + std::to_string(sum_k) + " exceeds 256 register-resident centroid slots";
    if (sum_k * (problem.n + 1) + 1 > kConstantFloats)
      return "ΣK·(N+1)=" + std::to_string(sum_k * (problem.n + 1)) + " floats exceed 64 KB of constant memory";
    if (problem.n > 128) return "N above 128 would not keep a point in registers";
    if (accumulate_options(problem, device).empty())
      return "accumulators do not fit in registers: mma needs ceil(N/8)·ceil(ΣK/8)·4 = " +
             std::to_string(accumulator_registers(problem)) + " > " + std::to_string(kMaxAccumulatorRegisters) +
             (device.cc_major < 8 ? " (and needs CC >= 8.0)" : "") + ", registers needs ΣK·N = " +
             std::to_string(problem.k.sum() * problem.n) + " > " + std::to_string(kMaxRegisterValues) +
             "; use gemm-cublas, gemm-tf32x3 or shared-atomics";
    return gpu::check_fits_in_memory(problem, device);
  }

  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    ParamSpace space;
    const int sms = std::max(1, device.sm_count);
    std::vector<nlohmann::json> grids{0};
    for (double factor : {1.0, 1.275, 2.0, 2.5, 3.0, 3.75, 4.0, 5.0, 7.5, 8.0, 10.0, 16.0, 32.0, 80.0, 300.0})
      grids.push_back(int64_t(std::llround(factor * sms)));
    grids.push_back(1);
    space.axes.push_back({"grid", grids, "blocks; 0 = derive from ppt"});
    space.axes.push_back({"ppt", {0, 1, 4, 16, 64, 128, 256, 512, 1024, 4096}, "points per thread; 0 = derive from grid"});
    space.axes.push_back({"block", {128, 256, 512}, "threads per block (seed: 256)"});
    space.axes.push_back({"layout", {"aos", "soa"}, "point layout in device memory"});
    std::vector<nlohmann::json> accumulate;
    for (const auto& option : accumulate_options(problem, device)) accumulate.push_back(option);
    space.axes.push_back({"accumulate", accumulate, "mma = tensor-core one-hot product; registers = seed's select"});
    space.axes.push_back({"centroids", {"constant", "shared"}, "where the distance loop reads centroids from"});
    space.axes.push_back({"lane_points", {1, 2}, "points per lane per warp step: each centroid operand load feeds this many distance chains"});
    space.restrictions.push_back(
        {"at most one of grid and ppt is set (the other is derived; both 0 = resident-blocks persistent grid)",
         [](const Params& p) { return !(p.at("grid").get<int64_t>() > 0 && p.at("ppt").get<int64_t>() > 0); }});
    const int64_t m = problem.m;
    space.restrictions.push_back({"no idle blocks: grid*block/32 warps <= warp steps of 32*lane_points points", [m](const Params& p) {
                                    const int64_t grid = p.at("grid").get<int64_t>();
                                    const int64_t block = p.at("block").get<int64_t>();
                                    const int64_t step = 32 * p.at("lane_points").get<int64_t>();
                                    return grid == 0 || (grid - 1) * block < ((m + step - 1) / step) * 32;
                                  }});
    space.restrictions.push_back({"ppt*block <= M rounded up (a full block of work), ppt >= lane_points", [m](const Params& p) {
                                    const int64_t ppt = p.at("ppt").get<int64_t>();
                                    if (ppt > 0 && ppt < p.at("lane_points").get<int64_t>()) return false;  // idle lanes
                                    return ppt == 0 || ppt == 1 || ppt * p.at("block").get<int64_t>() <= m + 32 * ppt;
                                  }});
    return space;
  }

  // lane_points: two points per lane share each centroid operand load, but cost registers
  // (occupancy). On the H200 (v4, reports/NOTES-perf.md) two won where the centroid table
  // is small (ΣK·N = 48: 0.714 vs 0.755 ms; 128: 0.192 vs 0.204 ms) and lost at ΣK·N = 200
  // (1.245 vs 1.206 ms) and 400 (1.99 vs 1.80 ms).
  // Heuristic without a tuned config: a persistent grid of exactly the resident blocks
  // (grid=0, ppt=0: computed from the compiled kernel's occupancy at prepare time), which
  // is a multiple of the SM count as seed 000 §5.1 recommends, with block 256 as the seed.
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    const auto options = accumulate_options(problem, device);
    return {{"grid", 0},         {"ppt", 0},
            {"block", 256},       {"layout", "aos"},
            {"accumulate", options.empty() ? "mma" : options.front()},
            {"centroids", "constant"}, {"lane_points", problem.k.sum() * problem.n <= 128 ? 2 : 1}};
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    return std::make_unique<RegistersMultiKRun>(problem, data, params, device);
  }

 private:
  static std::vector<std::string> accumulate_options(const Problem& problem, const DeviceInfo& device) {
    std::vector<std::string> options;
    if ((device.cc_major >= 8 || !device.is_gpu) && accumulator_registers(problem) <= kMaxAccumulatorRegisters)
      options.push_back("mma");
    if (problem.k.sum() * problem.n <= kMaxRegisterValues) options.push_back("registers");
    return options;
  }
};

MKBENCH_REGISTER_VARIANT(RegistersMultiK);

}  // namespace
}  // namespace mk
