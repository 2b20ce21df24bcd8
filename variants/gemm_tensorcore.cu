// gemm-tf32x3: the GEMM-distance idea (seed 001 §4.4, seed 003 §6.1) fused into one
// tensor-core kernel. A block keeps points_per_block points resident in shared memory and
// streams the centroids of each K through it in chunks; warps compute x·c with
// mma.sync.m16n8k8 TF32, and the epilogue folds ‖c‖² − 2x·c into a running best and
// second-best per point, so the M × ΣK distance matrix never exists.
//
// precision=tf32x3 (default) splits every operand a = a_hi + a_lo (a_hi = tf32(a),
// a_lo = tf32(a − a_hi)) and sums a_hi·b_hi + a_hi·b_lo + a_lo·b_hi: dot products accurate to
// ~3n·2^-22 relative, close to FP32. precision=tf32 uses a single TF32 product (~2^-10
// relative): three times fewer mma, but a far wider near-tie window. In both modes labels are
// exact: points whose best and second-best are within the forward-error window of
// near_tie_bound.hpp are re-checked in FP64 against every centroid of that K.
//
// update picks how the FP64 sums are formed: global (an atomicAdd per point and dimension),
// smem (the same into block-private shared memory, flushed per block), or sorted, the default
// (the kernel only writes labels; a CUB radix sort per K groups points by label and
// accumulate_sorted_runs adds one partial per run of equal labels, so the atomics scale with
// M/1024 + K instead of M).
//
// Geometry (per block): points_per_block (P) rows, 32 rows per warp in M (two m16 tiles), the
// remaining warps split the centroid chunk (C columns) in N; each warp holds P/32 × C/WN
// accumulators. Dimensions are zero-padded to a multiple of 8 (≤ 32) or 32 (> 32) and centroid
// dims are staged 32 at a time, so any N whose point tile fits in shared memory works.
// Needs sm_80+ (TF32 mma); the kernel body is compiled out for older targets.
#include <algorithm>
#include <cub/device/device_radix_sort.cuh>

#include "variants/common/argmin_update.cuh"

namespace mk {
namespace tensorcore {

// D += A·B for one m16n8k8 TF32 tile. Fragment ownership (g = lane/4, t = lane%4):
// A a0:(g,t) a1:(g+8,t) a2:(g,t+4) a3:(g+8,t+4); B b0:(k=t,n=g) b1:(k=t+4,n=g);
// D d0:(g,2t) d1:(g,2t+1) d2:(g+8,2t) d3:(g+8,2t+1).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();  // unreachable: can_implement refuses devices below sm_80
#endif
}

}  // namespace tensorcore

namespace {

using gemm::ExpansionErrorModel;
using gemm::Top2;

constexpr int64_t kMaxSlots = 65536;

struct DimGeometry {
  int npad;  // padded dimensions held per point
  int kc;    // centroid dimensions staged per pass (divides npad)
};

DimGeometry dim_geometry(int n) {
  if (n <= 32) {
    const int npad = (n + 7) / 8 * 8;
    return {npad, npad};
  }
  return {(n + 31) / 32 * 32, 32};
}

MK_HOST_DEVICE inline int64_t align16(int64_t bytes) { return (bytes + 15) & ~int64_t(15); }

// Byte offsets into dynamic shared memory; host (sizing) and device (carving) share it.
struct FusedSmemLayout {
  int64_t xs_hi, xs_lo, cs_hi, cs_lo, cnorm, xnorm, merge_best, merge_second, merge_index, recheck_list,
      recheck_count, total;
};

MK_HOST_DEVICE inline FusedSmemLayout fused_smem_layout(int points_per_block, int chunk, int warps_n, int npad,
                                                        int kc, bool split, int64_t accumulator_bytes) {
  // Row strides of npad+4 and kc+4 floats (≡ 4 mod 8) make the fragment loads, 8 rows × 4
  // columns per warp, hit 32 distinct banks.
  const int64_t xs = int64_t(points_per_block) * (npad + 4) * 4;
  const int64_t cs = int64_t(chunk) * (kc + 4) * 4;
  FusedSmemLayout l;
  int64_t offset = align16(accumulator_bytes);
  l.xs_hi = offset;
  offset = align16(offset + xs);
  l.xs_lo = offset;
  if (split) offset = align16(offset + xs);
  l.cs_hi = offset;
  offset = align16(offset + cs);
  l.cs_lo = offset;
  if (split) offset = align16(offset + cs);
  l.cnorm = offset;
  offset = align16(offset + int64_t(chunk) * 4);
  l.xnorm = offset;
  offset = align16(offset + int64_t(points_per_block) * 4);
  l.merge_best = offset;
  offset = align16(offset + int64_t(warps_n) * points_per_block * 4);
  l.merge_second = offset;
  offset = align16(offset + int64_t(warps_n) * points_per_block * 4);
  l.merge_index = offset;
  offset = align16(offset + int64_t(warps_n) * points_per_block * 4);
  l.recheck_list = offset;
  offset = align16(offset + int64_t(points_per_block) * 4);
  l.recheck_count = offset;
  offset = align16(offset + 4);
  l.total = offset;
  return l;
}

struct FusedArgs {
  gpu::PointsView points;
  const float* centroids;  // packed slots × n, the exact values (re-check, exact distances)
  const float* c_hi;       // slots × npad, tf32(c)
  const float* c_lo;       // slots × npad, tf32(c − c_hi); unused for precision=tf32
  const float* norms;      // slots
  gpu::KRangeView ks;
  gpu::AccumulatorView acc;
  ExpansionErrorModel model;
  int npad, kc;
  int points_per_block, chunk, warps_m, warps_n;
  bool private_sums;
  int32_t* sorted_labels;  // update=sorted: [k - kmin][i] labels the sort reads; else null
  int64_t tiles;
};

__global__ void split_centroids_tf32(const float* __restrict__ centroids, int slots, int n, int npad, bool split,
                                     float* __restrict__ hi, float* __restrict__ lo) {
  const int64_t total = int64_t(slots) * npad;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = idx / npad;
    const int d = int(idx - s * npad);
    const float v = d < n ? centroids[s * n + d] : 0.f;
    const float h = gemm::tf32_round(v);
    hi[idx] = h;
    if (split) lo[idx] = gemm::tf32_round(v - h);  // v − h is exact in FP32
  }
}

