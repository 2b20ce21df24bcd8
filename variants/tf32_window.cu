// tf32-window: one large K (hundreds to a few thousand centroids) at N <= 64, where the
// distance product dominates and gemm-tf32x3's three MMAs per product and shared-memory
// point staging cost ~8x the goal (issue 4's N=32, K=1024 case).
//
// Why this shape of kernel (measurements: docs/tf32-window.md):
// - One FP16 tensor-core product per key, not three. It errs by ~2^-10 of |x||c|, so every
//   centroid inside the forward-error window (near_tie_bound.hpp) is arbitrated in exact
//   FP32, and labels stay FP32-faithful. The window scales with |x||c|, so points and
//   centroids are translated by the data mean first: distances do not change, |x||c|
//   shrinks (4x for uniform [0,1) data), and with it the share of points that need an exact
//   distance.
// - Two sweeps of FP16 MMAs find the window's keys: a plain minimum, then the in-window keys
//   counted and identified on the FMA pipe (described at the FP16 sweep below). One TF32
//   sweep keeping three packed keys per lane was ALU-bound and lost at N=32 (K=1024 1.57
//   against 1.31 ms, K=256 0.678 against 0.626 on the H200, commit c9262e3); the counts as
//   MMAs issued 17 % fewer instructions but waited longer (K=1024 1.373 against 1.335 ms,
//   commit df8049a).
// - The whole centroid table lives in shared memory in MMA-fragment order, so a lane reads
//   its B fragments of an n-tile with one or two conflict-free LDS.128, reused by both 16-row
//   tiles of a warp; the point fragments stay in registers for the whole centroid sweep (no
//   point staging).
// - A point whose window holds only its winner is settled by the keys (~86 % at K=1024). The
//   others' in-window keys go on a per-warp work list that the lanes clear in one round; only
//   where a lane may hold more candidates than it reported (~0.2 %) does the warp scan its
//   columns exactly.
// - The update adds each point to FP64 global sums (one coalesced RED per point and 32
//   dimensions); the same loads give the exact squared differences for the inertia, which
//   each lane sums over the step's points. Counts go through shared memory; finalize()
//   divides.
//
// Needs sm_80+ (FP16 mma.sync with FP32 accumulation); the kernel body is compiled out below that.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "variants/variant.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/common/near_tie_bound.hpp"

namespace mk {
namespace {

constexpr int kMaxDims = 64;
// Below this the FP64 atomic update serialises on K·N addresses: on the H200, N=8 M=8M took
// 5.0 ms at K=32 and 2.6 ms at K=64 against 0.34 and 0.64 ms for auto's choice; from K=128
// (2.1 against 2.9 ms) and at N=32 from K=64 (0.90 against 1.75 ms) this variant was faster.
constexpr int kMinK = 64;
// The in-window count decodes a lane's key indices from FP32 sums weighted by W = 2^bits
// (bits = index_bits(kpad)); 13 bits keep Σi² of two keys exact.
constexpr int kMaxIndexBits = 13;
constexpr int kPadCentroids = 32;  // whole n-tiles of 8, four per lane quad

int64_t padded_centroids(int k) { return (int64_t(k) + kPadCentroids - 1) / kPadCentroids * kPadCentroids; }
int index_bits(int64_t kpad) {
  int bits = 0;
  while ((int64_t(1) << bits) < kpad) ++bits;
  return bits;
}

// Per warp: 32 labels, 32 scan masks, 32 ambiguity flags, a work list of up to 8 in-window
// keys for each of 32 rows, and 32 packed exact minima.
constexpr int kWarpScratchWords = 32 + 32 + 32 + 256 + 64;
int64_t smem_limit(const DeviceInfo& device) {
  return device.smem_per_block_optin > 0 ? device.smem_per_block_optin : 48 * 1024;
}

struct WindowArgs {
  const float* points;     // m × n, AoS
  const float* centroids;  // k × n, exact (the state's packed centroids)
  const void* image;       // kpad × 16·f16_steps halves −2·fp16((c − μ)·scale), fragment order
  const float* norms;      // kpad: ‖(c − μ)·scale‖², 1e30 for padding
  const float* center;     // μ, n floats
  int64_t m;
  int n, k, kpad;
  double* sums;
  unsigned long long* counts;
  double* inertia;
  int32_t* labels;
  unsigned long long* stats;  // null, or {rows, rows with several candidates, rows needing a column scan}
  unsigned long long* next_step;  // zero at launch; warps take 32-point steps from it
  int f16_steps;              // m16n8k16 steps of 16 dims
  const float* f16_scalars;   // {scale, largest scaled ‖c‖²}, written by build_f16_window_image
  gemm::Fp16KeyModel f16_model;
  float count_weight;         // W, a power of two ≥ 4·L (L = kpad/4 keys of one lane and row)
};

// Device helpers exist only where the kernel body does (sm_80+), and for the host pass.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
// ‖x − c‖² in FP32 from the untranslated inputs: the arbiter of every candidate. The loads
// are unrolled over the padded width so one L2 round trip serves the whole row.
template <int NPAD>
__device__ __forceinline__ float exact_distance(const float* __restrict__ x, const float* __restrict__ c, int n) {
  float acc = 0.f;
  if ((n & 3) == 0) {
    float4 xv[NPAD / 4], cv[NPAD / 4];
#pragma unroll
    for (int q = 0; q < NPAD / 4; ++q) {
      const bool inside = 4 * q < n;
      xv[q] = inside ? __ldg(reinterpret_cast<const float4*>(x) + q) : make_float4(0.f, 0.f, 0.f, 0.f);
      cv[q] = inside ? __ldg(reinterpret_cast<const float4*>(c) + q) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int q = 0; q < NPAD / 4; ++q) {
      const float e0 = xv[q].x - cv[q].x, e1 = xv[q].y - cv[q].y, e2 = xv[q].z - cv[q].z, e3 = xv[q].w - cv[q].w;
      acc = fmaf(e0, e0, acc);
      acc = fmaf(e1, e1, acc);
      acc = fmaf(e2, e2, acc);
      acc = fmaf(e3, e3, acc);
    }
  } else {
    for (int d = 0; d < n; ++d) {
      const float e = __ldg(x + d) - __ldg(c + d);
      acc = fmaf(e, e, acc);
    }
  }
  return acc;
}

// (distance, index) as one ordered 64-bit word: distances are ≥ 0, so their bits order
// like the floats, and equal distances fall to the lower index.
__device__ __forceinline__ unsigned long long pack_exact(float d2, int j) {
  return (static_cast<unsigned long long>(__float_as_uint(d2)) << 32) | static_cast<unsigned>(j);
}

#endif

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
// Per warp: 32 labels, 32 scan masks, 32 ambiguity flags, a work list of up to 8 in-window
// keys for each of 32 rows, and 32 packed exact minima.
struct WarpScratch {
  int* label;               // the sweep's label, replaced by the exact one where ambiguous
  unsigned* scan;           // quad lanes whose columns to scan
  int* ambiguous;           // row needs exact arbitration
  int* work;                // (row << 16) | centroid, ≤ 256
  unsigned long long* exact;  // per row: the smallest pack_exact(distance, index)
};

__device__ __forceinline__ WarpScratch warp_scratch(int* scratch_base, int warp) {
  int* base = scratch_base + warp * kWarpScratchWords;
  return {base, reinterpret_cast<unsigned*>(base + 32), base + 64, base + 96,
          reinterpret_cast<unsigned long long*>(base + 352)};  // 8-byte aligned
}

// Row r = 0..3 of lane group g within a step: m-tile r/2, row g (+8 for odd r), as the
// MMA's A and D fragments hold them.
__device__ __forceinline__ int row_in_step(int r, int g) { return (r >> 1) * 16 + (r & 1) * 8 + g; }

__device__ __forceinline__ void prefetch_to_l2(const void* address) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(address));
}

