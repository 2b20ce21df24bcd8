#pragma once
// The FP16 centroid table gemm-window's kernel streams, rebuilt from the state's FP32
// centroids every iteration (two small kernels on the run's stream).
#include <cuda_fp16.h>

#include <cstdint>

#include "variants/gemm_window/config.hpp"

namespace mk::gemm_window {

struct TableArgs {
  const float* centroids;  // the state's slots × n
  const float* center;     // μ
  const GroupInfo* groups;  // device copy
  int group_count;
  int n, npad, bn, total_columns, slots;
  float largest_point_norm2;
  __half* table;       // total_columns × npad: fp16(−2·(c − μ)·scale), zero padding, laid out by table_offset
  float* norms;        // total_columns: ‖(c − μ)·scale‖², 1e30 for padding columns
  unsigned* scalars;   // {largest ‖c − μ‖², residual ratio ρ} as float bits; zeroed before
};

// scalars must be zero when called (the caller's memset on the same stream).
void build_table(const TableArgs& args, void* stream);

}  // namespace mk::gemm_window
