#pragma once
// Why gemm-window's FP16 keys still give FP32-faithful labels: a forward-error bound on each
// key, from which a per-point window follows. A centroid that could be truly nearer than the
// key winner has a key inside the window; a point whose window holds only its winner is
// settled by the keys, the others are re-decided by exact distances.
//
// gemm-window's keys start from fl32(‖c̃_j‖² + xb), with xb a per-point bias ≥ (1 + 2^-6)·‖x̃‖²,
// so every key is positive and its float bits order like the keys: the centroid index
// replaces the low mantissa bits (the packing term of the bound). The bound, with FP16
// rounding measured per point and over the table: variants/common/fp16_key_error.hpp.
#include <cfloat>
#include <cmath>

#include "variants/common/fp16_key_error.hpp"
#include "variants/gemm_window/config.hpp"

namespace mk::gemm_window {

// The bound itself lives in variants/common/fp16_key_error.hpp (tf32-window uses it too).
using fp16_keys::key_error;
using fp16_keys::key_error_model;
using fp16_keys::key_window;
using fp16_keys::KeyErrorModel;
using fp16_keys::kUnit;
using fp16_keys::kWindowSafety;
using fp16_keys::residual_floor;
using fp16_keys::sqrt_up;

constexpr float kBiasMargin = 0x1p-6f;  // xb = (1 + margin)·‖x̃‖²: keys stay positive

// The power of two that brings every translated value below 2^14 in magnitude (so −2c stays
// below 2^15 and finite in FP16) with as much of FP16's normal range as possible in use:
// largest_norm2 bounds ‖x̃‖² and ‖c̃‖² before scaling.
MK_GW_HD inline float scale_for(float largest_norm2) {
  if (!(largest_norm2 > 0.f)) return 1.f;
  int exponent = 0;
  frexpf(largest_norm2, &exponent);  // largest_norm2 < 2^exponent, so every |value| < 2^ceil(exponent/2)
  return ldexpf(1.f, 14 - ((exponent + 1) >> 1));
}

}  // namespace mk::gemm_window
