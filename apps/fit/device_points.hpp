#pragma once
// A fit on points that already live in GPU memory: the Python package's CuPy and torch.cuda
// arrays (docs/python.md, "Device arrays"). The points reach the run through one
// device-to-device copy into the buffer a streamed run writes its points to
// (PreparedRun::points_slot, the out-of-core path's seam), so no byte of them crosses to the
// host. Everything fit_k_range computes from the points on the host is done on the device
// instead: the data moments (per-feature mean and variance for tol, the largest |x| for the
// rounding floor), the non-finite check, and the seeding (k-means++ on those points; first and
// random gather their K rows). Only the K seed rows, the per-step summaries and the final
// labels and centres come back.
#include <cstdint>
#include <memory>

#include "apps/fit/data_moments.hpp"
#include "apps/fit/fit.hpp"
#include "core/device_info.hpp"
#include "variants/variant.hpp"

namespace mk {

// An M x N matrix of float32 or float64 in device memory, with strides in elements (C order:
// row_stride = N, col_stride = 1; Fortran order: row_stride = 1, col_stride = M).
struct DevicePoints {
  const void* data = nullptr;
  bool float64 = false;
  int64_t m = 0;
  int n = 0;
  int64_t row_stride = 0;
  int64_t col_stride = 1;
  // The producer's stream (__cuda_array_interface__'s "stream"): 0 none, 1 the legacy default
  // stream, 2 the per-thread default stream, else a cudaStream_t; waited on before the copy.
  uintptr_t stream = 0;
  // C-ordered float32 rows in host memory (a NumPy array): one host-to-device copy into the
  // run's buffer through the device's pinned ring (variants/common/pinned_staging.hpp), then
  // everything as for device memory.
  bool on_host = false;
};

// The CUDA ordinal whose memory holds `pointer`; InputError when it is host memory (or not
// memory CUDA knows).
int device_of_pointer(const void* pointer);

// Bytes of points this process copied between host and device and within devices, for the
// Python package's fits: the test of "no host copy" reads them.
struct PointCopyCounters {
  int64_t host_to_device = 0;
  int64_t device_to_device = 0;
};
PointCopyCounters& point_copy_counters();

struct DeviceFit {
  KFit fit;
  double tol_threshold = 0;
  FitSeconds seconds;
  double copy_seconds = 0;  // the copy into the run (device to device, or the upload of host rows)
  int restart = 0;          // the seeding of settings.n_init that this K's fit came from
  DataMoments moments;      // the points' (the K-choice scores' Calinski-Harabasz needs them)
};

// `run` was prepared on a streamed problem of exactly points.m x points.n (settings.k one K or
// a range) on `device`, which holds the points. settings.init is "first", "random", "k-means++"
// or, with settings.initial_centroids, the given centres. The best of settings.n_init seedings
// by inertia (one for given centres). InputError for NaN/Inf (the CLI's message, row and
// column) and for points on another device.
std::vector<DeviceFit> fit_device_points(const DevicePoints& points, PreparedRun& run, const FitSettings& settings,
                                         const DeviceInfo& device);

}  // namespace mk
