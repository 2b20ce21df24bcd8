#include "core/device_info.hpp"

#include <cuda_runtime.h>
#include <omp.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>

namespace mk {

int gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::string no_gpu_reason() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (status == cudaErrorInsufficientDriver || status == cudaErrorNoDevice)
    // Without libcuda, cudart reports an "insufficient driver"; name the likely cause first.
    return std::string("no CUDA GPU available (no NVIDIA driver or device on this machine; CUDA runtime says: ") +
           cudaGetErrorString(status) + ")";
  if (status != cudaSuccess) return std::string("no CUDA GPU available (") + cudaGetErrorString(status) + ")";
  if (count == 0) return "no CUDA GPU available (driver reports 0 devices)";
  return "";
}

static std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

DeviceInfo query_host_cpu() {
  DeviceInfo info;
  info.is_gpu = false;
  info.name = "cpu";
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) info.name = line.substr(colon + 2);
      break;
    }
  }
  info.cpu_threads = omp_get_max_threads();
  return info;
}

namespace {

DeviceInfo query_device_properties(int ordinal) {
  DeviceInfo info;
  info.is_gpu = true;
  info.ordinal = ordinal;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, ordinal) != cudaSuccess) {
    cudaGetLastError();
    return query_host_cpu();
  }
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.fp32_lanes_per_sm = fp32_lanes_per_sm(prop.major, prop.minor);
  int clock_khz = 0, mem_clock_khz = 0, bus_bits = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, ordinal);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, ordinal);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, ordinal);
  info.sm_clock_mhz = clock_khz / 1000.0;
  info.mem_clock_mhz = mem_clock_khz / 1000.0;
  info.mem_bus_bits = bus_bits;
  info.global_mem_bytes = int64_t(prop.totalGlobalMem);
  info.l2_bytes = prop.l2CacheSize;
  info.smem_per_block_optin = int64_t(prop.sharedMemPerBlockOptin);
  info.smem_per_sm = int64_t(prop.sharedMemPerMultiprocessor);
  info.regs_per_sm = prop.regsPerMultiprocessor;
  info.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  info.driver = version_text(driver);
  info.runtime = version_text(runtime);
  info.cpu_threads = omp_get_max_threads();
  fill_theoretical_peaks(info);
  return info;
}

}  // namespace

// The properties once per device and process (cudaGetDeviceProperties reads every field of the
// device, and a Python fit's planning asked for them several times); the OpenMP thread count,
// which the process may change, is read afresh.
DeviceInfo query_device(int ordinal) {
  if (gpu_count() <= ordinal) return query_host_cpu();
  static std::mutex mutex;
  static std::map<int, DeviceInfo> known;
  DeviceInfo info;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = known.find(ordinal);
    if (found == known.end()) {
      DeviceInfo queried = query_device_properties(ordinal);
      if (!queried.is_gpu) return queried;  // the host, after a failed query: ask again next time
      found = known.emplace(ordinal, std::move(queried)).first;
    }
    info = found->second;
  }
  info.cpu_threads = omp_get_max_threads();
  return info;
}

}  // namespace mk
