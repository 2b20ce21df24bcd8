#pragma once
// A forward-error bound on FP16 tensor-core keys with *measured* input rounding, shared by
// gemm-window and tf32-window. The key of point x and centroid c_j, in translated
// coordinates scaled by a power of two s (x̃ = (x − μ)·s, c̃_j = (c_j − μ)·s, FP32):
//   key_j = fl32(cn_j + xb) + Σ_steps MMA(x_h · c_h,j)
//   x_h = fp16(x̃),  c_h,j = fp16(−2·c̃_j),  cn_j = fl32(‖c̃_j‖²)
// with xb a per-point bias (gemm-window's, which keeps keys positive for packing; 0 for
// tf32-window's plain keys) and t_j + xb, t_j = ‖c̃_j‖² − 2 x̃·c̃_j, the exact quantity.
// With a = ‖x̃‖ and ‖c̃_j‖ ≤ r:
//   FP16 inputs: x_h = x̃ + δx, c_h/(−2) = c̃_j + δc_j, and
//                |x_h·c_h/(−2) − x̃·c̃_j| ≤ ‖δx‖ r + a ‖δc_j‖ + ‖δx‖ ‖δc_j‖,
//     ‖δx‖ measured per point as it is converted (a float minus its FP16 rounding is exact),
//     ‖δc_j‖ ≤ ρ (‖c̃_j‖ + τ) with ρ measured over the table each iteration (τ keeps
//     centroids whose values are FP16 subnormals from inflating ρ). This is about 2.4×
//     narrower than the worst-case 2^-11 per input of near_tie_bound.hpp's Fp16KeyModel, and
//     covers subnormals by construction.
//   Tensor-core accumulation: n·2^-22 of Σ|x_h c_h| ≤ ‖x_h‖‖c_h‖ ≤ (a + ‖δx‖)·2(r + ‖δc‖),
//     plus (n/8 + 2)·2^-22 of |C| + Σ|x_h c_h| for the FP32 running sums and the C operand.
//   Norms: cn_j errs by ≤ 3u r² (FP32 centring, squares in FP64, one rounding).
//   Packing (gemm-window only): replacing index_bits low mantissa bits moves a key by
//     < 2^(bits−23) of itself.
// Every j with D_j ≤ D_b has ‖c̃_j‖ ≤ a + D_j ≤ a + D_b, and every real centroid has
// ‖c̃_j‖ ≤ R, the table's largest: with r = min(a + D_b, R) its key is at most key_b + 2δ(r)
// (+ packing on both keys): that is the window. D_b is bounded above from the winner's own
// key and error. The cap R matters once Lloyd has pulled the centroids in towards μ: there
// the triangle bound a + D_b is about twice ‖x̃‖ while R is a fraction of it (uniform data in
// many dimensions, whose centroids crowd around the mean), and δ grows with r. The FP32 evaluation of these few terms is covered by
// kWindowSafety, as in near_tie_bound.hpp.
#include <cfloat>
#include <cmath>

#include "variants/common/near_tie_bound.hpp"  // MK_HOST_DEVICE

namespace mk::fp16_keys {

constexpr float kWindowSafety = 1.25f;
constexpr float kUnit = 0x1p-24f;

struct KeyErrorModel {
  float rho = 0;           // ‖δc_j‖ ≤ rho·(‖c̃_j‖ + tau), FP32 centring included
  float tau = 0;
  float acc_products = 0;  // npad·2^-22
  float acc_running = 0;   // (npad/8 + 2)·2^-22
  float norm_rel = 0;      // 3u + u (evaluation)
  float pack_rel = 0;      // 2^(index_bits − 23)
  float largest_cnorm = INFINITY;  // R ≥ every real centroid's ‖c̃_j‖, from the table; ∞ if unknown
};

// The parts of the model fixed by the geometry; rho and tau come from the table each iteration.
inline KeyErrorModel key_error_model(int npad, int index_bits) {
  KeyErrorModel m;
  m.acc_products = float(double(npad) * 0x1p-22);
  m.acc_running = float(double(npad / 8 + 2) * 0x1p-22);
  m.norm_rel = 4.f * kUnit;
  m.pack_rel = std::ldexp(1.f, index_bits - 23);
  return m;
}

// The absolute floor of the centroid residual ratio: values below FP16's normal range
// (2^-14) round with an absolute error ≤ 2^-25 each, so a centroid with ‖c̃‖ ≤ tau = 2^-14·√n
// has ‖δc‖ ≤ 2^-25·√n = 2^-11·tau. Shared by the table kernel and the tests.
MK_HOST_DEVICE inline float residual_floor(int npad) { return 0x1p-14f * sqrtf(float(npad)); }

// An upper bound on √x (x ≥ 0, or NaN through) at a fraction of sqrtf's cost. IEEE sqrtf is a
// multi-instruction sequence with a slow-path branch, and the window's square roots (three a
// row and group, two a row and tile, in every lane that holds the row) were ~15 % of
// gemm-window's instructions on issue 32's 32/64/16M and 64/256/4M rows (ncu source counters,
// H200, 7a298a8). The hardware approximation errs by a few ulps; widened by 2^-16 relative
// and 2^-62 absolute (its flush of inputs below 2^-126 to zero leaves roots below 2^-63) it
// is never below √x. Every use bounds a norm from above, so only "not below" matters, and
// 2^-16 of a norm is nothing next to the window's 2^-11.
MK_HOST_DEVICE inline float sqrt_up(float x) {
#if defined(__CUDA_ARCH__)
  float root;
  asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(root) : "f"(x));
#else
  const float root = std::sqrt(x);
#endif
  return fmaf(root, 1.f + 0x1p-16f, 0x1p-62f);
}