template <int NT, bool SPLIT>
__global__ void __launch_bounds__(256, NT >= 8 ? 1 : 2) fused_tf32_assign_update(FusedArgs args) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(16) unsigned char smem[];
  const gpu::PointsView points = args.points;
  const gpu::KRangeView ks = args.ks;
  const int n = points.n;
  const int npad = args.npad, kc = args.kc;
  const int P = args.points_per_block, C = args.chunk;
  const int xs_stride = npad + 4, cs_stride = kc + 4;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warps = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int warp_m = warp % args.warps_m, warp_n = warp / args.warps_m;
  const int warp_col0 = warp_n * NT * 8;

  const gemm::UpdateTargets targets = gemm::carve_update_targets(smem, ks, n, args.private_sums, args.acc);
  const FusedSmemLayout layout =
      fused_smem_layout(P, C, args.warps_n, npad, kc, SPLIT, gemm::update_target_bytes(ks, n, args.private_sums));
  float* xs_hi = reinterpret_cast<float*>(smem + layout.xs_hi);
  float* xs_lo = reinterpret_cast<float*>(smem + layout.xs_lo);
  float* cs_hi = reinterpret_cast<float*>(smem + layout.cs_hi);
  float* cs_lo = reinterpret_cast<float*>(smem + layout.cs_lo);
  float* cnorm_s = reinterpret_cast<float*>(smem + layout.cnorm);
  float* xnorm_s = reinterpret_cast<float*>(smem + layout.xnorm);
  float* merge_best = reinterpret_cast<float*>(smem + layout.merge_best);
  float* merge_second = reinterpret_cast<float*>(smem + layout.merge_second);
  int* merge_index = reinterpret_cast<int*>(smem + layout.merge_index);
  int* recheck_list = reinterpret_cast<int*>(smem + layout.recheck_list);
  int* recheck_count = reinterpret_cast<int*>(smem + layout.recheck_count);
  if (tid == 0) *recheck_count = 0;
  __syncthreads();

  for (int64_t tile = blockIdx.x; tile < args.tiles; tile += gridDim.x) {
    const int64_t first = tile * P;
    // Stage the point tile once, split into TF32 hi/lo. Rows past M and padded dimensions
    // are zero, so they add nothing to any dot product.
    for (int idx = tid; idx < P * npad; idx += blockDim.x) {
      int r, d;
      if (points.soa) {  // consecutive threads read consecutive points of one dimension
        d = idx / P;
        r = idx - d * P;
      } else {
        r = idx / npad;
        d = idx - r * npad;
      }
      const int64_t i = first + r;
      const float v = (i < points.m && d < n) ? points.at(i, d) : 0.f;
      const float hi = gemm::tf32_round(v);
      xs_hi[r * xs_stride + d] = hi;
      if (SPLIT) xs_lo[r * xs_stride + d] = gemm::tf32_round(v - hi);
    }
    for (int r = tid; r < P; r += blockDim.x) {
      const int64_t i = first + r;
      float norm2 = 0.f;
      if (i < points.m)
        for (int d = 0; d < n; ++d) {
          const float v = points.at(i, d);
          norm2 = fmaf(v, v, norm2);
        }
      xnorm_s[r] = norm2;
    }
    // The first centroid stage's __syncthreads() publishes the point tile.

    for (int k = ks.kmin; k <= ks.kmax; ++k) {
      const int base = ks.offset(k);
      Top2 top[2][2];  // [m tile][row g or g+8]
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) top[mt][0] = top[mt][1] = gemm::top2_empty();

      for (int c0 = 0; c0 < k; c0 += C) {
        float acc[2][NT][4];
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int v = 0; v < 4; ++v) acc[mt][nt][v] = 0.f;

        for (int d0 = 0; d0 < npad; d0 += kc) {
          // Stage centroids c0..c0+C of this K, dimensions d0..d0+kc; slots past k are zero.
          const int vectors_per_row = kc / 4;
          for (int idx = tid; idx < C * vectors_per_row; idx += blockDim.x) {
            const int c = idx / vectors_per_row;
            const int q = idx - c * vectors_per_row;
            float4 hi = make_float4(0.f, 0.f, 0.f, 0.f), lo = hi;
            if (c0 + c < k) {
              const int64_t offset = int64_t(base + c0 + c) * npad + d0 + q * 4;
              hi = *reinterpret_cast<const float4*>(args.c_hi + offset);
              if (SPLIT) lo = *reinterpret_cast<const float4*>(args.c_lo + offset);
            }
            *reinterpret_cast<float4*>(cs_hi + c * cs_stride + q * 4) = hi;
            if (SPLIT) *reinterpret_cast<float4*>(cs_lo + c * cs_stride + q * 4) = lo;
          }
          if (d0 == 0)
            for (int c = tid; c < C; c += blockDim.x) cnorm_s[c] = c0 + c < k ? args.norms[base + c0 + c] : 0.f;
          __syncthreads();

          for (int kk = 0; kk < kc; kk += 8) {
            uint32_t a_hi[2][4], a_lo[2][4];
#pragma unroll
            for (int mt = 0; mt < 2; ++mt) {
              const int row = warp_m * 32 + mt * 16 + g;
              const int at = row * xs_stride + d0 + kk + t;
              a_hi[mt][0] = __float_as_uint(xs_hi[at]);
              a_hi[mt][1] = __float_as_uint(xs_hi[at + 8 * xs_stride]);
              a_hi[mt][2] = __float_as_uint(xs_hi[at + 4]);
              a_hi[mt][3] = __float_as_uint(xs_hi[at + 8 * xs_stride + 4]);
              if (SPLIT) {
                a_lo[mt][0] = __float_as_uint(xs_lo[at]);
                a_lo[mt][1] = __float_as_uint(xs_lo[at + 8 * xs_stride]);
                a_lo[mt][2] = __float_as_uint(xs_lo[at + 4]);
                a_lo[mt][3] = __float_as_uint(xs_lo[at + 8 * xs_stride + 4]);
              }
            }
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
              const int bt = (warp_col0 + nt * 8 + g) * cs_stride + kk + t;
              const uint32_t b_hi0 = __float_as_uint(cs_hi[bt]);
              const uint32_t b_hi1 = __float_as_uint(cs_hi[bt + 4]);
              uint32_t b_lo0 = 0, b_lo1 = 0;
              if (SPLIT) {
                b_lo0 = __float_as_uint(cs_lo[bt]);
                b_lo1 = __float_as_uint(cs_lo[bt + 4]);
              }
#pragma unroll
              for (int mt = 0; mt < 2; ++mt) {
                if (SPLIT) {  // small terms first, so they are not swamped before the big one
                  tensorcore::mma_tf32(acc[mt][nt], a_lo[mt], b_hi0, b_hi1);
                  tensorcore::mma_tf32(acc[mt][nt], a_hi[mt], b_lo0, b_lo1);
                }
                tensorcore::mma_tf32(acc[mt][nt], a_hi[mt], b_hi0, b_hi1);
              }
            }
          }

          if (d0 + kc >= npad) {
            // Epilogue while cnorm_s still holds this chunk: columns in increasing centroid
            // order per thread, so equal values keep the lowest index.
#pragma unroll
            for (int mt = 0; mt < 2; ++mt)
#pragma unroll
              for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int j = 0; j < 2; ++j) {
                  const int col = warp_col0 + nt * 8 + 2 * t + j;
                  const int c = c0 + col;
                  if (c < k) {
                    const float cn = cnorm_s[col];
                    gemm::top2_offer(top[mt][0], fmaf(-2.f, acc[mt][nt][j], cn), c);
                    gemm::top2_offer(top[mt][1], fmaf(-2.f, acc[mt][nt][2 + j], cn), c);
                  }
                }
          }
          __syncthreads();  // before the next stage overwrites cs_* and cnorm_s
        }
      }

      // Rows are spread over the 4 lanes of a quad (columns 2t, 2t+1) and over warp_n.
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          gemm::top2_merge_lanes(top[mt][h], 1);
          gemm::top2_merge_lanes(top[mt][h], 2);
          if (t == 0) {
            const int row = warp_m * 32 + mt * 16 + h * 8 + g;
            merge_best[warp_n * P + row] = top[mt][h].best;
            merge_second[warp_n * P + row] = top[mt][h].second;
            merge_index[warp_n * P + row] = top[mt][h].index;
          }
        }
      __syncthreads();

      // One thread per point: decide, then update the clear winners; near ties are queued
      // for the warps below.
      double inertia_part = 0;
      for (int r = tid; r < P; r += blockDim.x) {
        const int64_t i = first + r;
        if (i >= points.m) continue;
        Top2 s{merge_best[r], merge_second[r], merge_index[r]};
        for (int w = 1; w < args.warps_n; ++w)
          gemm::top2_merge(s, merge_best[w * P + r], merge_index[w * P + r], merge_second[w * P + r]);
        if (gemm::is_near_tie(s, xnorm_s[r], args.norms[base + s.index], args.model)) {
          recheck_list[atomicAdd(recheck_count, 1)] = r;
          continue;
        }
        const int slot = base + s.index;
        const int64_t label_at = int64_t(k - ks.kmin) * points.m + i;
        inertia_part += gemm::exact_squared_distance(points, i, args.centroids + int64_t(slot) * n, n);
        if (args.sorted_labels) args.sorted_labels[label_at] = s.index;
        else gemm::add_point(points, i, slot, n, targets);
        if (args.acc.labels) args.acc.labels[label_at] = s.index;
      }
      inertia_part = gemm::warp_sum(inertia_part);
      if (lane == 0 && inertia_part != 0.0) atomicAdd(targets.inertia + (k - ks.kmin), inertia_part);
      __syncthreads();

      // Near ties: a warp per point scans every centroid of this K exactly.
      const int pending = *recheck_count;
      for (int e = warp; e < pending; e += warps) {
        const int64_t i = first + recheck_list[e];
        const gemm::ExactChoice choice =
            gemm::warp_exact_argmin(points, i, args.centroids + int64_t(base) * n, k, n);
        if (!args.sorted_labels) gemm::warp_add_point(points, i, base + choice.index, n, targets);
        if (lane == 0) {
          const int64_t label_at = int64_t(k - ks.kmin) * points.m + i;
          atomicAdd(targets.inertia + (k - ks.kmin), choice.distance);
          if (args.sorted_labels) args.sorted_labels[label_at] = choice.index;
          if (args.acc.labels) args.acc.labels[label_at] = choice.index;
        }
      }
      __syncthreads();  // merge_*, recheck_* and (after the last K) the point tile are reused
      if (tid == 0) *recheck_count = 0;  // next read is behind at least one more barrier
    }
  }
  __syncthreads();
  gemm::flush_update_targets(targets, ks, n, args.private_sums, args.acc);