// Steps are handed out by a counter: how many exact scans a step needs varies, and a static
// split left warps idle at the final barrier. Kernels ask for the next step as a step
// begins and read the answer only once its sweep is done: lane 0 holds the atomic's ticket
// until then, so its round trip hides behind the sweep.
// (PTX, not atomicAdd: the compiler turns a one-lane atomicAdd into a warp-aggregated one
// whose result shuffle waits for the round trip on the spot.)
__device__ __forceinline__ unsigned long long request_step(const WindowArgs& a, int lane) {
  unsigned long long ticket = 0;
  if (lane == 0) asm volatile("atom.global.add.u64 %0, [%1], 1;" : "=l"(ticket) : "l"(a.next_step));
  return ticket;
}
__device__ __forceinline__ int64_t granted_step(unsigned long long ticket) {
  return static_cast<int64_t>(__shfl_sync(0xffffffffu, ticket, 0));
}

// A block's last act: the warps' inertia and the shared counts to global memory.
__device__ __forceinline__ void flush_block_totals(const WindowArgs& a, double inertia, const unsigned* counts_s) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) inertia += __shfl_xor_sync(0xffffffffu, inertia, offset);
  if ((threadIdx.x & 31) == 0 && inertia != 0.0) atomicAdd(a.inertia, inertia);
  __syncthreads();
  for (int i = threadIdx.x; i < a.k; i += blockDim.x)
    if (counts_s[i]) atomicAdd(&a.counts[i], static_cast<unsigned long long>(counts_s[i]));
}

// Dimension d of the step's 32 points (0 past the data), one coalesced load per point. A
// whole step addresses them with 32-bit offsets from one pointer and no per-point predicate
// (the general form cost ~12 instructions per load).
__device__ __forceinline__ void load_step_dimension(const WindowArgs& a, int64_t base, int rows, int d,
                                                    float (&values)[32]) {
  if (rows == 32 && d < a.n) {
    const float* column = a.points + base * a.n + d;
#pragma unroll
    for (int row = 0; row < 32; ++row) values[row] = __ldg(column + row * a.n);
  } else {
#pragma unroll
    for (int row = 0; row < 32; ++row)
      values[row] = row < rows && d < a.n ? __ldg(a.points + (base + row) * a.n + d) : 0.f;
  }
}

// What both sweeps share once every row has its label or its candidates: exact distances
// for the work list, column scans where a lane may hide more candidates than it reported,
// then the labels and the counts.
template <int NPAD>
__device__ __forceinline__ void settle_labels(const WindowArgs& a, const WarpScratch& s, int listed, int64_t base,
                                              int rows, int ntiles, unsigned* counts_s) {
  const int lane = threadIdx.x & 31;
  __syncwarp();

  // The work list in one round: each lane takes an (row, centroid) item and keeps the
  // row's smallest (distance, index) with a shared-memory atomicMin.
  for (int item = lane; item < listed; item += 32) {
    const int row = s.work[item] >> 16, j = s.work[item] & 0xffff;
    const float d2 = exact_distance<NPAD>(a.points + (base + row) * a.n, a.centroids + int64_t(j) * a.n, a.n);
    atomicMin(&s.exact[row], pack_exact(d2, j));
  }
  // Columns of lanes that may hold more in-window keys than they reported (rare): the warp
  // splits them.
  unsigned scans = __ballot_sync(0xffffffffu, lane < rows && s.scan[lane] != 0);
  while (scans) {
    const int row = __ffs(scans) - 1;
    scans &= scans - 1;
    const float* x = a.points + (base + row) * a.n;
    const unsigned columns = s.scan[row];
    unsigned long long best = ~0ull;
    for (int col = 0; col < 4; ++col) {
      if (!((columns >> col) & 1u)) continue;
      for (int i = lane; i < 2 * ntiles; i += 32) {
        const int j = (i >> 1) * 8 + 2 * col + (i & 1);
        if (j < a.k)
          best = min(best, pack_exact(exact_distance<NPAD>(x, a.centroids + int64_t(j) * a.n, a.n), j));
      }
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) best = min(best, __shfl_xor_sync(0xffffffffu, best, offset));
    if (lane == 0) atomicMin(&s.exact[row], best);
  }
  __syncwarp();
  if (lane < rows && s.ambiguous[lane]) s.label[lane] = int(s.exact[lane] & 0xffffffffu);
  __syncwarp();

  if (lane < rows) {
    const int label = s.label[lane];
    atomicAdd(&counts_s[label], 1u);
    if (a.labels) a.labels[base + lane] = label;
  }
}

