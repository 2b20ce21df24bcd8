// tf32-window: one large K (hundreds to a few thousand centroids) at N <= 64, where the
// distance product dominates and gemm-tf32x3's three MMAs per product and shared-memory
// point staging cost ~8x the goal (issue 4's N=32, K=1024 case).
//
// Why this shape of kernel:
// - One TF32 MMA per product, not three. A single TF32 product errs by ~2^-10 of |x||c|,
//   so each lane keeps its three smallest keys per point, and every centroid inside the
//   forward-error window (gemm::biased_key_window: near_tie_bound.hpp's derivation plus the
//   terms this kernel adds) is arbitrated in exact FP32, so labels stay FP32-faithful. The
//   window scales with |x||c|, so points and centroids are translated by the data mean
//   first: distances do not change, |x||c| shrinks (4x for uniform [0,1) data), and with it
//   the share of points that need an exact distance.
// - The whole centroid table lives in shared memory in MMA-fragment order, so a B fragment
//   is one conflict-free LDS.128 per lane and reused by both 16-row tiles of a warp; the
//   point fragments stay in registers for the whole centroid sweep (no point staging).
// - The MMA's C operand carries ‖c‖² plus a bias that makes every key positive, so the
//   result of 8 k-dims is already the ranking key: per value one LOP3 packs the centroid
//   index into the low mantissa bits and five integer min/max keep the three smallest.
// - A point whose window holds only its winner is settled by the keys. For the others
//   (~14 % at K=1024) the in-window keys go on a per-warp work list that the lanes clear in
//   one round; only when a lane's third key is inside too (~0.2 %) could a fourth hide in
//   its columns, and the warp scans them exactly.
// - The update adds each point to FP64 global sums (one coalesced RED per point and 32
//   dimensions); the same loads give each point's exact distance to its centroid for the
//   inertia, summed by a transposing butterfly. Counts go through shared memory;
//   finalize() divides.
//
// Needs sm_80+ (TF32 mma, cvt.rna.tf32); the kernel body is compiled out below that.
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "harness/errors.hpp"
#include "harness/variant.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/common/near_tie_bound.hpp"

