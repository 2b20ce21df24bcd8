#pragma once
// gemm-window translates points and centroids by the data mean μ before forming FP16 keys:
// distances do not change, ‖x̃‖‖c̃‖ (which sets the key error) shrinks, and with it the
// share of points that need exact arbitration. Computed once, on the host, while preparing.
#include <vector>

#include "datasets/dataset.hpp"

namespace mk::gemm_window {

struct Translation {
  std::vector<float> center;       // μ, FP64 mean rounded once
  float largest_norm2 = 0.f;       // max ‖x − μ‖² from the FP32 differences the kernel forms, widened
};

// Throws UnsupportedError for data whose squared spread leaves FP32's range (exact distances
// are rounded to FP32 for the arbitration) or is not finite.
Translation translation_for(const Dataset& data);

// The same range check for centroids a caller sets (‖c − μ‖² within the data's limits).
void check_centroid_range(const std::vector<float>& packed, int n, const std::vector<float>& center);

}  // namespace mk::gemm_window
