#include "harness/peak.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/errors.hpp"
#include "harness/results.hpp"

namespace mk {

namespace {

void cuda_check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  throw DeviceError(std::string("peak measurement, ") + what + ": " + cudaGetErrorName(status) + " (" +
                    cudaGetErrorString(status) + ")");
}

constexpr int kFmaChains = 16;
constexpr int kFmaBlock = 256;
constexpr int kReadBlock = 512;
constexpr int kReadUnroll = 4;

// Independent chains keep every FMA pipe busy without waiting on the previous result;
// the final comparison makes the result observable so nothing is optimised away.
__global__ void __launch_bounds__(kFmaBlock) fma_throughput(float* out, float a, float b, int iterations) {
  float x[kFmaChains];
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) x[c] = float(threadIdx.x) * 1e-3f + float(c);
  // Unrolled so loop bookkeeping is a few percent of the issued instructions.
#pragma unroll 8
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int c = 0; c < kFmaChains; ++c) x[c] = fmaf(x[c], a, b);
  }
  float sum = 0.f;
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) sum += x[c];
  if (sum == -1.2345f) out[blockIdx.x] = sum;
}

// Several loads in flight per thread saturate DRAM with one resident wave of blocks.
__global__ void __launch_bounds__(kReadBlock) read_reduce(const float4* __restrict__ data, size_t count,
                                                          float* __restrict__ out) {
  __shared__ float partial[kReadBlock / 32];
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float sum = 0.f;
  for (; i + (kReadUnroll - 1) * stride < count; i += kReadUnroll * stride) {
    float4 v[kReadUnroll];
#pragma unroll
    for (int u = 0; u < kReadUnroll; ++u) v[u] = data[i + u * stride];
#pragma unroll
    for (int u = 0; u < kReadUnroll; ++u) sum += (v[u].x + v[u].y) + (v[u].z + v[u].w);
  }
  for (; i < count; i += stride) {
    float4 v = data[i];
    sum += (v.x + v.y) + (v.z + v.w);
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.f;
    for (int w = 0; w < kReadBlock / 32; ++w) total += partial[w];
    out[blockIdx.x] = total;
  }
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

class EventTimer {
 public:
  explicit EventTimer(cudaStream_t stream) : stream_(stream) {
    cuda_check(cudaEventCreate(&start_), "cudaEventCreate");
    cuda_check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  void start() { cuda_check(cudaEventRecord(start_, stream_), "cudaEventRecord"); }
  double stop_ms() {
    cuda_check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop_), "kernel");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

struct DeviceMemory {
  void* ptr = nullptr;
  ~DeviceMemory() {
    if (ptr) cudaFree(ptr);
  }
};

struct Stream {
  cudaStream_t handle = nullptr;
  Stream() { cuda_check(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(handle); }
};

// One warm-up, then `runs` timed calls of `once`: `amount` (FLOPs or bytes) / time, in G/s.
template <typename Once>
std::vector<double> rates_of(EventTimer& timer, cudaStream_t stream, int runs, double amount, const char* what,
                             Once once) {
  once();
  cuda_check(cudaStreamSynchronize(stream), what);
  std::vector<double> rates;
  for (int r = 0; r < runs; ++r) {
    timer.start();
    once();
    rates.push_back(amount / (timer.stop_ms() * 1e-3) / 1e9);
  }
  return rates;
}

int resident_blocks(const void* kernel, int block, int sm_count) {
  int per_sm = 0;
  cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, 0), "occupancy query");
  return std::max(1, per_sm) * std::max(1, sm_count);
}

}  // namespace

nlohmann::json PeakMeasurement::to_json() const {
  return {{"fp32_gflops", fp32_gflops},       {"dram_read_gbps", dram_read_gbps},
          {"dram_copy_gbps", dram_copy_gbps}, {"h2d_pinned_gbps", h2d_pinned_gbps},
          {"fp32_runs", fp32_runs},           {"read_runs", read_runs},
          {"copy_runs", copy_runs},           {"h2d_runs", h2d_runs},
          {"read_buffer_bytes", read_buffer_bytes}, {"h2d_bytes", h2d_bytes},
          {"measured_at", measured_at}};
}

