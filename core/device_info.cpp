// DeviceInfo's plain-data side (names, JSON, peaks from properties), apart from the CUDA
// queries in device_info.cu so readers of result files link without the CUDA runtime.
#include "core/device_info.hpp"

#include <cctype>

namespace mk {

int fp32_lanes_per_sm(int cc_major, int cc_minor) {
  // FP32 lanes per SM by architecture (CUDA programming guide throughput table).
  if (cc_major == 7) return 64;                     // Volta, Turing
  if (cc_major == 8 && cc_minor == 0) return 64;    // A100
  if (cc_major == 8) return 128;                    // GA10x, Ada
  if (cc_major >= 9) return 128;                    // Hopper, Blackwell
  if (cc_major == 6 && cc_minor == 0) return 64;
  return 128;
}

void fill_theoretical_peaks(DeviceInfo& info) {
  if (!info.is_gpu) return;
  info.peaks.fp32_gflops_theoretical =
      double(info.sm_count) * info.fp32_lanes_per_sm * info.sm_clock_mhz * 1e6 * 2.0 / 1e9;
  // Double data rate: two transfers per memory clock over the bus.
  info.peaks.dram_gbps_theoretical = 2.0 * info.mem_clock_mhz * 1e6 * (info.mem_bus_bits / 8.0) / 1e9;
}

std::string DeviceInfo::slug() const {
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += char(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (!is_gpu) out = "cpu-" + out;
  return out.empty() ? "unknown" : out;
}

nlohmann::json DeviceInfo::to_json() const {
  return {{"is_gpu", is_gpu},
          {"name", name},
          {"slug", slug()},
          {"ordinal", ordinal},
          {"compute_capability", std::to_string(cc_major) + "." + std::to_string(cc_minor)},
          {"sm_count", sm_count},
          {"fp32_lanes_per_sm", fp32_lanes_per_sm},
          {"sm_clock_mhz", sm_clock_mhz},
          {"mem_clock_mhz", mem_clock_mhz},
          {"mem_bus_bits", mem_bus_bits},
          {"global_mem_bytes", global_mem_bytes},
          {"l2_bytes", l2_bytes},
          {"smem_per_block_optin", smem_per_block_optin},
          {"driver", driver},
          {"cuda_runtime", runtime},
          {"cpu_threads", cpu_threads},
          {"peaks",
           {{"fp32_gflops_theoretical", peaks.fp32_gflops_theoretical},
            {"dram_gbps_theoretical", peaks.dram_gbps_theoretical},
            {"fp32_gflops_measured", peaks.fp32_gflops_measured},
            {"dram_read_gbps_measured", peaks.dram_read_gbps_measured},
            {"dram_copy_gbps_measured", peaks.dram_copy_gbps_measured},
            {"h2d_pinned_gbps_measured", peaks.h2d_pinned_gbps_measured},
            {"measured_at", peaks.measured_at}}}};
}

}  // namespace mk
