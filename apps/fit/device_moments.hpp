#pragma once
// The data's moments (apps/fit/data_moments.hpp) from points in GPU memory, with the check that
// every value is finite: over a whole array, or piece by piece as rows land from the host, so the
// passes run while the next pieces are copied up instead of after the copy.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "apps/fit/data_moments.hpp"
#include "variants/common/gpu_lloyd_state.cuh"  // gpu::DeviceBuffer

namespace mk {

// data_moments and check_finite of m x n row-major points on the device; the message of a
// non-finite value (InputError) is check_finite's.
DataMoments device_moments(const float* x, int64_t m, int n);

// The same, for rows that arrive in pieces: add(first_row, rows) after each piece's copy is queued
// on `upload`; the passes over it run on a stream of their own once the copy has landed, two
// passes a piece (its mean, then its squared deviations), and finish() merges the pieces' FP64
// sums (Chan, Golub and LeVeque's pairwise update, so no piece's offset cancels the variance).
class LandingMoments {
 public:
  // x: the m x n buffer the pieces land in; at most `pieces` calls of add.
  LandingMoments(const float* x, int64_t m, int n, int64_t pieces, cudaStream_t upload);
  ~LandingMoments();
  LandingMoments(const LandingMoments&) = delete;
  LandingMoments& operator=(const LandingMoments&) = delete;

  void add(int64_t first_row, int64_t rows);
  // Waits for the passes; InputError for a non-finite value, as device_moments.
  DataMoments finish();

 private:
  void release();

  const float* x_;
  int64_t m_;
  int n_;
  int64_t capacity_;
  cudaStream_t upload_;
  cudaStream_t passes_ = nullptr;
  cudaEvent_t landed_ = nullptr;
  std::vector<int64_t> first_rows_, row_counts_;
  gpu::DeviceBuffer<double> sums_;     // per piece: n sums, then n squared deviations
  gpu::DeviceBuffer<unsigned> largest_;
  gpu::DeviceBuffer<unsigned long long> first_bad_;
};

}  // namespace mk
