#pragma once
// tensor-multik's data preparation on the host and device: the FP16 update's point scale, and
// operands=prepared's centre μ, key bias and fragment words (built once per run).
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "datasets/dataset.hpp"

namespace mk::tensor_multik {

// The power of two the FP16 update multiplies points by (1 when none is needed).
float point_scale_for_update(const Dataset& data);

// Each column's mean, in FP64 over fixed blocks of rows (the same μ whatever the thread count).
std::vector<float> column_means(const Dataset& data);

// group_min=int's key bias: the mean of ‖x − μ‖² over the rows.
double mean_centred_square(const Dataset& data, const std::vector<float>& mean);

// operands=prepared's fragment words and ‖x'‖² of `steps` 32-point steps of the device points
// (rows × n floats), launched on `stream`; see prepared_operands.cu for the layout.
void launch_build_prepared_operands(const float* points, int64_t m, int n, int64_t steps, float x_scale,
                                    const float* shift, uint4* words, float* norms, cudaStream_t stream);

}  // namespace mk::tensor_multik