namespace mk {
namespace {

constexpr int kMaxDims = 64;
// Below this the FP64 atomic update serialises on K·N addresses: on the H200, N=8 M=8M took
// 5.0 ms at K=32 and 2.6 ms at K=64 against 0.34 and 0.64 ms for auto's choice; from K=128
// (2.1 against 2.9 ms) and at N=32 from K=64 (0.90 against 1.75 ms) this variant was faster.
constexpr int kMinK = 64;
constexpr int kMaxIndexBits = 13;  // keys keep 23-13 = 10 mantissa bits at worst
constexpr int kPadCentroids = 32;  // the sweep is unrolled over 4 n-tiles of 8

int padded_dims(int n) {
  if (n <= 8) return 8;
  return (n + 15) / 16 * 16;  // k-steps come in pairs: one float4 of 4 dims per lane and pair
}
int k_steps(int n) { return padded_dims(n) / 8; }
int64_t padded_centroids(int k) { return (int64_t(k) + kPadCentroids - 1) / kPadCentroids * kPadCentroids; }
int index_bits(int64_t kpad) {
  int bits = 0;
  while ((int64_t(1) << bits) < kpad) ++bits;
  return bits;
}

// Dynamic shared memory: fragment-ordered table; the biased norms once per centroid (the
// window) and as the MMA's C quads {‖c_2t‖², ‖c_2t+1‖², same} so a quad is one LDS.128 into
// the 4 consecutive registers HMMA reads; per-block counts; per warp 32 labels, 32
// scan masks, 32 ambiguity flags, a work list of up to 8 in-window keys for each of 32 rows,
// and 32 packed exact minima.
constexpr int kWarpScratchWords = 32 + 32 + 32 + 256 + 64;
int64_t smem_bytes(int64_t kpad, int npad, int block) {
  return kpad * npad * 4 + kpad * 4 + kpad * 8 + kpad * 4 + int64_t(block / 32) * kWarpScratchWords * 4;
}
int64_t smem_limit(const DeviceInfo& device) {
  return device.smem_per_block_optin > 0 ? device.smem_per_block_optin : 48 * 1024;
}

struct WindowArgs {
  const float* points;     // m × n, AoS
  const float* centroids;  // k × n, exact (the state's packed centroids)
  const float* image;      // kpad × npad, −2·tf32(c − μ) in fragment order
  const float* biased_norms;  // kpad: ‖c − μ‖² + bias, 1e30 for padding
  const float* center;     // μ, n floats
  int64_t m;
  int n, k, kpad, npad;
  float bias;
  unsigned keep_mask;      // clears the index bits of a key
  gemm::BiasedKeyModel model;
  double* sums;
  unsigned long long* counts;
  double* inertia;
  int32_t* labels;
  unsigned long long* stats;  // null, or {rows, rows with several candidates, rows needing a column scan}
  unsigned long long* next_step;  // zero at launch; warps take 32-point steps from it
};

// Fragment order (g = lane/4, t = lane%4). For n ≤ 8 (one k-step) lane (g,t) of n-tile nt
// holds c[8nt+g][2t..2t+1]; otherwise pair p of k-steps holds c[8nt+g][16p+4t..16p+4t+3].
// MMA column t of step 2p is then dim 16p+4t, column t+4 dim 16p+4t+1, and step 2p+1 takes
// +2 and +3; the point fragments use the same map, so the sum over k is the dot product.
MK_HOST_DEVICE inline int64_t image_offset(int j, int d, int npad) {
  const int nt = j / 8, g = j % 8;
  if (npad == 8) return int64_t(nt) * 64 + (g * 4 + d / 2) * 2 + d % 2;
  const int p = d / 16, t = (d % 16) / 4;
  return int64_t(nt) * 8 * npad + p * 128 + (g * 4 + t) * 4 + d % 4;
}

__global__ void build_window_image(WindowArgs a, float* image, float* biased_norms) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= a.kpad) return;
  double norm = 0;
  for (int d = 0; d < a.npad; ++d) {
    float value = 0.f;
    if (j < a.k && d < a.n) {
      const float centred = a.centroids[int64_t(j) * a.n + d] - a.center[d];
      norm += double(centred) * centred;
      value = -2.f * gemm::tf32_round(centred);
    }
    image[image_offset(j, d, a.npad)] = value;
  }
  // Padding sorts above every real key: translation_for caps ‖x − μ‖² at 1e28, and centroids
  // (data points, then means of them) lie within the data, so real keys stay below ~5e28.
  biased_norms[j] = j < a.k ? float(norm + double(a.bias)) : 1e30f;
}

// Device helpers exist only where the kernel body does (sm_80+), and for the host pass.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
__device__ __forceinline__ uint32_t to_tf32(float value) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t out;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(out) : "f"(value));
  return out;
#else
  return __float_as_uint(value);
#endif
}

// D = A·B + C for one m16n8k8 TF32 tile (fragment ownership as in gemm_tensorcore.cu).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1,
                                         float c0, float c1, float c2, float c3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c0), "f"(c1), "f"(c2), "f"(c3));
#else
  __trap();  // unreachable: can_implement refuses devices below sm_80
#endif
}

__device__ __forceinline__ void keep_three_smallest(uint32_t key, uint32_t& first, uint32_t& second,
                                                    uint32_t& third) {
  third = min(third, max(second, key));
  second = min(second, max(first, key));
  first = min(first, key);
}

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

// One level of the transposing butterfly: lanes with bit `Level` set keep the upper half of
// the live rows, add their partner's share of it, and pass on the lower half.
template <int Level>
__device__ __forceinline__ void transpose_sum_level(float (&partial)[32], int lane) {
  const bool upper = (lane & Level) != 0;
#pragma unroll
  for (int i = 0; i < Level; ++i) {
    const float send = upper ? partial[i] : partial[i + Level];
    const float keep = upper ? partial[i + Level] : partial[i];
    partial[i] = keep + __shfl_xor_sync(0xffffffffu, send, Level);
  }
}

#endif