PeakMeasurement measure_peaks(const DeviceInfo& device, int runs) {
  if (!device.is_gpu) throw UnsupportedError("peak measurement needs a CUDA GPU: " + no_gpu_reason());
  runs = std::max(1, runs);
  cuda_check(cudaSetDevice(device.ordinal), "cudaSetDevice");
  PeakMeasurement result;
  result.measured_at = utc_today();
  Stream stream;
  EventTimer timer(stream.handle);

  // FP32: size the loop for ~30 ms at the theoretical rate so launch overhead is noise.
  {
    const int blocks = resident_blocks(reinterpret_cast<const void*>(fma_throughput), kFmaBlock, device.sm_count);
    DeviceMemory sink;
    cuda_check(cudaMalloc(&sink.ptr, sizeof(float) * blocks), "cudaMalloc");
    const double threads = double(blocks) * kFmaBlock;
    const double flops_per_iteration = 2.0 * kFmaChains * threads;
    const double target = std::max(1e3, device.peaks.fp32_gflops_theoretical) * 1e9 * 0.03;
    const int iterations = int(std::clamp(target / flops_per_iteration, 1024.0, 1e7)) / 8 * 8;
    auto launch = [&] {
      fma_throughput<<<blocks, kFmaBlock, 0, stream.handle>>>(static_cast<float*>(sink.ptr), 0.9999f, 1e-4f,
                                                               iterations);
      cuda_check(cudaGetLastError(), "fma_throughput launch");
    };
    result.fp32_runs =
        rates_of(timer, stream.handle, runs, flops_per_iteration * iterations, "fma_throughput", launch);
    result.fp32_gflops = median_of(result.fp32_runs);
  }

  // DRAM: a buffer far larger than L2 (2-4 GiB when memory allows), read once per run.
  {
    size_t free_bytes = 0, total_bytes = 0;
    cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    const size_t cap = size_t(4) << 30;
    size_t bytes = std::min(cap, free_bytes / 3);
    bytes = std::max(bytes, std::min(free_bytes / 2, size_t(64) << 20));
    bytes &= ~size_t(1024 * 1024 - 1);  // whole MiB keeps both halves 16-byte aligned
    if (bytes < (size_t(16) << 20)) throw DeviceError("peak measurement: not enough free GPU memory");
    result.read_buffer_bytes = int64_t(bytes);
    DeviceMemory buffer;
    cuda_check(cudaMalloc(&buffer.ptr, bytes), "cudaMalloc read buffer");
    cuda_check(cudaMemsetAsync(buffer.ptr, 0, bytes, stream.handle), "cudaMemset");
    const int blocks = resident_blocks(reinterpret_cast<const void*>(read_reduce), kReadBlock, device.sm_count);
    DeviceMemory partials;
    cuda_check(cudaMalloc(&partials.ptr, sizeof(float) * blocks), "cudaMalloc");
    const size_t count = bytes / sizeof(float4);
    auto read_once = [&] {
      read_reduce<<<blocks, kReadBlock, 0, stream.handle>>>(static_cast<const float4*>(buffer.ptr), count,
                                                            static_cast<float*>(partials.ptr));
      cuda_check(cudaGetLastError(), "read_reduce launch");
    };
    result.read_runs = rates_of(timer, stream.handle, runs, double(bytes), "read_reduce", read_once);
    result.dram_read_gbps = median_of(result.read_runs);

    // Copy: one half into the other; a copy reads and writes every byte.
    const size_t half = bytes / 2;
    char* base = static_cast<char*>(buffer.ptr);
    auto copy_once = [&] {
      cuda_check(cudaMemcpyAsync(base + half, base, half, cudaMemcpyDeviceToDevice, stream.handle), "cudaMemcpy D2D");
    };
    result.copy_runs = rates_of(timer, stream.handle, runs, 2.0 * double(half), "cudaMemcpy D2D", copy_once);
    result.dram_copy_gbps = median_of(result.copy_runs);
  }

  // Host to device: 256 MiB from page-locked memory, one copy a run (issue 34: out-of-core rows
  // report their share of it). Where the host refuses the pinned buffer the entry stays 0.
  {
    const size_t bytes = size_t(256) << 20;
    void* host = nullptr;
    if (cudaHostAlloc(&host, bytes, cudaHostAllocDefault) != cudaSuccess) {
      cudaGetLastError();
      return result;
    }
    DeviceMemory buffer;
    const cudaError_t status = cudaMalloc(&buffer.ptr, bytes);
    if (status != cudaSuccess) {
      cudaGetLastError();
      cudaFreeHost(host);
      return result;
    }
    std::memset(host, 1, bytes);
    result.h2d_bytes = int64_t(bytes);
    auto copy_once = [&] {
      cuda_check(cudaMemcpyAsync(buffer.ptr, host, bytes, cudaMemcpyHostToDevice, stream.handle), "pinned H2D copy");
    };
    result.h2d_runs = rates_of(timer, stream.handle, runs, double(bytes), "pinned H2D copy", copy_once);
    result.h2d_pinned_gbps = median_of(result.h2d_runs);
    cudaFreeHost(host);
  }
  return result;
}

