#pragma once
// What the harness knows about the machine a row ran on. A CPU-only machine gets a
// DeviceInfo with is_gpu=false so the CPU baseline and every report still work there.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace mk {

struct Peaks {
  // Theoretical: SM count × FP32 lanes per SM × clock × 2 (FMA), memory bus from properties.
  double fp32_gflops_theoretical = 0;
  double dram_gbps_theoretical = 0;
  // Measured by `mkbench peak` (0 until measured).
  double fp32_gflops_measured = 0;
  double dram_read_gbps_measured = 0;
  double dram_copy_gbps_measured = 0;
  // Host to device from page-locked memory, the roof of out-of-core rows (0 where a cache written
  // before `mkbench peak` measured it is read).
  double h2d_pinned_gbps_measured = 0;
  std::string measured_at;  // ISO date of the measurement, empty if never
};

struct DeviceInfo {
  bool is_gpu = false;
  int ordinal = -1;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int fp32_lanes_per_sm = 0;
  double sm_clock_mhz = 0;
  double mem_clock_mhz = 0;
  int mem_bus_bits = 0;
  int64_t global_mem_bytes = 0;
  int64_t l2_bytes = 0;
  int64_t smem_per_block_optin = 0;
  int64_t smem_per_sm = 0;
  int regs_per_sm = 0;
  int max_threads_per_sm = 0;
  std::string driver;       // "580.159" style, GPU only
  std::string runtime;      // CUDA runtime version
  int cpu_threads = 0;      // OpenMP threads, CPU baseline
  Peaks peaks;

  std::string slug() const;  // "nvidia-h100-80gb-hbm3", "cpu-amd-epyc-..." for file names
  nlohmann::json to_json() const;
};

// The GPU named by ordinal (default: the first), or nullopt-like is_gpu=false description
// of the host CPU when none is present. Never throws for "no GPU".
DeviceInfo query_device(int ordinal = 0);
DeviceInfo query_host_cpu();
int gpu_count();                   // 0 when the driver or device is missing
std::string no_gpu_reason();       // human text for why gpu_count() is 0

int fp32_lanes_per_sm(int cc_major, int cc_minor);
void fill_theoretical_peaks(DeviceInfo& info);

}  // namespace mk