// The FP64 update (lane d adds dimension d of every point: one coalesced RED per point) and
// the step's exact inertia, from values loaded before the arbitration. The inertia is a
// total, so lane d sums (x_d − c_d)² over the step's points: an FP32 sum of 32 squares, as a
// point's distance over 32 dims would be, without a transpose to bring each point's terms
// together.
__device__ __forceinline__ void update_and_inertia(const WindowArgs& a, const WarpScratch& s, int64_t base, int rows,
                                                   float (&update_values)[32], double& inertia) {
  const int lane = threadIdx.x & 31;
  for (int d0 = 0; d0 < a.n; d0 += 32) {
    const int d = d0 + lane;
    if (d0 > 0) load_step_dimension(a, base, rows, d, update_values);
    float squares = 0.f;
    // Sixteen points at a time: their centroid loads share one round trip.
    if (rows == 32 && d < a.n) {
      // A whole step: 32-bit element offsets (K·N < 2^31) and no per-point branches.
#pragma unroll
      for (int group = 0; group < 32; group += 16) {
        int offset[16];
        float centroid_values[16];
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          offset[i] = s.label[group + i] * a.n + d;
          centroid_values[i] = __ldg(a.centroids + offset[i]);
        }
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          const float e = update_values[group + i] - centroid_values[i];
          squares = fmaf(e, e, squares);
          atomicAdd(a.sums + offset[i], double(update_values[group + i]));
        }
      }
    } else {
#pragma unroll
      for (int group = 0; group < 32; group += 16) {
        float centroid_values[16];
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          const int row = group + i;
          centroid_values[i] =
              row < rows && d < a.n ? __ldg(a.centroids + int64_t(s.label[row]) * a.n + d) : 0.f;
        }
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          const int row = group + i;
          const float e = update_values[row] - centroid_values[i];
          squares = fmaf(e, e, squares);
          if (row < rows && d < a.n) atomicAdd(&a.sums[int64_t(s.label[row]) * a.n + d], double(update_values[row]));
        }
      }
    }
    inertia += double(squares);
  }
  __syncwarp();
}

template <int NPAD>
__device__ __forceinline__ void settle_and_update(const WindowArgs& a, const WarpScratch& s, int listed, int64_t base,
                                                  int rows, int ntiles, unsigned* counts_s,
                                                  float (&update_values)[32], double& inertia) {
  settle_labels<NPAD>(a, s, listed, base, rows, ntiles, counts_s);
  update_and_inertia(a, s, base, rows, update_values, inertia);
}

#endif

// --- the FP16 two-pass sweep -------------------------------------------------------------
// Keeping a lane's three smallest packed keys costs six ALU-pipe instructions per key, and
// the ALU pipe bound a one-pass TF32 sweep. This sweep runs the MMAs twice instead (FP16
// m16n8k16, one MMA per 16 dims, so two passes issue as many MMAs as one TF32 pass):
// - pass A keeps each row's plain smallest key: one FMNMX per key;
// - from it and the window, a threshold T per row; pass B recomputes the same keys and,
//   on the FMA pipe, turns each into r = [key < T] with one saturated FFMA, then adds
//   r·(W + i) and r·i² (i the key's index among the lane's columns, W a power of two ≥ 4·that
//   count). floor(S1/W) counts the lane's in-window keys, and one or two of them are decoded
//   exactly from S1 − count·W = Σi and S2 = Σi². A lane with three or more is scanned.
// FP16 holds TF32's 11-bit significand, so the window (gemm::fp16_key_window) is the TF32
// one plus a subnormal term; inputs are translated by μ and scaled by a power of two so
// every |value| < 2^14 (and −2c < 2^15) stays finite.
int f16_steps(int n) { return (n + 15) / 16; }
// Dynamic shared memory: the image; the C quads {‖c_2t‖², ‖c_2t+1‖², same}, so a quad is one
// LDS.128 into the 4 consecutive registers HMMA reads; per n-tile the weights
// {W + 2nt, W + 2nt + 1, (2nt)², (2nt + 1)²}; μ; per-block counts; per-warp scratch.
int64_t f16_smem_bytes(int64_t kpad, int steps, int block) {
  return kpad * steps * 32 + kpad / 2 * 16 + kpad / 8 * 16 + kMaxDims * 4 + kpad * 4 +
         int64_t(block / 32) * kWarpScratchWords * 4;
}
// Half index of c[j][d] in fragment order: per (n-tile, lane) the lane's four dims of every
// step, contiguous, so a lane reads its B fragments of one n-tile with one or two LDS.128.
MK_HOST_DEVICE inline int64_t f16_image_offset(int j, int d, int steps) {
  const int nt = j / 8, g = j % 8, step = d / 16, t = (d % 16) / 4;
  return ((int64_t(nt) * 32 + g * 4 + t) * steps + step) * 4 + d % 4;
}

// Largest |value| after scaling: below 2^14, with the most of FP16's range above subnormals.
__device__ __forceinline__ float f16_scale_for(float largest_norm2) {
  if (!(largest_norm2 > 0.f)) return 1.f;
  int exponent = 0;
  frexpf(largest_norm2, &exponent);  // largest_norm2 < 2^exponent, so every |value| < 2^ceil(exponent/2)
  return ldexpf(1.f, 14 - ((exponent + 1) >> 1));
}

// One block: the scale needs every centroid's ‖c − μ‖² before any value is rounded.
// scalars = {scale, largest scaled ‖c‖²}.
__global__ void build_f16_window_image(WindowArgs a, float largest_point_norm2, __half* image, float* norms,
                                       float* scalars) {
  __shared__ unsigned largest_bits;  // non-negative floats order like their bits
  if (threadIdx.x == 0) largest_bits = __float_as_uint(largest_point_norm2);
  __syncthreads();
  for (int j = threadIdx.x; j < a.k; j += blockDim.x) {
    float sq = 0.f;
    for (int d = 0; d < a.n; ++d) {
      const float centred = a.centroids[int64_t(j) * a.n + d] - a.center[d];
      sq = fmaf(centred, centred, sq);
    }
    atomicMax(&largest_bits, __float_as_uint(sq * 1.0001f));  // FP32 sum: widen a little
  }
  __syncthreads();
  const float scale = f16_scale_for(__uint_as_float(largest_bits));
  __syncthreads();
  if (threadIdx.x == 0) largest_bits = 0u;
  __syncthreads();
  const int npad = 16 * a.f16_steps;
  for (int j = threadIdx.x; j < a.kpad; j += blockDim.x) {
    double norm = 0;
    for (int d = 0; d < npad; ++d) {
      float value = 0.f;
      if (j < a.k && d < a.n) {
        value = (a.centroids[int64_t(j) * a.n + d] - a.center[d]) * scale;
        norm += double(value) * value;
      }
      image[f16_image_offset(j, d, a.f16_steps)] = __float2half_rn(-2.f * value);
    }
    // Padding sorts above every real key (|keys| < 3·2^28 in scaled units) and is never
    // inside a window.
    norms[j] = j < a.k ? float(norm) : 1e30f;
    if (j < a.k) atomicMax(&largest_bits, __float_as_uint(float(norm)));
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    scalars[0] = scale;
    scalars[1] = __uint_as_float(largest_bits);
  }
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
__device__ __forceinline__ uint32_t pack_half2(float low, float high) {
  const __half2 pair = __floats2half2_rn(low, high);  // low lands in the lower 16 bits
  return *reinterpret_cast<const uint32_t*>(&pair);
}

// D = A·B + C for one m16n8k16 FP16 tile with FP32 accumulation.
__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1, float c0,
                                        float c1, float c2, float c3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c0), "f"(c1), "f"(c2), "f"(c3));