template <int S>  // k-steps of 8 dims
__global__ void __launch_bounds__(512, 1) tf32_window_kernel(WindowArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int kPairs = S == 1 ? 1 : S / 2;
  constexpr int kVec = S == 1 ? 2 : 4;  // floats of one centroid per lane and pair
  extern __shared__ float4 smem4[];
  float* image_s = reinterpret_cast<float*>(smem4);
  float* norms_s = image_s + int64_t(a.kpad) * a.npad;
  float4* norm_quads_s = reinterpret_cast<float4*>(norms_s + a.kpad);
  unsigned* counts_s = reinterpret_cast<unsigned*>(norm_quads_s + a.kpad / 2);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  int* label_s = reinterpret_cast<int*>(counts_s + a.kpad) + warp * kWarpScratchWords;
  unsigned* scan_s = reinterpret_cast<unsigned*>(label_s + 32);   // quad lanes whose columns to scan
  int* ambiguous_s = label_s + 64;                                   // row needs exact arbitration
  int* work_s = label_s + 96;                                        // (row << 16) | centroid, ≤ 256
  unsigned long long* exact_s = reinterpret_cast<unsigned long long*>(label_s + 352);  // 8-byte aligned

  {
    const int64_t table4 = int64_t(a.kpad) * a.npad / 4;
    const float4* image4 = reinterpret_cast<const float4*>(a.image);
    for (int64_t i = threadIdx.x; i < table4; i += blockDim.x) smem4[i] = image4[i];
    for (int i = threadIdx.x; i < a.kpad; i += blockDim.x) {
      norms_s[i] = a.biased_norms[i];
      counts_s[i] = 0;
    }
    for (int i = threadIdx.x; i < a.kpad / 2; i += blockDim.x) {
      const float2 pair = reinterpret_cast<const float2*>(a.biased_norms)[i];
      norm_quads_s[i] = make_float4(pair.x, pair.y, pair.x, pair.y);
    }
  }
  __syncthreads();

  const bool vector_rows = (a.n % kVec) == 0;
  const int ntiles = a.kpad / 8;
  const unsigned index_mask = ~a.keep_mask;
  const int64_t steps = (a.m + 31) / 32;
  double inertia = 0.0;

  // Steps are handed out by a counter: how many exact scans a step needs varies, and a
  // static split left warps idle at the final barrier. The next index is fetched a step
  // ahead so the atomic's latency hides behind the sweep.
  auto take_step = [&]() {
    unsigned long long taken = 0;
    if (lane == 0) taken = atomicAdd(a.next_step, 1ull);
    return static_cast<int64_t>(__shfl_sync(0xffffffffu, taken, 0));
  };
  for (int64_t step = take_step(); step < steps;) {
    const int64_t next = take_step();
    const int64_t base = step * 32;
    // Rows r = 0..3 of this lane: tile r/2, row g (+8 for odd r).
    uint32_t frag[2][S][4];
    float xn2[4];
    bool valid[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int64_t p = base + (r >> 1) * 16 + (r & 1) * 8 + g;
      valid[r] = p < a.m;
      const float* row = a.points + p * a.n;
      float sq = 0.f;
#pragma unroll
      for (int pair = 0; pair < kPairs; ++pair) {
        const int d0 = S == 1 ? 2 * t : 16 * pair + 4 * t;
        float v[kVec];
        if (valid[r] && vector_rows && d0 + kVec <= a.n) {
          if constexpr (kVec == 4) {
            const float4 q = __ldg(reinterpret_cast<const float4*>(row + d0));
            v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
          } else {
            const float2 q = __ldg(reinterpret_cast<const float2*>(row + d0));
            v[0] = q.x, v[1] = q.y;
          }
        } else {
#pragma unroll
          for (int e = 0; e < kVec; ++e) v[e] = valid[r] && d0 + e < a.n ? __ldg(row + d0 + e) : 0.f;
        }
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          // μ is re-read (an L1 hit) rather than held: registers bound this kernel's occupancy.
          const float centred = (valid[r] && d0 + e < a.n) ? v[e] - __ldg(a.center + d0 + e) : 0.f;
          sq = fmaf(centred, centred, sq);
          v[e] = centred;
        }
        // Step 2·pair: columns t, t+4 = dims d0, d0+1; step 2·pair+1: d0+2, d0+3.
        const int row_slot = r & 1;  // a0/a2 hold row g, a1/a3 row g+8
        frag[r >> 1][S == 1 ? 0 : 2 * pair][row_slot] = to_tf32(v[0]);
        frag[r >> 1][S == 1 ? 0 : 2 * pair][row_slot + 2] = to_tf32(v[1]);
        if (S != 1) {
          frag[r >> 1][2 * pair + 1][row_slot] = to_tf32(v[kVec - 2]);
          frag[r >> 1][2 * pair + 1][row_slot + 2] = to_tf32(v[kVec - 1]);
        }
      }
      sq += __shfl_xor_sync(0xffffffffu, sq, 1);
      sq += __shfl_xor_sync(0xffffffffu, sq, 2);
      xn2[r] = sq;
    }

    uint32_t first[4], second[4], third[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) first[r] = second[r] = third[r] = 0x7fffffffu;
    const float* lane_image = image_s + lane * kVec;
    for (int nt = 0; nt < ntiles; ++nt) {
      uint32_t b0[S], b1[S];
      const float* tile = lane_image + nt * 8 * a.npad;
#pragma unroll
      for (int pair = 0; pair < kPairs; ++pair) {
        if (S == 1) {
          const float2 q = *reinterpret_cast<const float2*>(tile);
          b0[0] = __float_as_uint(q.x), b1[0] = __float_as_uint(q.y);
        } else {
          const float4 q = *reinterpret_cast<const float4*>(tile + pair * 128);
          b0[2 * pair] = __float_as_uint(q.x), b1[2 * pair] = __float_as_uint(q.y);
          b0[2 * pair + 1] = __float_as_uint(q.z), b1[2 * pair + 1] = __float_as_uint(q.w);
        }
      }
      const float4 cn = norm_quads_s[nt * 4 + t];
      const uint32_t j0 = uint32_t(nt * 8 + 2 * t), j1 = j0 + 1;
#pragma unroll
      for (int tile_m = 0; tile_m < 2; ++tile_m) {
        float d[4];
        mma_tf32(d, frag[tile_m][0], b0[0], b1[0], cn.x, cn.y, cn.z, cn.w);
#pragma unroll
        for (int s = 1; s < S; ++s) mma_tf32(d, frag[tile_m][s], b0[s], b1[s], d[0], d[1], d[2], d[3]);
        const int r0 = 2 * tile_m, r1 = 2 * tile_m + 1;
        keep_three_smallest((__float_as_uint(d[0]) & a.keep_mask) | j0, first[r0], second[r0], third[r0]);
        keep_three_smallest((__float_as_uint(d[1]) & a.keep_mask) | j1, first[r0], second[r0], third[r0]);
        keep_three_smallest((__float_as_uint(d[2]) & a.keep_mask) | j0, first[r1], second[r1], third[r1]);
        keep_three_smallest((__float_as_uint(d[3]) & a.keep_mask) | j1, first[r1], second[r1], third[r1]);
      }
    }

    // The update's values (lane d holds dimension d of the step's 32 points) are loaded
    // now, so their latency hides behind the arbitration below; only a winner whose window
    // holds other candidates needs an exact distance before the update.
    const int rows = a.m - base < 32 ? int(a.m - base) : 32;
    float update_values[32];
#pragma unroll
    for (int row = 0; row < 32; ++row)
      update_values[row] = row < rows && lane < a.n ? __ldg(a.points + (base + row) * a.n + lane) : 0.f;

    // Per row: the quad's best key and the window around it. A row whose window holds only
    // the winner is settled by the keys alone. Otherwise every in-window key (a lane's
    // first or second) goes on the warp's work list for an exact distance, and a lane
    // whose third key is also inside may hide a fourth: its columns are scanned.
    int listed = 0;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      uint32_t best = first[r];
      best = min(best, __shfl_xor_sync(0xffffffffu, best, 1));
      best = min(best, __shfl_xor_sync(0xffffffffu, best, 2));
      const int best_j = int(best & index_mask);
      const float v1 = __uint_as_float(best);
      const float width = gemm::biased_key_window(xn2[r], v1, a.bias, norms_s[best_j] - a.bias, a.model);
      const uint32_t threshold = __float_as_uint(v1 + width);
      const bool first_in = valid[r] && first[r] <= threshold;
      const bool second_in = valid[r] && second[r] <= threshold;
      const unsigned firsts = __ballot_sync(0xffffffffu, first_in);
      const unsigned seconds = __ballot_sync(0xffffffffu, second_in);
      const unsigned hidden = __ballot_sync(0xffffffffu, valid[r] && third[r] <= threshold);
      const unsigned quad_hidden = (hidden >> (g * 4)) & 0xfu;
      const bool ambiguous = __popc((firsts >> (g * 4)) & 0xfu) + __popc((seconds >> (g * 4)) & 0xfu) > 1;
      const int local_row = (r >> 1) * 16 + (r & 1) * 8 + g;
      const unsigned first_items = __ballot_sync(0xffffffffu, ambiguous && first_in);
      const unsigned second_items = __ballot_sync(0xffffffffu, ambiguous && second_in);
      const unsigned below = (1u << lane) - 1u;
      if (ambiguous && first_in)
        work_s[listed + __popc(first_items & below)] = (local_row << 16) | int(first[r] & index_mask);
      if (ambiguous && second_in)
        work_s[listed + __popc(first_items) + __popc(second_items & below)] =
            (local_row << 16) | int(second[r] & index_mask);
      listed += __popc(first_items) + __popc(second_items);
      if (t == 0) {
        label_s[local_row] = best_j;
        scan_s[local_row] = quad_hidden;
        exact_s[local_row] = ~0ull;
        ambiguous_s[local_row] = ambiguous || quad_hidden;
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
    __syncwarp();

    // The work list in one round: each lane takes an (row, centroid) item and keeps the
    // row's smallest (distance, index) with a shared-memory atomicMin.
    for (int item = lane; item < listed; item += 32) {
      const int row = work_s[item] >> 16, j = work_s[item] & 0xffff;
      const float d2 = exact_distance<8 * S>(a.points + (base + row) * a.n, a.centroids + int64_t(j) * a.n, a.n);
      atomicMin(&exact_s[row], pack_exact(d2, j));
    }
    // Columns of lanes whose third key was inside the window (rare): the warp splits them.
    unsigned scans = __ballot_sync(0xffffffffu, lane < rows && scan_s[lane] != 0);
    while (scans) {
      const int row = __ffs(scans) - 1;
      scans &= scans - 1;
      const float* x = a.points + (base + row) * a.n;
      const unsigned columns = scan_s[row];
      unsigned long long best = ~0ull;
      for (int col = 0; col < 4; ++col) {
        if (!((columns >> col) & 1u)) continue;
        for (int i = lane; i < 2 * ntiles; i += 32) {
          const int j = (i >> 1) * 8 + 2 * col + (i & 1);
          if (j < a.k)
            best = min(best, pack_exact(exact_distance<8 * S>(x, a.centroids + int64_t(j) * a.n, a.n), j));
        }
      }
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) best = min(best, __shfl_xor_sync(0xffffffffu, best, offset));
      if (lane == 0) atomicMin(&exact_s[row], best);
    }
    __syncwarp();
    if (lane < rows && ambiguous_s[lane]) label_s[lane] = int(exact_s[lane] & 0xffffffffu);
    __syncwarp();

    if (lane < rows) {
      const int label = label_s[lane];
      atomicAdd(&counts_s[label], 1u);
      if (a.labels) a.labels[base + lane] = label;
    }
    // Update and inertia, 32 dimensions at a time: lane d adds dimension d of every point
    // (one coalesced FP64 RED per point) and keeps (x_d − c_d)² per point; a transposing
    // butterfly (31 shuffles) then leaves point r's exact squared distance in lane r.
    float partial[32];
#pragma unroll
    for (int row = 0; row < 32; ++row) partial[row] = 0.f;
    for (int d0 = 0; d0 < a.n; d0 += 32) {
      const int d = d0 + lane;
      float centroid_values[32];
#pragma unroll
      for (int row = 0; row < 32; ++row) {
        if (d0 > 0) update_values[row] = row < rows && d < a.n ? __ldg(a.points + (base + row) * a.n + d) : 0.f;
        centroid_values[row] =
            row < rows && d < a.n ? __ldg(a.centroids + int64_t(label_s[row]) * a.n + d) : 0.f;
      }
#pragma unroll
      for (int row = 0; row < 32; ++row) {
        const float e = update_values[row] - centroid_values[row];
        partial[row] = fmaf(e, e, partial[row]);
        if (row < rows && d < a.n) atomicAdd(&a.sums[int64_t(label_s[row]) * a.n + d], double(update_values[row]));
      }
    }
    transpose_sum_level<16>(partial, lane);
    transpose_sum_level<8>(partial, lane);
    transpose_sum_level<4>(partial, lane);
    transpose_sum_level<2>(partial, lane);
    transpose_sum_level<1>(partial, lane);
    if (lane < rows) inertia += double(partial[0]);
    __syncwarp();
    step = next;
  }