#endif
}

// update=sorted: a warp owns kSortedPiece consecutive entries of the label-sorted order and
// adds one FP64 partial per run of equal labels it sees, so a K costs about
// (M/kSortedPiece + K)·N atomics instead of M·N. 1024 gives M = 2M about 16 warps per H100
// SM to hide the gathers; the extra atomics are still negligible.
constexpr int kSortedPiece = 1024;
constexpr int kSortedWarps = 8;

__global__ void fill_iota(int32_t* __restrict__ out, int64_t m) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < m; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = int32_t(i);
}

// labels/order: one K's labels sorted ascending and the point each came from. Lanes map to
// dimensions, so a 32-dimension group re-walks the piece. AoS reads one row segment per
// point; SoA reads are uncoalesced here (stride M between lanes).
__global__ void __launch_bounds__(kSortedWarps * 32) accumulate_sorted_runs(const int32_t* __restrict__ labels,
                                                                           const int32_t* __restrict__ order,
                                                                           gpu::PointsView points, int base,
                                                                           gpu::AccumulatorView acc) {
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int64_t begin = (int64_t(blockIdx.x) * kSortedWarps + (threadIdx.x >> 5)) * kSortedPiece;
  if (begin >= points.m) return;  // whole warp
  const int64_t end = begin + kSortedPiece < points.m ? begin + kSortedPiece : points.m;
  const int n = points.n;
  for (int d0 = 0; d0 < n; d0 += 32) {
    const int d = d0 + lane;
    int label = -1;
    int run = 0;
    double sum = 0;
    auto flush = [&] {
      if (d < n) atomicAdd(acc.sums + int64_t(base + label) * n + d, sum);
      if (d0 == 0 && lane == 0) atomicAdd(acc.counts + base + label, static_cast<unsigned long long>(run));
    };
    for (int64_t j0 = begin; j0 < end; j0 += 32) {
      const int count = end - j0 < 32 ? int(end - j0) : 32;
      const int my_label = lane < count ? labels[j0 + lane] : -1;
      const int my_point = lane < count ? order[j0 + lane] : 0;
      // All 32 loads are issued before the run logic consumes them: the walk is serial, the
      // gathers need not be.
      float v[32];
#pragma unroll
      for (int e = 0; e < 32; ++e) {
        const int i = __shfl_sync(full, my_point, e);
        v[e] = (d < n && e < count) ? points.at(i, d) : 0.f;
      }
#pragma unroll
      for (int e = 0; e < 32; ++e) {
        const int key = __shfl_sync(full, my_label, e);
        if (e < count) {  // key and count are warp-uniform, so are these branches
          if (key != label) {
            if (run > 0) flush();
            label = key;
            run = 0;
            sum = 0;
          }
          sum += double(v[e]);
          ++run;
        }
      }
    }
    if (run > 0) flush();
  }
}