#else
  __trap();  // unreachable: can_implement refuses devices below sm_80
#endif
}

template <int H>
__device__ __forceinline__ void load_f16_fragments(const uint32_t* tile, uint32_t (&b)[H][2]) {
  if constexpr (H % 2 == 0) {
#pragma unroll
    for (int q = 0; q < H / 2; ++q) {
      const uint4 v = reinterpret_cast<const uint4*>(tile)[q];
      b[2 * q][0] = v.x, b[2 * q][1] = v.y, b[2 * q + 1][0] = v.z, b[2 * q + 1][1] = v.w;
    }
  } else {
#pragma unroll
    for (int q = 0; q < H; ++q) {
      const uint2 v = reinterpret_cast<const uint2*>(tile)[q];
      b[q][0] = v.x, b[q][1] = v.y;
    }
  }
}

template <int H>
__device__ __forceinline__ void f16_tile_keys(float (&d)[4], const uint32_t (&frag)[H][4], const uint32_t (&b)[H][2],
                                              const float4& cn) {
  mma_f16(d, frag[0], b[0][0], b[0][1], cn.x, cn.y, cn.z, cn.w);
#pragma unroll
  for (int s = 1; s < H; ++s) mma_f16(d, frag[s], b[s][0], b[s][1], d[0], d[1], d[2], d[3]);
}

// A lane's MMA operands for one n-tile: its B fragments and the C quad of norms.
// Shared memory holds the table, then the norm quads, then the count weights, so the
// look-ahead one past the last n-tile reads in-bounds values that go unused.
template <int H>
struct NTileOperands {
  uint32_t b[H][2];
  float4 cn;
};

template <int H>
__device__ __forceinline__ NTileOperands<H> load_ntile(const uint32_t* lane_image, const float4* norm_quads_s, int nt,
                                                       int t) {
  NTileOperands<H> tile;
  load_f16_fragments<H>(lane_image + nt * 32 * H * 2, tile.b);
  tile.cn = norm_quads_s[nt * 4 + t];
  return tile;
}

// Column of the lane's i-th key: n-tile i/2, parity i%2.
__device__ __forceinline__ int lane_column(int i, int t) { return (i >> 1) * 8 + 2 * t + (i & 1); }
#endif

// Pass B on the FMA pipe: every key's ramp r = [key < T] adds r·(W + i) to its row's sum and
// r·i² to its squares. SkipEmptyTiles: most n-tiles hold no key inside any of the warp's 32
// windows once K is large (a row has ~1.15 at K=1024), so one compare per key and a vote
// skip their counting; a skipped tile's ramps would all be 0 (key ≥ T makes T·s − key·s ≤ 0
// exactly). Where many tiles hold one (K ≤ 512 at N=32), the vote costs more than it saves.
template <int H, bool SkipEmptyTiles>
__device__ __forceinline__ void count_inside_keys(const uint32_t (&frag)[2][H][4], const uint32_t* lane_image,
                                                  const float4* norm_quads_s, const float4* weights_s, int ntiles,
                                                  int t, const float (&ramp_slope)[4], const float (&ramp_top)[4],
                                                  float (&sums)[4], float (&squares)[4]) {
  auto count = [&](float key, int r, float weight_sum, float weight_square) {
    const float inside = __saturatef(fmaf(key, ramp_slope[r], ramp_top[r]));
    sums[r] = fmaf(inside, weight_sum, sums[r]);
    squares[r] = fmaf(inside, weight_square, squares[r]);
  };
  NTileOperands<H> tile = load_ntile<H>(lane_image, norm_quads_s, 0, t);
  if constexpr (SkipEmptyTiles) {
    // T = ramp_top / s, exactly: s is a power of two whose reciprocal is a normal float (|T| ≥ 2^-100).
    float threshold[4];
#pragma unroll
    for (int r = 0; r < 4; ++r)
      threshold[r] = ramp_top[r] * __uint_as_float((254u << 23) - __float_as_uint(-ramp_slope[r]));
    for (int nt = 0; nt < ntiles; ++nt) {
      const NTileOperands<H> ahead = load_ntile<H>(lane_image, norm_quads_s, nt + 1, t);
      float d[2][4];
#pragma unroll
      for (int tile_m = 0; tile_m < 2; ++tile_m) f16_tile_keys<H>(d[tile_m], frag[tile_m], tile.b, tile.cn);
      // Four short compare chains, not one of eight: the vote waits on the longest.
      bool row_inside[4];
#pragma unroll
      for (int r = 0; r < 4; ++r)
        row_inside[r] = (d[r >> 1][2 * (r & 1)] < threshold[r]) | (d[r >> 1][2 * (r & 1) + 1] < threshold[r]);
      if (__any_sync(0xffffffffu, (row_inside[0] | row_inside[1]) | (row_inside[2] | row_inside[3]))) {
        const float4 w = weights_s[nt];
#pragma unroll
        for (int q = 0; q < 8; ++q) count(d[q >> 2][q & 3], 2 * (q >> 2) + ((q >> 1) & 1), q & 1 ? w.y : w.x,
                                          q & 1 ? w.w : w.z);
      }
      tile = ahead;
    }
  } else {
    for (int nt = 0; nt < ntiles; ++nt) {
      const NTileOperands<H> ahead = load_ntile<H>(lane_image, norm_quads_s, nt + 1, t);
      const float4 w = weights_s[nt];
#pragma unroll
      for (int tile_m = 0; tile_m < 2; ++tile_m) {
        float d[4];
        f16_tile_keys<H>(d, frag[tile_m], tile.b, tile.cn);
#pragma unroll
        for (int q = 0; q < 4; ++q) count(d[q], 2 * tile_m + (q >> 1), q & 1 ? w.y : w.x, q & 1 ? w.w : w.z);
      }
      tile = ahead;
    }
  }
}