std::string cache_root() {
  if (const char* dir = std::getenv("MKBENCH_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/mkbench";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/mkbench";
  return ".mkbench-cache";
}

std::string peak_cache_path(const DeviceInfo& device) { return cache_root() + "/peaks/" + device.slug() + ".json"; }

void apply_peaks(const PeakMeasurement& measurement, DeviceInfo& device) {
  device.peaks.fp32_gflops_measured = measurement.fp32_gflops;
  device.peaks.dram_read_gbps_measured = measurement.dram_read_gbps;
  device.peaks.dram_copy_gbps_measured = measurement.dram_copy_gbps;
  device.peaks.h2d_pinned_gbps_measured = measurement.h2d_pinned_gbps;
  device.peaks.measured_at = measurement.measured_at;
}

void save_cached_peaks(const DeviceInfo& device, const PeakMeasurement& measurement) {
  nlohmann::json document = {{"schema", "mkbench.peaks/1"},
                             {"device", device.to_json()},
                             {"measurement", measurement.to_json()}};
  write_text_atomically(peak_cache_path(device), document.dump(2) + "\n");
}

bool load_cached_peaks(DeviceInfo& device) {
  if (!device.is_gpu) return false;
  std::ifstream in(peak_cache_path(device));
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  try {
    const auto document = nlohmann::json::parse(text.str());
    const auto& m = document.at("measurement");
    PeakMeasurement measurement;
    measurement.fp32_gflops = m.at("fp32_gflops").get<double>();
    measurement.dram_read_gbps = m.at("dram_read_gbps").get<double>();
    measurement.dram_copy_gbps = m.at("dram_copy_gbps").get<double>();
    measurement.h2d_pinned_gbps = m.value("h2d_pinned_gbps", 0.0);  // absent from caches before it
    measurement.measured_at = m.value("measured_at", std::string());
    apply_peaks(measurement, device);
    return measurement.fp32_gflops > 0 && measurement.dram_read_gbps > 0;
  } catch (const std::exception& e) {
    std::cerr << "mkbench: warning: ignoring unreadable peak cache " << peak_cache_path(device) << ": " << e.what()
              << "\n";
    return false;
  }
}

void ensure_measured_peaks(DeviceInfo& device, bool allow_measure) {
  if (!device.is_gpu || load_cached_peaks(device) || !allow_measure) return;
  std::cerr << "mkbench: no measured peaks cached for " << device.name << "; measuring them once (cached at "
            << peak_cache_path(device) << ")\n";
  try {
    const PeakMeasurement measurement = measure_peaks(device);
    apply_peaks(measurement, device);
    save_cached_peaks(device, measurement);
    std::cerr << "mkbench: measured FP32 " << measurement.fp32_gflops << " GFLOP/s, DRAM read "
              << measurement.dram_read_gbps << " GB/s, copy " << measurement.dram_copy_gbps << " GB/s, pinned H2D "
              << measurement.h2d_pinned_gbps << " GB/s\n";
  } catch (const std::exception& e) {
    std::cerr << "mkbench: warning: peak measurement failed (" << e.what()
              << "); percentages of measured peak will be 0\n";
  }
}

}  // namespace mk