// Radix-sort bits for labels 0..k-1 (at least one).
int label_bits(int k) {
  int bits = 1;
  while (bits < 31 && (int64_t(1) << bits) < k) ++bits;
  return bits;
}

using FusedKernel = void (*)(FusedArgs);

FusedKernel pick_kernel(int n_tiles, bool split) {
  switch (n_tiles) {
    case 1: return split ? fused_tf32_assign_update<1, true> : fused_tf32_assign_update<1, false>;
    case 2: return split ? fused_tf32_assign_update<2, true> : fused_tf32_assign_update<2, false>;
    case 4: return split ? fused_tf32_assign_update<4, true> : fused_tf32_assign_update<4, false>;
    case 8: return split ? fused_tf32_assign_update<8, true> : fused_tf32_assign_update<8, false>;
    default: break;
  }
  throw UnsupportedError("gemm-tf32x3: no kernel for " + std::to_string(n_tiles) + " n-tiles per warp");
}

enum class Update { Global, Smem, Sorted };

Update parse_update(const std::string& text) {
  if (text == "global") return Update::Global;
  if (text == "smem") return Update::Smem;
  if (text == "sorted") return Update::Sorted;
  throw InputError("gemm-tf32x3: unknown update '" + text + "' (expected global, smem or sorted)");
}