// Pass B sums r·(W + i) and r·i² per key on the FMA pipe (three FFMA per key with the ramp).
// A kernel per SkipEmptyTiles value, not a runtime branch: with both sweeps in one kernel,
// the counting form ran 3 % slower at K=256 (0.531 against 0.515 ms).
template <int H, bool SkipEmptyTiles>  // H: m16n8k16 steps of 16 dims
__global__ void __launch_bounds__(512, 1) f16_window_kernel(WindowArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ float4 smem4[];
  const int ntiles = a.kpad / 8;
  uint32_t* image_s = reinterpret_cast<uint32_t*>(smem4);
  float4* norm_quads_s = reinterpret_cast<float4*>(image_s + int64_t(a.kpad) * H * 8);
  float4* weights_s = norm_quads_s + a.kpad / 2;
  float4* center_s = weights_s + ntiles;  // μ, zero past N
  unsigned* counts_s = reinterpret_cast<unsigned*>(center_s + kMaxDims / 4);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const WarpScratch scratch = warp_scratch(reinterpret_cast<int*>(counts_s + a.kpad), warp);

  const float weight = a.count_weight;
  {
    const int64_t image4 = int64_t(a.kpad) * H * 2;
    const uint4* src = reinterpret_cast<const uint4*>(a.image);
    for (int64_t i = threadIdx.x; i < image4; i += blockDim.x) reinterpret_cast<uint4*>(image_s)[i] = src[i];
    for (int i = threadIdx.x; i < a.kpad / 2; i += blockDim.x) {
      const float2 pair = reinterpret_cast<const float2*>(a.norms)[i];
      norm_quads_s[i] = make_float4(pair.x, pair.y, pair.x, pair.y);
    }
    for (int nt = threadIdx.x; nt < ntiles; nt += blockDim.x) {
      const float i0 = float(2 * nt), i1 = i0 + 1.f;
      weights_s[nt] = make_float4(weight + i0, weight + i1, i0 * i0, i1 * i1);
    }
    for (int i = threadIdx.x; i < a.kpad; i += blockDim.x) counts_s[i] = 0;
    for (int d = threadIdx.x; d < kMaxDims; d += blockDim.x)
      reinterpret_cast<float*>(center_s)[d] = d < a.n ? a.center[d] : 0.f;
  }
  __syncthreads();

  const float scale = a.f16_scalars[0], largest_cnorm2 = a.f16_scalars[1];
  const float inverse_weight = 1.f / weight;  // a power of two: exact
  const bool vector_rows = (a.n % 4) == 0;
  const int64_t steps = (a.m + 31) / 32;
  const uint32_t* lane_image = image_s + lane * H * 2;
  double inertia = 0.0;

  for (int64_t step = granted_step(request_step(a, lane)); step < steps;) {
    const unsigned long long ticket = request_step(a, lane);
    const int64_t base = step * 32;
    // Rows r = 0..3 of this lane: tile r/2, row g (+8 for odd r). Lane t holds dims
    // 16s + 4t .. +3 of step s: k = 2t, 2t+1 (registers 0/1) and 2t+8, 2t+9 (2/3).
    uint32_t frag[2][H][4];
    float xn2[4];
    bool valid[4];
    // A whole step of full-width rows loads each lane's four dims with one unpredicated
    // LDG.128 at a 32-bit offset and μ from shared memory (the general form below cost
    // ~60 instructions per row and step). All of a step's loads are issued before the first
    // use: a branch per row and k-step had made them eight serial round trips.
    const bool full_step = base + 32 <= a.m && a.n == 16 * H;
    float4 centred[4][H];  // (x − μ)·scale, 0 past the data
    if (full_step) {
      const float* step_points = a.points + base * a.n;
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int s = 0; s < H; ++s)
          centred[r][s] =
              __ldg(reinterpret_cast<const float4*>(step_points + (row_in_step(r, g) * a.n + 16 * s + 4 * t)));
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int s = 0; s < H; ++s) {
          const float4 mu = center_s[4 * s + t];
          float4& v = centred[r][s];
          v = make_float4((v.x - mu.x) * scale, (v.y - mu.y) * scale, (v.z - mu.z) * scale, (v.w - mu.w) * scale);
        }
    } else {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int64_t p = base + row_in_step(r, g);
        const float* row = a.points + p * a.n;
#pragma unroll
        for (int s = 0; s < H; ++s) {
          const int d0 = 16 * s + 4 * t;
          float v[4];
          if (p < a.m && vector_rows && d0 + 4 <= a.n) {
            const float4 q = __ldg(reinterpret_cast<const float4*>(row + d0));
            v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
          } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) v[e] = p < a.m && d0 + e < a.n ? __ldg(row + d0 + e) : 0.f;
          }
#pragma unroll
          for (int e = 0; e < 4; ++e)
            v[e] = (p < a.m && d0 + e < a.n) ? (v[e] - reinterpret_cast<const float*>(center_s)[d0 + e]) * scale : 0.f;
          centred[r][s] = make_float4(v[0], v[1], v[2], v[3]);
        }
      }
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      valid[r] = base + row_in_step(r, g) < a.m;
      float sq = 0.f;
