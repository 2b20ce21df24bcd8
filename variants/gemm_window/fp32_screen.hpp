#pragma once
// The settle kernel's FP32 screen: a queued row's candidates measured first with FP32 sums
// (FADD + FFMA a dimension), and the FP64 distances computed only where the FP32 ones do not
// prove which candidate the FP64 path would pick. On the H200 the FP64 path was bound by its
// conversions: F2F.F64.F32 (16 a clock an SM, a quarter of DADD's rate) was 19 % of the settle
// kernel's 0.94G instructions and 64 % of its stall samples at 768/1000/1M (ncu source
// counters, dc9e545).
//
// Why the screen's answer is the FP64 path's (u = 2^-24, all terms ≥ 0):
// - A term (x_d − c_d)² of the FP32 sum sees the difference's rounding twice (it is squared),
//   at most L roundings of its lane's FMA chain (L ≤ 4⌈n/128⌉: two chains of two dims a float4
//   piece, or one chain of ⌈n/32⌉ single dims), one where the chains meet and five in the
//   warp's butterfly, so D̂ = Σ t_d·(1 + θ_d) with |θ_d| ≤ γ_k, k = L + 8, γ_k = ku/(1 − ku);
//   results below FP32's normal range add at most 2^-150 a rounding (η covers 2n + 256 of them).
// - So D ∈ [(D̂ − η)/(1 + γ), (D̂ + η)/(1 − γ)]. Where the runner-up's lower end exceeds the
//   smallest's upper end by a factor 1 + 2^-21 and 2^-147 more, the two exact distances (and
//   the FP64 path's, which err by ~k·2^-53) are at least two FP32 units apart: their FP32
//   roundings differ, so the FP64 path's packed minimum (rounded to FP32, lower index on equal
//   values) is the screen's smallest, whatever the indices.
// - A NaN or infinite sum, a tie, or a single candidate decides nothing: the FP64 path runs.
// - η assumes FP32 results below the normal range are kept, not flushed to zero: the build's
//   CUDA flags (CMakeLists.txt) have neither -ftz=true nor --use_fast_math.
// GemmWindowScreen.* checks the rule against FP64 distances on emulated near ties.
#include <cfloat>

#include "variants/gemm_window/config.hpp"

namespace mk::gemm_window {

// k of the bound above for n dimensions over 32 lanes.
MK_GW_HD constexpr int screen_roundings(int n) { return 4 * ((n + 127) / 128) + 8; }

// True when FP32 sums `smallest` < `runner_up` (the two smallest of a row's candidates) prove
// that the candidate with `smallest` is the FP64 path's label.
MK_GW_HD inline bool screen_decides(float smallest, float runner_up, int n) {
  if (!(smallest <= FLT_MAX) || !(runner_up <= FLT_MAX)) return false;  // NaN, infinite or absent
  const double k = double(screen_roundings(n)) * 0x1p-24;
  const double gamma = k / (1.0 - k);
  const double eta = (2.0 * n + 256.0) * 0x1p-150;
  const double upper_smallest = (double(smallest) + eta) / (1.0 - gamma);
  const double lower_runner_up = (double(runner_up) - eta) / (1.0 + gamma);
  return lower_runner_up > upper_smallest * (1.0 + 0x1p-21) + 0x1p-147;
}

}  // namespace mk::gemm_window