struct FusedConfig {
  int points_per_block;
  int chunk;
  int block;
  bool split;
  Update update;
  Layout layout;

  explicit FusedConfig(const Params& params)
      : points_per_block(params.at("points_per_block").get<int>()),
        chunk(params.at("centroid_chunk").get<int>()),
        block(params.at("block").get<int>()),
        split(params.at("precision").get<std::string>() == "tf32x3"),
        update(parse_update(params.at("update").get<std::string>())),
        layout(parse_layout(params.at("layout").get<std::string>())) {}

  bool private_sums() const { return update == Update::Smem; }
  int warps() const { return block / 32; }
  int warps_m() const { return points_per_block / 32; }
  int warps_n() const { return std::max(1, warps() / warps_m()); }
  int n_tiles() const { return chunk / (8 * warps_n()); }

  int64_t smem_bytes(const Problem& problem) const {
    const DimGeometry dims = dim_geometry(problem.n);
    return fused_smem_layout(points_per_block, chunk, warps_n(), dims.npad, dims.kc, split,
                             gemm::block_accumulator_bytes(problem, private_sums()))
        .total;
  }
};

class FusedTf32Run : public gpu::GpuRun {
 public:
  FusedTf32Run(const Problem& problem, const Dataset& data, const Params& params, const DeviceInfo& device)
      : GpuRun(problem, data, FusedConfig(params).layout), config_(params), dims_(dim_geometry(problem.n)) {
    const int slots = problem.k.sum();
    c_hi_.allocate(size_t(slots) * dims_.npad, "tf32 centroid hi parts");
    if (config_.split) c_lo_.allocate(size_t(slots) * dims_.npad, "tf32 centroid lo parts");
    norms_.allocate(slots, "centroid norms");
    model_ = gemm::expansion_error_model(config_.split ? gemm::DotArithmetic::Tf32x3 : gemm::DotArithmetic::Tf32,
                                         dims_.npad);
    kernel_ = pick_kernel(config_.n_tiles(), config_.split);
    smem_bytes_ = size_t(config_.smem_bytes(problem));
    gpu::check(cudaFuncSetAttribute(kernel_, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_bytes_)),
               "fused_tf32_assign_update shared memory");
    int blocks_per_sm = 0;
    gpu::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel_, config_.block, smem_bytes_),
               "fused_tf32_assign_update occupancy");
    if (blocks_per_sm < 1)
      throw UnsupportedError("gemm-tf32x3: kernel cannot be resident with " + std::to_string(smem_bytes_) +
                             " bytes of shared memory");
    tiles_ = (problem.m + config_.points_per_block - 1) / config_.points_per_block;
    grid_ = int(std::min<int64_t>(tiles_, int64_t(blocks_per_sm) * std::max(1, device.sm_count)));
    if (config_.update == Update::Sorted) prepare_sorted(problem);
  }

  void iterate(bool store_labels) override {
    const Problem& problem = state_.problem();
    const int slots = problem.k.sum();
    const cudaStream_t stream = state_.stream();
    state_.zero_accumulators();
    gemm::launch_centroid_squared_norms(state_.centroids(), slots, problem.n, norms_.get(), stream);
    const int64_t values = int64_t(slots) * dims_.npad;
    const int split_grid = int(std::min<int64_t>((values + 255) / 256, 4096));
    split_centroids_tf32<<<split_grid, 256, 0, stream>>>(state_.centroids(), slots, problem.n, dims_.npad,
                                                          config_.split, c_hi_.get(), c_lo_.get());
    gpu::check_launch("split_centroids_tf32");

    FusedArgs args;
    args.points = state_.points();
    args.centroids = state_.centroids();
    args.c_hi = c_hi_.get();
    args.c_lo = c_lo_.get();
    args.norms = norms_.get();
    args.ks = state_.k_range();
    args.acc = state_.accumulators(store_labels);
    args.model = model_;
    args.npad = dims_.npad;
    args.kc = dims_.kc;
    args.points_per_block = config_.points_per_block;
    args.chunk = config_.chunk;
    args.warps_m = config_.warps_m();
    args.warps_n = config_.warps_n();
    args.private_sums = config_.private_sums();
    args.sorted_labels = config_.update == Update::Sorted ? labels_by_k_.get() : nullptr;
    args.tiles = tiles_;
    kernel_<<<grid_, config_.block, smem_bytes_, stream>>>(args);
    gpu::check_launch("fused_tf32_assign_update");
    if (config_.update == Update::Sorted) accumulate_sorted(args.points, args.ks, args.acc);
    state_.finalize();
  }

 private:
  // Buffers and CUB scratch for update=sorted, sized once: the sort of the largest K needs
  // the most temporary storage, and every K reuses it.
  void prepare_sorted(const Problem& problem) {
    if (problem.m > INT32_MAX) throw UnsupportedError("gemm-tf32x3: update=sorted needs M < 2^31");
    const size_t m = size_t(problem.m);
    labels_by_k_.allocate(size_t(problem.k.count()) * m, "sorted update: labels per K");
    iota_.allocate(m, "sorted update: point indices");
    sorted_labels_.allocate(m, "sorted update: sorted labels");
    sorted_points_.allocate(m, "sorted update: sorted point indices");
    size_t temp_bytes = 0;
    for (int bits = label_bits(problem.k.kmin); bits <= label_bits(problem.k.kmax); ++bits) {
      size_t bytes = 0;
      gpu::check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, labels_by_k_.get(), sorted_labels_.get(),
                                                 iota_.get(), sorted_points_.get(), int(problem.m), 0, bits,
                                                 state_.stream()),
                 "sorted update: radix sort size query");
      temp_bytes = std::max(temp_bytes, bytes);
    }
    sort_temp_.allocate(temp_bytes, "sorted update: radix sort scratch");
    const int grid = int(std::min<int64_t>((problem.m + 255) / 256, 4096));
    fill_iota<<<grid, 256, 0, state_.stream()>>>(iota_.get(), problem.m);
    gpu::check_launch("fill_iota");
  }

  void accumulate_sorted(const gpu::PointsView& points, const gpu::KRangeView& ks, const gpu::AccumulatorView& acc) {
    const cudaStream_t stream = state_.stream();
    const int64_t pieces = (points.m + kSortedPiece - 1) / kSortedPiece;
    const int grid = int((pieces + kSortedWarps - 1) / kSortedWarps);
    for (int k = ks.kmin; k <= ks.kmax; ++k) {
      size_t temp_bytes = sort_temp_.bytes();
      gpu::check(cub::DeviceRadixSort::SortPairs(sort_temp_.get(), temp_bytes,
                                                 labels_by_k_.get() + int64_t(k - ks.kmin) * points.m,
                                                 sorted_labels_.get(), iota_.get(), sorted_points_.get(),
                                                 int(points.m), 0, label_bits(k), stream),
                 "sorted update: radix sort");
      accumulate_sorted_runs<<<grid, kSortedWarps * 32, 0, stream>>>(sorted_labels_.get(), sorted_points_.get(),
                                                                      points, ks.offset(k), acc);
      gpu::check_launch("accumulate_sorted_runs");
    }
  }

  FusedConfig config_;
  DimGeometry dims_;
  gpu::DeviceBuffer<float> c_hi_, c_lo_, norms_;
  gpu::DeviceBuffer<int32_t> labels_by_k_, iota_, sorted_labels_, sorted_points_;  // update=sorted only
  gpu::DeviceBuffer<unsigned char> sort_temp_;
  ExpansionErrorModel model_;
  FusedKernel kernel_ = nullptr;
  size_t smem_bytes_ = 0;
  int64_t tiles_ = 0;
  int grid_ = 1;
};

