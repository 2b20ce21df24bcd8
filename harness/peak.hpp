#pragma once
// Measured machine peaks (`mkbench peak`): FP32 FMA rate, DRAM read bandwidth, device-to-device
// copy bandwidth and pinned host-to-device bandwidth, cached per device so every run can quote
// them.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device_info.hpp"

namespace mk {

struct PeakMeasurement {
  double fp32_gflops = 0;
  double dram_read_gbps = 0;
  double dram_copy_gbps = 0;
  double h2d_pinned_gbps = 0;  // 0 where no pinned buffer could be had
  // Each run's value, so a reader can judge the spread.
  std::vector<double> fp32_runs, read_runs, copy_runs, h2d_runs;
  int64_t read_buffer_bytes = 0;
  int64_t h2d_bytes = 0;
  std::string measured_at;  // ISO date

  nlohmann::json to_json() const;
};

// Measures on the current CUDA device (select it first). DeviceError on CUDA failure.
// `runs` >= 1: the reported value is the median of the runs.
PeakMeasurement measure_peaks(const DeviceInfo& device, int runs = 7);

// Cache root: $MKBENCH_CACHE_DIR, else $XDG_CACHE_HOME/mkbench, else ~/.cache/mkbench.
std::string cache_root();
// <cache root>/peaks/<slug>.json
std::string peak_cache_path(const DeviceInfo& device);

// Copies a measurement into device.peaks (measured fields and measured_at).
void apply_peaks(const PeakMeasurement& measurement, DeviceInfo& device);
// Atomic write of {"device":..., "peaks":...} to peak_cache_path(device).
void save_cached_peaks(const DeviceInfo& device, const PeakMeasurement& measurement);
// Fills device.peaks from the cache; false when there is no (readable) cache entry.
bool load_cached_peaks(DeviceInfo& device);

// What `mkbench run` and suites do: use the cache; with a GPU and nothing cached,
// measure once (saying so on stderr) and cache. Never fails the caller: a failed
// measurement is reported on stderr and the peaks stay 0.
void ensure_measured_peaks(DeviceInfo& device, bool allow_measure = true);

}  // namespace mk