#pragma unroll
      for (int s = 0; s < H; ++s) {
        const float4 v = centred[r][s];
        sq = fmaf(v.x, v.x, sq), sq = fmaf(v.y, v.y, sq), sq = fmaf(v.z, v.z, sq), sq = fmaf(v.w, v.w, sq);
        frag[r >> 1][s][r & 1] = pack_half2(v.x, v.y);
        frag[r >> 1][s][(r & 1) + 2] = pack_half2(v.z, v.w);
      }
      sq += __shfl_xor_sync(0xffffffffu, sq, 1);
      sq += __shfl_xor_sync(0xffffffffu, sq, 2);
      xn2[r] = sq;
    }

    // Pass A: each row's smallest key. Pass A and the FMA-pipe counts load n-tile nt+1's
    // operands while nt's multiply (the HMMAs had waited on the LDS issued just before them).
    float lowest[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) lowest[r] = INFINITY;
    {
      NTileOperands<H> tile = load_ntile<H>(lane_image, norm_quads_s, 0, t);
      for (int nt = 0; nt < ntiles; ++nt) {
        const NTileOperands<H> ahead = load_ntile<H>(lane_image, norm_quads_s, nt + 1, t);
#pragma unroll
        for (int tile_m = 0; tile_m < 2; ++tile_m) {
          float d[4];
          f16_tile_keys<H>(d, frag[tile_m], tile.b, tile.cn);
          lowest[2 * tile_m] = fminf(lowest[2 * tile_m], fminf(d[0], d[1]));
          lowest[2 * tile_m + 1] = fminf(lowest[2 * tile_m + 1], fminf(d[2], d[3]));
        }
        tile = ahead;
      }
    }

    // r = sat(T·s − key·s) with s = 4/ulp(T) is exactly [key < T]: a key within a factor
    // of two of T differs from it by at least ulp(T)/2, any other by more than |T|/2.
    // T is rounded up and kept ≥ 2^-100 (so s stays finite); raising T only widens the window.
    float ramp_slope[4], ramp_top[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      float low = lowest[r];
      low = fminf(low, __shfl_xor_sync(0xffffffffu, low, 1));
      low = fminf(low, __shfl_xor_sync(0xffffffffu, low, 2));
      float top = __fadd_ru(low, gemm::fp16_key_window(xn2[r], low, largest_cnorm2, a.f16_model));
      if (!(fabsf(top) >= 0x1p-100f)) top = 0x1p-100f;
      const float slope = __uint_as_float((279u - ((__float_as_uint(top) >> 23) & 0xffu)) << 23);
      ramp_slope[r] = -slope;
      ramp_top[r] = top * slope;
    }

    // Pass B: the same keys, counted and identified against T.
    float sums[4], squares[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) sums[r] = squares[r] = 0.f;
    count_inside_keys<H, SkipEmptyTiles>(frag, lane_image, norm_quads_s, weights_s, ntiles, t, ramp_slope, ramp_top,
                                         sums, squares);

    // The next step's rows on their way to L2 during the arbitration and update (one
    // 128-byte line per lane and 32 dims), so its first loads wait on L2, not DRAM.
    const int64_t next = granted_step(ticket);
    if ((next + 1) * 32 <= a.m) {
      const char* next_rows = reinterpret_cast<const char*>(a.points + next * 32 * a.n);
      for (int line = lane; line < a.n; line += 32) prefetch_to_l2(next_rows + 128 * line);
    }

    const int rows = a.m - base < 32 ? int(a.m - base) : 32;
    float update_values[32];
    load_step_dimension(a, base, rows, lane, update_values);

    // Per row: one in-window key in the quad settles it. Otherwise every decoded key goes on
    // the work list, and lanes with three or more (or, never expected, a quad with none)
    // are scanned.
    int listed = 0;
    const unsigned below = (1u << lane) - 1u;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const float count_f = floorf(sums[r] * inverse_weight);
      const int count = valid[r] ? int(fminf(count_f, 3.f)) : 0;
      const int index_sum = int(sums[r] - count_f * weight);  // exact while count ≤ 2
      int first = index_sum, second = 0;
      if (count == 2) {
        const int spread = __float2int_rn(sqrtf(float(2 * int(squares[r]) - index_sum * index_sum)));
        first = (index_sum - spread) >> 1;
        second = (index_sum + spread) >> 1;
      }
      int quad_count = count + __shfl_xor_sync(0xffffffffu, count, 1);
      quad_count += __shfl_xor_sync(0xffffffffu, quad_count, 2);
      int settled = count == 1 ? lane_column(first, t) : 0;
      settled += __shfl_xor_sync(0xffffffffu, settled, 1);
      settled += __shfl_xor_sync(0xffffffffu, settled, 2);
      const bool ambiguous = valid[r] && quad_count != 1;
      const int items = ambiguous && count <= 2 ? count : 0;
      const unsigned ones = __ballot_sync(0xffffffffu, items == 1);
      const unsigned twos = __ballot_sync(0xffffffffu, items == 2);
      const unsigned hidden = __ballot_sync(0xffffffffu, ambiguous && (count >= 3 || quad_count == 0));
      const int local_row = row_in_step(r, g);
      const int slot = listed + __popc(ones & below) + 2 * __popc(twos & below);
      if (items >= 1) scratch.work[slot] = (local_row << 16) | lane_column(first, t);
      if (items == 2) scratch.work[slot + 1] = (local_row << 16) | lane_column(second, t);
      listed += __popc(ones) + 2 * __popc(twos);
      if (t == 0) {
        scratch.label[local_row] = settled;
        scratch.scan[local_row] = (hidden >> (g * 4)) & 0xfu;
        scratch.exact[local_row] = ~0ull;
        scratch.ambiguous[local_row] = ambiguous;
      }
      if (a.stats) {
        const unsigned row_owners = __ballot_sync(0xffffffffu, valid[r] && t == 0);
        const unsigned ambiguous_rows = __ballot_sync(0xffffffffu, ambiguous && t == 0);
        if (lane == 0) {
          unsigned scans = 0;
          for (int quad = 0; quad < 8; ++quad) scans += ((hidden >> (4 * quad)) & 0xfu) != 0;
          atomicAdd(&a.stats[0], static_cast<unsigned long long>(__popc(row_owners)));
          atomicAdd(&a.stats[1], static_cast<unsigned long long>(__popc(ambiguous_rows)));
          atomicAdd(&a.stats[2], static_cast<unsigned long long>(scans));
        }
      }
    }
    settle_and_update<16 * H>(a, scratch, listed, base, rows, ntiles, counts_s, update_values, inertia);
    step = next;
  }

  flush_block_totals(a, inertia, counts_s);
#else
  __trap();  // unreachable: can_implement refuses devices below sm_80
#endif
}

using KernelFn = void (*)(WindowArgs);

// Pass B's vote pays where most n-tiles hold no in-window key. H200, N=32, M=2M, skip
// against count: K=1024 1.18 against 1.22-1.23 ms, K=512 0.748-0.753 against 0.736-0.743,
// K=256 0.536-0.540 against 0.518-0.524.
constexpr int64_t kSkipEmptyTilesFromKpad = 1024;
bool skips_empty_tiles(const Params& params, int64_t kpad) {
  if (params.contains("empty_tiles")) return params.at("empty_tiles").get<std::string>() == "skip";
  return kpad >= kSkipEmptyTilesFromKpad;
}

