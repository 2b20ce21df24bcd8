#pragma once
// Why GEMM-based variants still return FP32-faithful labels.
//
// They rank centroids by the expansion e_j = ‖c_j‖² − 2·x·c_j (‖x‖² is common to every j
// and dropped). Computed in floating point, e_j carries an error δ_j that can reorder two
// centroids whose true distances are close. The bound below is a forward-error bound on
// δ_j for every centroid that could possibly beat the computed winner b; when the
// runner-up's expansion lies within δ_j + δ_b of the winner's, the point is a "near tie"
// and the caller recomputes Σ(x−c)² exactly (FP64 from the FP32 inputs) for every centroid
// of that K. Outside the window the computed winner is provably the true nearest centroid.
//
// Derivation (u = 2^-24, a = ‖x‖, t_j the exact expansion, D_j = ‖x − c_j‖):
//   dot_j  = x·c_j + α_j,  |α_j| ≤ ε_dot · Σ_d |x_d c_jd| ≤ ε_dot · a · ‖c_j‖
//   cn_j   = ‖c_j‖² (1 + β_j), |β_j| ≤ ε_norm         (norms summed in FP64, rounded once)
//   e_j    = fl(cn_j − 2 dot_j) (one FMA rounding, ≤ u relative)
//   ⇒ |e_j − t_j| ≤ (ε_norm + u) ‖c_j‖² + 2 (ε_dot + u) a ‖c_j‖   (to first order)
// Any centroid j with D_j ≤ D_b satisfies ‖c_j‖ ≤ a + D_j ≤ a + D_b =: r, and so does b.
// D_b² = t_b + a² ≤ e_b + δ_b + a², with δ_b evaluated at ‖c_b‖. Hence every relevant j has
// δ_j ≤ E(r) := (ε_norm + u) r² + 2 (ε_dot + u) a r, and a centroid that is truly nearer than
// b must have e_j − e_b ≤ δ_j + δ_b ≤ 2 E(r). The window is 2 E(r) times a safety factor that
// covers second-order terms and the float evaluation of the bound itself.
//
// ε_dot per arithmetic (relative to Σ|x_d c_d|, n = number of products):
//   fp32 (cuBLAS SGEMM, any summation order/FMA/split-K): γ_n = n u / (1 − n u).
//   tf32 in cuBLAS: inputs may be truncated to 10 mantissa bits (2^-10 each), so the product
//     errs by 2·2^-10 + 2^-20; accumulation modelled as n·2^-22 (twice the γ of a truncating
//     FP32 adder, because tensor cores align and truncate the summands of each block).
//   tf32 in our kernel: inputs rounded to nearest (cvt.rna semantics), 2·2^-11 + 2^-22,
//     accumulation as above.
//   3xTF32 (a ≈ a_hi + a_lo, product ≈ a_hi b_hi + a_hi b_lo + a_lo b_hi): the dropped a_lo b_lo
//     and the rounding of a_lo, b_lo leave ≤ 3.01·2^-22 per product; partial products of
//     11-bit significands are exact; 3n accumulated terms give 3n·2^-22.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define MK_HOST_DEVICE __host__ __device__
#else
#define MK_HOST_DEVICE
#endif