// Bound on |key_j − (t_j + xb)| for any centroid with ‖c̃_j‖ ≤ r. a = ‖x̃‖, ex = ‖δx‖ (upper
// bounds), xb the bias the kernel added.
MK_HOST_DEVICE inline float key_error(float a, float ex, float xb, float r, const KeyErrorModel& m) {
  const float dc = m.rho * (r + m.tau);
  const float dot = 2.f * (ex * r + a * dc + ex * dc);
  const float products = (a + ex) * 2.f * (r + dc);
  const float accumulation = m.acc_products * products + m.acc_running * (r * r + xb + products);
  return dot + accumulation + m.norm_rel * r * r;
}

// Every centroid that could be truly nearer than the key winner has a (packed) key at most
// best_key + this. xn2 ≥ ‖x̃‖², ex ≥ ‖δx‖, best_key the winner's packed key as a float,
// best_cn its stored ‖c̃_b‖².
MK_HOST_DEVICE inline float key_window(float xn2, float ex, float xb, float best_key, float best_cn,
                                 const KeyErrorModel& m) {
  const float a = sqrt_up(fmaxf(xn2, 0.f));
  const float cb = sqrt_up(fmaxf(best_cn, 0.f));
  const float delta_b = key_error(a, ex, xb, cb, m) + m.pack_rel * fabsf(best_key);
  const float db = sqrt_up(fmaxf(best_key - xb + xn2 + delta_b, 0.f));
  const float r = fminf(a + db, m.largest_cnorm);
  const float delta = key_error(a, ex, xb, r, m);
  const float packing = m.pack_rel * 2.f * (fabsf(best_key) + 2.f * delta);
  return kWindowSafety * (2.f * delta + packing) + FLT_MIN;
}

// tf32-window's window for one row of plain keys (no bias, no packing), from the sums a
// kernel forms: xn2 = Σ x̃² and res2 = Σ (x_h − x̃)² in FP32 over n dims. FP32 sums of n squares
// err by ≤ (n + 2)·2^-24 relative and the centring's own rounding moves ‖x̃‖ by ≤ 2^-24 of it
// (as gemm-window's rows). The sweep does not know the winner: best_cn bounds its ‖c̃‖².
MK_HOST_DEVICE inline float plain_key_window(float xn2, float res2, int n, float best_key, float best_cn,
                                             const KeyErrorModel& m) {
  const float widen = 1.f + float(n + 8) * 0x1p-23f;
  const float a_bound = sqrt_up(xn2 * widen) * (1.f + 4.f * kUnit);
  const float ex = sqrt_up(res2 * widen) * (1.f + 4.f * kUnit) + kUnit * a_bound;
  return key_window(a_bound * a_bound, ex, 0.f, best_key, best_cn, m);
}

// R as a kernel uses it, from the table's largest ‖c̃_j‖² (scaled units, an FP32 value within
// half an ulp of an FP64 sum or above it): sqrt_up's 2^-16 widening covers the rounding.
MK_HOST_DEVICE inline float largest_centroid_norm(float largest_cnorm2) { return sqrt_up(fmaxf(largest_cnorm2, 0.f)); }

// ρ as a kernel uses it: the table measured it against the FP32-centred centroids, whose own
// rounding adds ≤ 2^-24 of ‖c̃‖.
MK_HOST_DEVICE inline float measured_rho(float table_ratio) { return table_ratio * (1.f + 4.f * kUnit) + kUnit; }

}  // namespace mk::fp16_keys