int64_t smem_for(int64_t kpad, int n, int block) { return f16_smem_bytes(kpad, f16_steps(n), block); }

template <bool SkipEmptyTiles>
KernelFn f16_kernel_for(int n) {
  switch (f16_steps(n)) {
    case 1: return f16_window_kernel<1, SkipEmptyTiles>;
    case 2: return f16_window_kernel<2, SkipEmptyTiles>;
    case 3: return f16_window_kernel<3, SkipEmptyTiles>;
    case 4: return f16_window_kernel<4, SkipEmptyTiles>;
  }
  return nullptr;
}

KernelFn kernel_for(int n, int64_t kpad, const Params& params) {
  KernelFn kernel = skips_empty_tiles(params, kpad) ? f16_kernel_for<true>(n) : f16_kernel_for<false>(n);
  if (kernel) return kernel;
  throw UnsupportedError("tf32-window: no FP16 kernel for N=" + std::to_string(n));
}

// Points and centroids are translated by the data mean μ (FP64, rounded once); the largest
// ‖x − μ‖², computed from the same FP32 differences the kernel forms, bounds the data.
struct Translation {
  std::vector<float> center;
  float largest = 0.f;  // max ‖x − μ‖²: with the centroids', it sets the FP16 scale
};

Translation translation_for(const Dataset& data) {
  const int n = data.n;
  std::vector<double> mean(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < data.m; ++i)
    for (int d = 0; d < n; ++d) mean[size_t(d)] += data.at(i, d);
  Translation translation;
  translation.center.resize(size_t(n));
  for (int d = 0; d < n; ++d) translation.center[size_t(d)] = float(mean[size_t(d)] / double(data.m));
  double largest = 0.0;
  for (int64_t i = 0; i < data.m; ++i) {
    double sq = 0.0;
    for (int d = 0; d < n; ++d) {
      const float centred = data.at(i, d) - translation.center[size_t(d)];
      sq += double(centred) * centred;
    }
    largest = std::max(largest, sq);
  }
  // Exact distances, their per-lane inertia sums and the keys' accumulators are FP32, and
  // padding columns carry norms of 1e30: squared distances (at most ~4·largest) must stay
  // well below that.
  constexpr double kLargestNorm2 = 1e28;
  if (!(largest <= kLargestNorm2)) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "tf32-window: the data reach |x - mean|^2 = %.3g, beyond the 1e28 its FP32 keys hold; use "
                  "gemm-tf32x3",
                  largest);
    throw UnsupportedError(text);
  }
  // Below this the exact arbiter's FP32 squared distances fall into subnormals and then to
  // zero: every centroid would tie. (All-equal data, largest = 0, ties exactly and is fine.)
  constexpr double kSmallestNorm2 = 1e-30;
  if (largest > 0.0 && largest < kSmallestNorm2) {
    char text[200];
    std::snprintf(text, sizeof text,
                  "tf32-window: the data span only |x - mean|^2 = %.3g, below the 1e-30 where FP32 squared "
                  "distances keep their precision; rescale the data",
                  largest);
    throw UnsupportedError(text);
  }
  translation.largest = float(largest * 1.0001);  // FP64 sum of FP32 differences, rounded: widen a little
  return translation;
}

class Tf32WindowRun : public gpu::GpuRun {
 public:
  Tf32WindowRun(const Problem& problem, const Dataset& data, const Params& params, const DeviceInfo& device,
                const Translation& translation)
      : GpuRun(problem, data, Layout::AoS),
        kpad_(int(padded_centroids(problem.k.kmax))),
        block_(params.at("block").get<int>()),
        kernel_(kernel_for(problem.n, kpad_, params)) {
    const int n = problem.n;
    const std::vector<float>& center = translation.center;
    largest_ = translation.largest;
    center_.allocate(size_t(n), "tf32-window center");
    image_.allocate(size_t(kpad_) * 8 * f16_steps(n), "tf32-window centroid image");  // kpad·16·steps halves
    f16_scalars_.allocate(2, "tf32-window f16 scale");
    norms_.allocate(size_t(kpad_), "tf32-window centroid norms");
    gpu::check(cudaMemcpyAsync(center_.get(), center.data(), center.size() * sizeof(float), cudaMemcpyHostToDevice,
                               state_.stream()),
               "tf32-window center upload");
    smem_ = size_t(smem_for(kpad_, n, block_));
    gpu::check(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel_),
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_)),
               "tf32-window shared memory limit");
    int resident = 0;
    gpu::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, reinterpret_cast<const void*>(kernel_),
                                                             block_, smem_),
               "tf32-window occupancy");
    if (resident < 1)
      throw UnsupportedError("tf32-window: block=" + std::to_string(block_) +
                             " cannot be resident on this device (registers or shared memory)");
    const int64_t steps = (problem.m + 31) / 32;
    const int64_t useful = (steps + block_ / 32 - 1) / (block_ / 32);
    const int64_t requested = params.at("grid").get<int64_t>();
    const int64_t persistent = int64_t(resident) * std::max(1, device.sm_count);
    grid_ = std::max<int64_t>(1, std::min(requested == 0 ? persistent : requested, useful));
    f16_model_ = gemm::fp16_key_model(16 * f16_steps(n));
    if (std::getenv("MKBENCH_WINDOW_STATS")) {
      stats_.allocate(3, "tf32-window stats");
      gpu::check(cudaMemsetAsync(stats_.get(), 0, stats_.bytes(), state_.stream()), "zero stats");
    }
    gpu::check(cudaStreamSynchronize(state_.stream()), "tf32-window setup");
  }

  // MKBENCH_WINDOW_STATS=1 reports how often the exact paths ran: the share of points with
  // more than one in-window candidate or with a column scan sets what the window costs.
  ~Tf32WindowRun() override {
    if (!stats_.get()) return;
    unsigned long long stats[3] = {0, 0, 0};
    if (cudaStreamSynchronize(state_.stream()) != cudaSuccess ||
        cudaMemcpy(stats, stats_.get(), sizeof stats, cudaMemcpyDeviceToHost) != cudaSuccess)
      return;
    const double rows = stats[0] ? double(stats[0]) : 1.0;
    std::fprintf(stderr,
                 "tf32-window stats: %llu point-iterations, %.4f%% with several in-window candidates, %.4f%% with "
                 "a column scan\n",
                 stats[0], 100.0 * double(stats[1]) / rows, 100.0 * double(stats[2]) / rows);
  }

  void iterate(bool store_labels) override {
    const Problem& problem = state_.problem();
    const cudaStream_t stream = state_.stream();
    state_.zero_accumulators();
    const gpu::AccumulatorView acc = state_.accumulators(store_labels);
    WindowArgs args;
    args.points = state_.points().data;
    args.centroids = state_.centroids();
    args.image = image_.get();
    args.norms = norms_.get();
    args.center = center_.get();
    args.m = problem.m;
    args.n = problem.n;
    args.k = problem.k.kmax;
    args.kpad = kpad_;
    args.sums = acc.sums;
    args.counts = acc.counts;
    args.inertia = acc.inertia;
    args.labels = acc.labels;
    args.stats = stats_.get();
    args.next_step = next_step_.get();
    args.f16_steps = f16_steps(problem.n);
    args.f16_scalars = f16_scalars_.get();
    args.f16_model = f16_model_;
    args.count_weight = float(1 << index_bits(kpad_));  // W ≥ 4·L: room for Σi of three keys
    gpu::check(cudaMemsetAsync(next_step_.get(), 0, next_step_.bytes(), stream), "tf32-window step counter");
    build_f16_window_image<<<1, 1024, 0, stream>>>(args, largest_, reinterpret_cast<__half*>(image_.get()),
                                                   norms_.get(), f16_scalars_.get());
    gpu::check_launch("build_f16_window_image");
    kernel_<<<unsigned(grid_), unsigned(block_), smem_, stream>>>(args);
    gpu::check_launch("f16_window_kernel");
    state_.finalize();
  }

 private:
  int kpad_, block_;
  KernelFn kernel_;
  int64_t grid_ = 1;
  size_t smem_ = 0;
  float largest_ = 0.f;
  gemm::Fp16KeyModel f16_model_{};
  gpu::DeviceBuffer<float> center_, image_, norms_, f16_scalars_;
  gpu::DeviceBuffer<unsigned long long> stats_;
  gpu::DeviceBuffer<unsigned long long> next_step_{1, "tf32-window step counter"};
};