namespace mk::gemm {

constexpr double kUnitRoundoff = 0x1p-24;
// Covers second-order terms (products of two ε) and rounding in the float evaluation of the
// window; the first-order bound is already rigorous.
constexpr float kWindowSafety = 1.25f;

enum class DotArithmetic { Fp32, CublasTf32, Tf32, Tf32x3 };

inline const char* to_string(DotArithmetic arithmetic) {
  switch (arithmetic) {
    case DotArithmetic::Fp32: return "fp32";
    case DotArithmetic::CublasTf32: return "cublas-tf32";
    case DotArithmetic::Tf32: return "tf32";
    case DotArithmetic::Tf32x3: return "tf32x3";
  }
  return "?";
}

// Bound on |computed x·c − x·c| / Σ_d |x_d c_d| for a dot product over n dimensions.
inline double dot_relative_error(DotArithmetic arithmetic, int n) {
  const double u = kUnitRoundoff;
  const double terms = double(n);
  switch (arithmetic) {
    case DotArithmetic::Fp32: {
      const double nu = terms * u;
      return nu < 0.5 ? nu / (1.0 - nu) : INFINITY;
    }
    case DotArithmetic::CublasTf32:
      return 2.0 * 0x1p-10 + 0x1p-20 + terms * 0x1p-22;
    case DotArithmetic::Tf32:
      return 2.0 * 0x1p-11 + 0x1p-22 + terms * 0x1p-22;
    case DotArithmetic::Tf32x3:
      return 3.01 * 0x1p-22 + 3.0 * terms * 0x1p-22;
  }
  return INFINITY;
}

struct ExpansionErrorModel {
  float dot_rel = 0;   // ε_dot
  float norm_rel = 0;  // ε_norm: relative error of the stored ‖c‖²
};

inline ExpansionErrorModel expansion_error_model(DotArithmetic arithmetic, int n) {
  ExpansionErrorModel model;
  model.dot_rel = float(dot_relative_error(arithmetic, n));
  model.norm_rel = float(kUnitRoundoff);  // FP64 sum rounded once to FP32
  return model;
}

// The quantities both windows below share: a = ‖x‖, r = a + D_b (every centroid that could
// beat the winner has ‖c‖ ≤ r) and the ε terms widened by one rounding of their own
// evaluation. best_e is the winner's expansion ‖c_b‖² − 2x·c_b as computed.
struct WindowTerms {
  float a, r, norm_rel, dot_rel;
};

MK_HOST_DEVICE inline WindowTerms window_terms(float x_norm2, float best_e, float best_cnorm2, float dot_rel,
                                               float norm_rel) {
  const float u = float(kUnitRoundoff);
  WindowTerms terms;
  terms.norm_rel = norm_rel + u;
  terms.dot_rel = dot_rel + u;
  terms.a = sqrtf(fmaxf(x_norm2, 0.f));
  const float cb2 = fmaxf(best_cnorm2, 0.f);
  const float delta_b = terms.norm_rel * cb2 + 2.f * terms.dot_rel * terms.a * sqrtf(cb2);
  const float d_b = sqrtf(fmaxf(best_e + x_norm2 + delta_b, 0.f));
  terms.r = terms.a + d_b;
  return terms;
}

// Width of the near-tie window for one point: if second_e − best_e exceeds it, the
// computed winner is the exact nearest centroid. Arguments are the point's ‖x‖², the
// winner's expansion e_b and the winner's stored ‖c_b‖².
MK_HOST_DEVICE inline float near_tie_window(float x_norm2, float best_e, float best_cnorm2,
                                            ExpansionErrorModel model) {
  const WindowTerms t = window_terms(x_norm2, best_e, best_cnorm2, model.dot_rel, model.norm_rel);
  const float delta = t.norm_rel * t.r * t.r + 2.f * t.dot_rel * t.a * t.r;
  return kWindowSafety * 2.f * delta + FLT_MIN;
}

// tf32-window's FP16 two-pass sweep ranks centroids by key_j = ‖c_j‖² + Σ_d fp16(x_d)·fp16(−2c_j,d),
// in translated coordinates scaled by a power of two so every input lies below 2^14 in
// magnitude. FP16 keeps the 11-bit significand of TF32, so the relative terms are those of a
// TF32 product (DotArithmetic::Tf32); its subnormals add an absolute rounding of at most 2^-25 per input (half the
// spacing 2^-24), which over N products reaches 2^-25·√N·(‖x‖ + 2‖c‖) in a key. The keys
// carry no bias and no index bits: the sweep compares plain floats.
struct Fp16KeyModel {
  float dot_rel = 0;         // ε_dot of one FP16 product sum
  float norm_rel = 0;        // relative error of the stored ‖c‖²
  float accumulate_rel = 0;  // per unit of |C| + the running sums, over all MMAs
  float abs_rel = 0;         // the subnormal term, per unit of ‖x‖ + 2‖c‖
};

inline Fp16KeyModel fp16_key_model(int padded_dims) {
  Fp16KeyModel model;
  // Inputs rounded to nearest with 11-bit significands: the TF32 kernel's ε_dot.
  model.dot_rel = float(dot_relative_error(DotArithmetic::Tf32, padded_dims));
  model.norm_rel = float(kUnitRoundoff);
  // An m16n8k16 step truncates its sum once (2^-22 relative), like a TF32 k-step; counting
  // one truncation per 8 dimensions (plus two) over-covers the half as many steps.
  model.accumulate_rel = float((padded_dims / 8 + 2) * 0x1p-22);
  model.abs_rel = float(1.01 * 0x1p-25 * std::sqrt(double(padded_dims)));
  return model;
}

// Every centroid that could be truly nearer than the sweep's smallest key has a key at most
// best_key + this width. The sweep does not know the winner's index, so ‖c_b‖ is bounded by
// the largest stored ‖c‖² (max_cnorm2): a wider D_b, never a narrower window.
MK_HOST_DEVICE inline float fp16_key_window(float xn2, float best_key, float max_cnorm2, Fp16KeyModel model) {
  const WindowTerms t = window_terms(xn2, best_key, max_cnorm2, model.dot_rel, model.norm_rel);
  const float delta = t.norm_rel * t.r * t.r + 2.f * t.dot_rel * t.a * t.r +
                      model.accumulate_rel * (t.r * t.r + 2.f * t.a * t.r) + model.abs_rel * (t.a + 2.f * t.r);
  return kWindowSafety * 2.f * delta + FLT_MIN;
}

// Round to binary16 (nearest, ties to even, subnormals kept, overflow to ±Inf) and back:
// what __float2half_rn gives the kernel, written portably for the host tests.
inline float fp16_round(float value) {
  if (!std::isfinite(value)) return value;
  const float magnitude = std::fabs(value);
  if (magnitude >= 65520.f) return std::copysign(INFINITY, value);
  if (magnitude == 0.f) return value;
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude in [2^(exponent-1), 2^exponent)
  const float spacing = std::ldexp(1.f, std::max(exponent - 11, -24));
  return std::copysign(std::nearbyint(magnitude / spacing) * spacing, value);
}

// Round to TF32 (10 explicit mantissa bits), nearest with ties away from zero: the
// semantics of cvt.rna.tf32.f32, written portably so host tests and sm_75 builds share it.
// The low 13 bits of the result are zero, so tensor cores read it unchanged.
MK_HOST_DEVICE inline float tf32_round(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7f800000u) != 0x7f800000u) {  // leave Inf/NaN alone
    bits += 0x1000u;
    bits &= 0xffffe000u;
  }
  float out;
  memcpy(&out, &bits, sizeof out);
  return out;
}

}  // namespace mk::gemm
