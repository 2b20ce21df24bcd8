#pragma once
// The engines behind subset_engine() (variants/subset_batch/subset_batch.hpp).
#include "variants/subset_batch/subset_batch.hpp"

namespace mk::batch {

const SubsetBatchEngine& cpu_subset_engine();   // cpu_engine.cpp
const SubsetBatchEngine& cuda_subset_engine();  // cuda_engine.cu

}  // namespace mk::batch