class Tf32Window : public Variant {
 public:
  std::string name() const override { return "tf32-window"; }
  std::string description() const override {
    return "one large K (>= 64): single-pass FP16 tensor-core distances in two sweeps (plain minimum, then "
           "in-window keys counted and identified) against a shared-memory centroid table, exact FP32 arbitration "
           "of the near-tie window (FP32-faithful labels), FP64 atomic update";
  }
  bool runs_on_gpu() const override { return true; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    if (device.cc_major < 8) return "needs FP16 m16n8k16 tensor cores (CC >= 8.0)";
    if (problem.k.kmin != problem.k.kmax)
      return "one K per run (a range of K is tensor-multik's or registers-multik's shape)";
    if (problem.k.kmax < kMinK)
      return "K=" + std::to_string(problem.k.kmax) + " below " + std::to_string(kMinK) +
             " (the FP64 atomic update serialises on K·N addresses); use tensor-multik or registers-multik";
    if (problem.n > kMaxDims)
      return "N=" + std::to_string(problem.n) + " above " + std::to_string(kMaxDims) +
             " (point fragments are register-resident); use gemm-tf32x3";
    const int64_t kpad = padded_centroids(problem.k.kmax);
    if (index_bits(kpad) > kMaxIndexBits)
      return "K=" + std::to_string(problem.k.kmax) + " needs more than " + std::to_string(kMaxIndexBits) +
             " index bits in the in-window counts; use gemm-tf32x3";
    const int64_t need = smem_for(kpad, problem.n, 128);  // the smallest block
    if (need > smem_limit(device))
      return "the centroid table needs " + std::to_string(need) + " bytes of shared memory, device allows " +
             std::to_string(smem_limit(device)) + "; use gemm-tf32x3";
    return gpu::check_fits_in_memory(problem, device, double(kpad) * f16_steps(problem.n) * 32.0);
  }

  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    ParamSpace space;
    const int sms = std::max(1, device.sm_count);
    std::vector<nlohmann::json> grids{0};
    for (int factor : {1, 2, 4}) grids.push_back(int64_t(factor) * sms);
    space.axes.push_back({"grid", grids, "blocks; 0 = the resident blocks of every SM (persistent grid)"});
    space.axes.push_back({"block", {128, 256, 384, 512}, "threads per block (32 points per warp and step)"});
    space.axes.push_back({"empty_tiles",
                          {"skip", "count"},
                          "the second sweep: skip n-tiles with no key inside any of the warp's windows (a compare "
                          "per key and a vote), or count every tile"});
    const int64_t kpad = padded_centroids(problem.k.kmax);
    const int n = problem.n;
    const int64_t limit = smem_limit(device);
    space.restrictions.push_back({"shared memory: centroid table + per-warp scratch fit the per-block limit",
                                  [kpad, n, limit](const Params& p) {
                                    return smem_for(kpad, n, p.at("block").get<int>()) <= limit;
                                  }});
    const int64_t steps = (problem.m + 31) / 32;
    space.restrictions.push_back({"no idle blocks: (grid-1)·block/32 warps < steps of 32 points", [steps](const Params& p) {
                                    const int64_t grid = p.at("grid").get<int64_t>();
                                    return grid == 0 || (grid - 1) * (p.at("block").get<int64_t>() / 32) < steps;
                                  }});
    return space;
  }

  // The table decides residency: where it takes most of an SM's shared memory only one
  // block fits, so that block should be the largest (16 warps); small tables leave room
  // for several blocks of 256.
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    const int64_t kpad = padded_centroids(problem.k.kmax);
    const int64_t per_sm = device.smem_per_sm > 0 ? device.smem_per_sm : smem_limit(device);
    const int block = 2 * smem_for(kpad, problem.n, 256) <= per_sm ? 256 : 512;
    return {{"grid", 0}, {"block", block}, {"empty_tiles", kpad >= kSkipEmptyTilesFromKpad ? "skip" : "count"}};
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    if (auto reason = can_implement(problem, device)) throw UnsupportedError("tf32-window: " + *reason);
    const Translation translation = translation_for(data);  // refuses data beyond FP32's range, before any GPU work
    return std::make_unique<Tf32WindowRun>(problem, data, params, device, translation);
  }
};

MKBENCH_REGISTER_VARIANT(Tf32Window);

}  // namespace
}  // namespace mk