#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) inertia += __shfl_xor_sync(0xffffffffu, inertia, offset);
  if (lane == 0 && inertia != 0.0) atomicAdd(a.inertia, inertia);
  __syncthreads();
  for (int i = threadIdx.x; i < a.k; i += blockDim.x)
    if (counts_s[i]) atomicAdd(&a.counts[i], static_cast<unsigned long long>(counts_s[i]));
#else
  __trap();  // unreachable: can_implement refuses devices below sm_80
#endif
}

using KernelFn = void (*)(WindowArgs);

KernelFn kernel_for(int steps) {
  switch (steps) {
    case 1: return tf32_window_kernel<1>;
    case 2: return tf32_window_kernel<2>;
    case 4: return tf32_window_kernel<4>;
    case 6: return tf32_window_kernel<6>;
    case 8: return tf32_window_kernel<8>;
  }
  throw UnsupportedError("tf32-window: no kernel for " + std::to_string(steps) + " k-steps");
}

// Points and centroids are translated by the data mean μ (FP64, rounded once); the bias
// sits above the largest ‖x − μ‖², computed from the same FP32 differences the kernel forms,
// with room for the product's error, so every key is positive.
struct Translation {
  std::vector<float> center;
  float bias = 0.f;
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
  // Keys, exact distances and the bias are FP32, and padding columns carry keys of 1e30:
  // real keys (bias + D² − ‖x − μ‖², at most ~5·largest) must stay well below that.
  constexpr double kLargestNorm2 = 1e28;
  if (!(largest <= kLargestNorm2)) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "tf32-window: the data reach |x - mean|^2 = %.3g, beyond the 1e28 its FP32 keys hold; use "
                  "gemm-tf32x3",
                  largest);
    throw UnsupportedError(text);
  }
  translation.bias = float(1.125 * largest) + FLT_MIN;
  return translation;
}

