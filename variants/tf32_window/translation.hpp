#pragma once
// Points and centroids are translated by the data mean μ (FP64, rounded once): distances do
// not change, but the keys' error window scales with |x||c|, which shrinks (4x for uniform
// [0,1) data), and with it the share of points that need an exact distance. The largest
// ‖x − μ‖², computed from the same FP32 differences the kernel forms, bounds the data.
#include <vector>

#include "datasets/dataset.hpp"

namespace mk::tf32_window {

struct Translation {
  std::vector<float> center;
  float largest = 0.f;  // max ‖x − μ‖²: with the centroids', it sets the FP16 scale
};

// Throws UnsupportedError for data whose squared spread FP32 cannot carry (above 1e28 or
// below 1e-30), before any GPU work.
Translation translation_for(const Dataset& data);

}  // namespace mk::tf32_window