class GemmTf32x3 : public Variant {
 public:
  std::string name() const override { return "gemm-tf32x3"; }
  std::string description() const override {
    return "seed 001 §4.4 fused: mma.sync TF32 (3xTF32 split) distances, argmin epilogue, exact near-tie "
           "re-check, FP64 update (global or shared atomics, or label sort + per-run sums)";
  }
  bool runs_on_gpu() const override { return true; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    if (problem.streamed) return kRefuseStreamed;
    if (device.cc_major < 8)
      return "needs compute capability >= 8.0 for TF32 mma (device is " + std::to_string(device.cc_major) + "." +
             std::to_string(device.cc_minor) + ")";
    const int64_t slots = gemm::k_slot_sum(problem.k);
    if (slots > kMaxSlots)
      return "sum of K over the range is " + std::to_string(slots) + "; gemm-tf32x3 supports at most " +
             std::to_string(kMaxSlots) + " centroid slots";
    if (param_space(problem, device).enumerate().empty()) {
      Params smallest = {{"points_per_block", 64}, {"centroid_chunk", 32}, {"block", 128},
                         {"precision", "tf32"},    {"update", "global"},   {"layout", "aos"}};
      return "N=" + std::to_string(problem.n) + " is too wide: the resident point tile needs " +
             std::to_string(FusedConfig(smallest).smem_bytes(problem)) + " bytes of shared memory, the device allows " +
             std::to_string(device.smem_per_block_optin) + " (gemm-cublas has no such limit)";
    }
    // update=sorted's extra buffers are a restriction of the space, not a refusal: global
    // and smem need no more than this.
    return gpu::check_fits_in_memory(problem, device, centroid_copy_bytes(problem));
  }

