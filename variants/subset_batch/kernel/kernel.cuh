// The subset-batch kernels (variants/subset_batch/subset_batch.hpp), compiled by NVRTC for one
// (S_COLS, K_CLUSTERS, N_ATTRS, CLASSES) shape: variants/subset_batch/cuda_engine.cu prepends
// the #defines of config.cuh and includes this file.
#pragma once
#include "config.cuh"
#include "assign.cuh"
#include "accumulate.cuh"
#include "label_pass.cuh"
#include "update.cuh"