class Tf32WindowRun : public gpu::GpuRun {
 public:
  Tf32WindowRun(const Problem& problem, const Dataset& data, const Params& params, const DeviceInfo& device,
                const Translation& translation)
      : GpuRun(problem, data, Layout::AoS),
        npad_(padded_dims(problem.n)),
        kpad_(int(padded_centroids(problem.k.kmax))),
        block_(params.at("block").get<int>()),
        kernel_(kernel_for(k_steps(problem.n))) {
    const int n = problem.n;
    const std::vector<float>& center = translation.center;
    bias_ = translation.bias;
    center_.allocate(size_t(n), "tf32-window center");
    image_.allocate(size_t(kpad_) * npad_, "tf32-window centroid image");
    norms_.allocate(size_t(kpad_), "tf32-window centroid norms");
    gpu::check(cudaMemcpyAsync(center_.get(), center.data(), center.size() * sizeof(float), cudaMemcpyHostToDevice,
                               state_.stream()),
               "tf32-window center upload");
    smem_ = size_t(smem_bytes(kpad_, npad_, block_));
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
    model_ = gemm::biased_key_model(npad_, index_bits(kpad_));
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
    args.biased_norms = norms_.get();
    args.center = center_.get();
    args.m = problem.m;
    args.n = problem.n;
    args.k = problem.k.kmax;
    args.kpad = kpad_;
    args.npad = npad_;
    args.bias = bias_;
    args.keep_mask = ~((1u << index_bits(kpad_)) - 1u);
    args.model = model_;
    args.sums = acc.sums;
    args.counts = acc.counts;
    args.inertia = acc.inertia;
    args.labels = acc.labels;
    args.stats = stats_.get();
    args.next_step = next_step_.get();
    gpu::check(cudaMemsetAsync(next_step_.get(), 0, next_step_.bytes(), stream), "tf32-window step counter");
    build_window_image<<<(kpad_ + 127) / 128, 128, 0, stream>>>(args, image_.get(), norms_.get());
    gpu::check_launch("build_window_image");
    kernel_<<<unsigned(grid_), unsigned(block_), smem_, stream>>>(args);
    gpu::check_launch("tf32_window_kernel");
    state_.finalize();
  }