  DeviceFootprint device_footprint(const Problem& problem, const Params& params, const DeviceInfo& device,
                                   bool with_labels) const override {
    DeviceFootprint footprint = Variant::device_footprint(problem, params, device, with_labels);
    footprint.add("TF32 centroid copies", centroid_copy_bytes(problem));
    if (params.is_object() && params.value("update", std::string()) == "sorted")
      footprint.add("sorted-update buffers", sorted_update_bytes(problem));
    return footprint;
  }

  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    ParamSpace space;
    space.axes.push_back({"points_per_block", {64, 128}, "points resident per block (32 per warp row)"});
    space.axes.push_back({"centroid_chunk", {32, 64, 128}, "centroids staged through shared memory per step"});
    space.axes.push_back({"block", {128, 256}, "threads per block"});
    space.axes.push_back({"precision", {"tf32x3", "tf32"},
                          "3xTF32 split (near-FP32 dots) or single TF32 (wider re-check window); labels exact "
                          "in both"});
    space.axes.push_back({"update", {"global", "smem", "sorted"},
                          "centroid sums: global FP64 atomics, block-private shared FP64 then flush, or labels "
                          "radix-sorted per K then one FP64 atomic per run of equal labels"});
    space.axes.push_back({"layout", {"aos", "soa"}, "point layout in device memory"});

