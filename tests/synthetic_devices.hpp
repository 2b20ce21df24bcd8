#pragma once
// Descriptions of real GPUs and a CPU-only host, so every variant's capability checks and
// parameter space can be tested on a machine without a GPU. Values are the published
// properties of the parts.
#include <cstdint>

#include "core/device_info.hpp"
#include "core/problem.hpp"

namespace mk::testing_support {

inline DeviceInfo h100_like() {
  DeviceInfo d;
  d.is_gpu = true;
  d.ordinal = 0;
  d.name = "H100-like (synthetic)";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.fp32_lanes_per_sm = 128;
  d.sm_clock_mhz = 1980;
  d.mem_clock_mhz = 2619;
  d.mem_bus_bits = 5120;
  d.global_mem_bytes = int64_t(80) << 30;
  d.l2_bytes = int64_t(50) << 20;
  d.smem_per_block_optin = 232448;
  d.smem_per_sm = 233472;
  d.regs_per_sm = 65536;
  d.max_threads_per_sm = 2048;
  d.cpu_threads = 16;
  return d;
}

// Named as the driver names it, so slug() is "nvidia-h200" and the committed baselines and
// tuned configs of that GPU apply. Memory, L2 and bus as the H200 of the committed results
// reported them (reports/baselines/nvidia-h200/table1.json: 139.8 GiB, 60 MiB, 6016 bits).
inline DeviceInfo h200() {
  DeviceInfo d = h100_like();
  d.name = "NVIDIA H200";
  d.mem_clock_mhz = 3201;
  d.mem_bus_bits = 6016;
  d.global_mem_bytes = int64_t(150109880320);
  d.l2_bytes = int64_t(60) << 20;
  return d;
}

// Named as the driver names it, so slug() is "nvidia-h100-80gb-hbm3": memory as the H100 of the
// committed results reported it (reports/baselines/nvidia-h100-80gb-hbm3/table1.json: 79.2 GiB).
inline DeviceInfo h100_80gb_hbm3() {
  DeviceInfo d = h100_like();
  d.name = "NVIDIA H100 80GB HBM3";
  d.global_mem_bytes = int64_t(85017493504);
  return d;
}

inline DeviceInfo t4_like() {
  DeviceInfo d = h100_like();
  d.name = "T4-like (synthetic)";
  d.cc_major = 7;
  d.cc_minor = 5;
  d.sm_count = 40;
  d.fp32_lanes_per_sm = 64;
  d.sm_clock_mhz = 1590;
  d.mem_clock_mhz = 5001;
  d.mem_bus_bits = 256;
  d.global_mem_bytes = int64_t(15) << 30;
  d.l2_bytes = int64_t(4) << 20;
  d.smem_per_block_optin = 65536;
  d.smem_per_sm = 65536;
  d.max_threads_per_sm = 1024;
  return d;
}

inline DeviceInfo cpu_only() {
  DeviceInfo d;
  d.is_gpu = false;
  d.name = "CPU-only host (synthetic)";
  d.cpu_threads = 2;
  return d;
}

inline Problem make_problem(int64_t m, int n, int kmin, int kmax, double sparsity = 0.0) {
  Problem p;
  p.m = m;
  p.n = n;
  p.k = KRange{kmin, kmax};
  p.sparsity = sparsity;
  return p;
}

}  // namespace mk::testing_support