 private:
  int npad_, kpad_, block_;
  KernelFn kernel_;
  int64_t grid_ = 1;
  size_t smem_ = 0;
  float bias_ = 0.f;
  gemm::BiasedKeyModel model_{};
  gpu::DeviceBuffer<float> center_, image_, norms_;
  gpu::DeviceBuffer<unsigned long long> stats_;
  gpu::DeviceBuffer<unsigned long long> next_step_{1, "tf32-window step counter"};
};

class Tf32Window : public Variant {
 public:
  std::string name() const override { return "tf32-window"; }
  std::string description() const override {
    return "one large K (>= 64): 1xTF32 tensor-core distances against a shared-memory centroid table, three "
           "best keys per lane, exact FP32 arbitration of the near-tie window (FP32-faithful labels), FP64 atomic "
           "update";
  }
  bool runs_on_gpu() const override { return true; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    if (device.cc_major < 8) return "needs TF32 tensor cores (CC >= 8.0)";
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
             " index bits in a key; use gemm-tf32x3";
    const int64_t need = smem_bytes(kpad, padded_dims(problem.n), 128);
    if (need > smem_limit(device))
      return "the centroid table needs " + std::to_string(need) + " bytes of shared memory, device allows " +
             std::to_string(smem_limit(device)) + "; use gemm-tf32x3";
    return gpu::check_fits_in_memory(problem, device, double(kpad) * padded_dims(problem.n) * 4.0);
  }

  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    ParamSpace space;
    const int sms = std::max(1, device.sm_count);
    std::vector<nlohmann::json> grids{0};
    for (int factor : {1, 2, 4}) grids.push_back(int64_t(factor) * sms);
    space.axes.push_back({"grid", grids, "blocks; 0 = the resident blocks of every SM (persistent grid)"});
    space.axes.push_back({"block", {128, 256, 384, 512}, "threads per block (32 points per warp and step)"});
    const int64_t kpad = padded_centroids(problem.k.kmax);
    const int npad = padded_dims(problem.n);
    const int64_t limit = smem_limit(device);
    space.restrictions.push_back({"shared memory: centroid table + per-warp scratch fit the per-block limit",
                                  [kpad, npad, limit](const Params& p) {
                                    return smem_bytes(kpad, npad, p.at("block").get<int>()) <= limit;
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
    const int npad = padded_dims(problem.n);
    const int64_t per_sm = device.smem_per_sm > 0 ? device.smem_per_sm : smem_limit(device);
    const int block = 2 * smem_bytes(kpad, npad, 256) <= per_sm ? 256 : 512;
    return {{"grid", 0}, {"block", block}};
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    if (auto reason = can_implement(problem, device)) throw UnsupportedError("tf32-window: " + *reason);
    const Translation translation = translation_for(data);  // refuses data beyond FP32 keys, before any GPU work
    return std::make_unique<Tf32WindowRun>(problem, data, params, device, translation);
  }
};

MKBENCH_REGISTER_VARIANT(Tf32Window);

}  // namespace
}  // namespace mk