    space.restrictions.push_back(
        {"centroid_chunk*points_per_block <= 64*block (at most 8 n-tiles, 64 accumulators per thread)",
         [](const Params& p) {
           return p.at("centroid_chunk").get<int>() * p.at("points_per_block").get<int>() <=
                  64 * p.at("block").get<int>();
         }});
    const int kmax = problem.k.kmax;
    space.restrictions.push_back(
        {"centroid_chunk/2 < max K unless it is the smallest chunk (larger chunks only add padded centroids)",
         [kmax](const Params& p) {
           const int chunk = p.at("centroid_chunk").get<int>();
           return chunk == 32 || chunk / 2 < kmax;
         }});
    const Problem copy = problem;
    const int64_t limit = device.smem_per_block_optin;
    space.restrictions.push_back(
        {"shared memory (point tile, centroid chunk, accumulators if update=smem) <= " + std::to_string(limit) +
             " bytes per block",
         [copy, limit](const Params& p) { return FusedConfig(p).smem_bytes(copy) <= limit; }});
    const bool sorted_fits = problem.m <= INT32_MAX &&
                             !gpu::check_fits_in_memory(problem, device,
                                                        centroid_copy_bytes(problem) + sorted_update_bytes(problem));
    space.restrictions.push_back(
        {"update=sorted needs M < 2^31 (int32 point indices in the sort) and device memory for its label buffers",
         [sorted_fits](const Params& p) { return p.at("update") != "sorted" || sorted_fits; }});
    return space;
  }

 private:
  // The TF32 hi/lo centroid copies and norms.
  static double centroid_copy_bytes(const Problem& problem) {
    return double(gemm::k_slot_sum(problem.k)) * (2.0 * dim_geometry(problem.n).npad + 1.0) * 4.0;
  }
  // update=sorted: labels per K, iota, sorted keys and indices, and CUB scratch (its own
  // key/value copies plus a little).
  static double sorted_update_bytes(const Problem& problem) {
    const double m = double(problem.m);
    return (double(problem.k.count()) * m + 5.0 * m) * 4.0 + double(1 << 20);
  }

 public:

  // 128 points × 64 centroids with 8 warps (4 n-tiles per warp) balances fragment reuse
  // against registers; 3xTF32 by default because its re-check window is ~40x narrower than
  // single TF32's. update=sorted everywhere it can run: on the H200 (commit 69bf0de, every row
  // --verify PASS) it beat smem 1.7-4.8x at ΣK ≤ 128 (N=16 K=3..7 M=32M 202 -> 41.7 ms;
  // N=8 K=16 M=8M 4.23 -> 2.46 ms; shared FP64 atomics are CAS loops that contend on few
  // slots), beat global 2.3x on the K=3..20 range (73.5 -> 31.4 ms) and was within 8 % of
  // global for one large K (K=256 N=8 M=8M 5.27 vs 5.72; K=1024 N=32 M=2M 12.24 vs 11.76).
  // global stays the fallback (M ≥ 2^31) and, with smem, a point the tuner may pick.
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    const std::string update = "sorted";
    const ParamSpace space = param_space(problem, device);
    Params params = {{"points_per_block", 128}, {"centroid_chunk", 64}, {"block", 256},
                     {"precision", "tf32x3"},   {"update", update},     {"layout", "aos"}};
    if (!space.check(params)) return params;
    for (const std::string& try_update : {update, std::string("global"), std::string("smem")})
      for (int ppb : {128, 64})
        for (int chunk : {64, 32, 128})
          for (int block : {256, 128}) {
            Params candidate = {{"points_per_block", ppb}, {"centroid_chunk", chunk}, {"block", block},
                                {"precision", "tf32x3"},   {"update", try_update},    {"layout", "aos"}};
            if (!space.check(candidate)) return candidate;
          }
    const auto legal = space.enumerate();
    return legal.empty() ? params : legal.front();
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    if (auto reason = can_implement(problem, device)) throw UnsupportedError("gemm-tf32x3: " + *reason);
    return std::make_unique<FusedTf32Run>(problem, data, params, device);
  }
};

MKBENCH_REGISTER_VARIANT(GemmTf32x3);

}  // namespace
}  // namespace mk
