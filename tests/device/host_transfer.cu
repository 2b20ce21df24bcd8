// The host<->device transfer measurements behind variants/common/pinned_staging.hpp (the stage
// host-transfer builds and runs this file):
// - reading 10M int32 labels back into a new host vector, several ways;
// - uploading 10M x 32 floats (1.28 GB) of ordinary host memory: page-locked in place piece by
//   piece, from pageable memory, and staged through rings of pinned buffers of several sizes.
// Each line is one timed run (the first of a strategy marked); a failed CUDA call is printed.
#include <cuda_runtime.h>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

bool ok(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::printf("  %s failed: %s\n", what, cudaGetErrorString(status));
  return false;
}

constexpr size_t kHuge = size_t(2) << 20;

void advise_huge(void* begin, size_t bytes) {
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t last = (reinterpret_cast<uintptr_t>(begin) + bytes) & ~(kHuge - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

bool lock(void* begin, size_t bytes, bool read_only) {
  if (read_only && cudaHostRegister(begin, bytes, cudaHostRegisterPortable | cudaHostRegisterReadOnly) == cudaSuccess)
    return true;
  cudaGetLastError();
  if (cudaHostRegister(begin, bytes, cudaHostRegisterPortable) == cudaSuccess) return true;
  cudaGetLastError();
  return false;
}

void parallel_copy(char* to, const char* from, size_t bytes, size_t granule = size_t(1) << 20) {
  const int64_t pieces = int64_t((bytes + granule - 1) / granule);
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < pieces; ++p) {
    const size_t begin = size_t(p) * granule;
    std::memcpy(to + begin, from + begin, std::min(bytes, begin + granule) - begin);
  }
}

void time_it(const char* name, int repeats, const std::function<void()>& body) {
  for (int r = 0; r < repeats; ++r) {
    const double start = now();
    body();
    std::printf("%-52s %9.2f%s\n", name, (now() - start) * 1e3, r == 0 ? "  (first)" : "");
  }
}

struct Ring {
  std::vector<char*> buffers;
  std::vector<cudaEvent_t> free;
  size_t piece;
  Ring(int count, size_t piece_bytes) : buffers(size_t(count)), free(size_t(count)), piece(piece_bytes) {
    for (int b = 0; b < count; ++b) {
      ok(cudaHostAlloc(reinterpret_cast<void**>(&buffers[size_t(b)]), piece, cudaHostAllocDefault), "cudaHostAlloc");
      ok(cudaEventCreateWithFlags(&free[size_t(b)], cudaEventDisableTiming), "cudaEventCreate");
    }
  }
  ~Ring() {
    for (size_t b = 0; b < buffers.size(); ++b) {
      cudaEventSynchronize(free[b]);
      cudaEventDestroy(free[b]);
      cudaFreeHost(buffers[b]);
    }
  }
  // Device bytes into host memory: every buffer's DMA queued ahead, a buffer drained (copied on
  // all cores in `granule` pieces) before it takes the piece `buffers` further on.
  void download(char* to, const char* from, size_t bytes, cudaStream_t stream, size_t granule) {
    std::vector<size_t> pending(buffers.size(), SIZE_MAX), length(buffers.size(), 0);
    size_t b = 0;
    for (size_t offset = 0;; b = (b + 1) % buffers.size()) {
      if (pending[b] != SIZE_MAX) {
        ok(cudaEventSynchronize(free[b]), "cudaEventSynchronize");
        parallel_copy(to + pending[b], buffers[b], length[b], granule);
        pending[b] = SIZE_MAX;
      }
      if (offset >= bytes) {
        if (std::all_of(pending.begin(), pending.end(), [](size_t p) { return p == SIZE_MAX; })) break;
        continue;
      }
      length[b] = std::min(piece, bytes - offset);
      ok(cudaMemcpyAsync(buffers[b], from + offset, length[b], cudaMemcpyDeviceToHost, stream), "read-back");
      ok(cudaEventRecord(free[b], stream), "cudaEventRecord");
      pending[b] = offset;
      offset += length[b];
    }
  }
  void upload(char* to, const char* from, size_t bytes, cudaStream_t stream) {
    size_t next = 0;
    for (size_t offset = 0; offset < bytes; offset += piece, next = (next + 1) % buffers.size()) {
      const size_t length = std::min(piece, bytes - offset);
      ok(cudaEventSynchronize(free[next]), "cudaEventSynchronize");
      parallel_copy(buffers[next], from + offset, length);
      ok(cudaMemcpyAsync(to + offset, buffers[next], length, cudaMemcpyHostToDevice, stream), "upload");
      ok(cudaEventRecord(free[next], stream), "cudaEventRecord");
    }
    ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
};

}  // namespace

int main() {
  const size_t m = 10000000, n = 32;
  char thp[128] = "unreadable\n";
  if (FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
    if (!std::fgets(thp, sizeof thp, f)) std::strcpy(thp, "unreadable\n");
    std::fclose(f);
  }
  std::printf("transparent huge pages: %sOpenMP threads: %d\n", thp, omp_get_max_threads());
  cudaStream_t stream;
  ok(cudaStreamCreate(&stream), "cudaStreamCreate");

  // Labels: 10M int32 from the device into a new host vector.
  int32_t* labels = nullptr;
  ok(cudaMalloc(&labels, m * 4), "cudaMalloc");
  ok(cudaMemset(labels, 1, m * 4), "cudaMemset");
  std::printf("%-52s %9s\n", "labels read-back, 10M int32", "ms");
  time_it("vector resize, pageable copy", 3, [&] {
    std::vector<int32_t> v(m);
    ok(cudaMemcpy(v.data(), labels, m * 4, cudaMemcpyDeviceToHost), "read-back");
  });
  time_it("vector reserve + huge pages, resize, pageable copy", 3, [&] {
    std::vector<int32_t> v;
    v.reserve(m);
    advise_huge(v.data(), m * 4);
    v.resize(m);
    ok(cudaMemcpy(v.data(), labels, m * 4, cudaMemcpyDeviceToHost), "read-back");
  });
  time_it("vector reserve + huge pages, resize, lock, copy", 3, [&] {
    std::vector<int32_t> v;
    v.reserve(m);
    advise_huge(v.data(), m * 4);
    v.resize(m);
    const bool locked = lock(v.data(), m * 4, false);
    ok(cudaMemcpy(v.data(), labels, m * 4, cudaMemcpyDeviceToHost), "read-back");
    if (locked) cudaHostUnregister(v.data());
  });
  time_it("uninitialised + huge pages, touch on all cores, lock, copy", 3, [&] {
    const size_t bytes = (m * 4 + kHuge - 1) / kHuge * kHuge;
    auto* raw = static_cast<int32_t*>(std::aligned_alloc(kHuge, bytes));
    advise_huge(raw, bytes);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < int64_t(m); i += 1024) raw[i] = 0;
    const bool locked = lock(raw, m * 4, false);
    ok(cudaMemcpy(raw, labels, m * 4, cudaMemcpyDeviceToHost), "read-back");
    if (locked) cudaHostUnregister(raw);
    std::free(raw);
  });
  {
    Ring ring(4, size_t(8) << 20);
    time_it("uninitialised + huge pages, 4x8 MiB pinned ring back", 3, [&] {
      const size_t bytes = (m * 4 + kHuge - 1) / kHuge * kHuge;
      auto* raw = static_cast<char*>(std::aligned_alloc(kHuge, bytes));
      advise_huge(raw, bytes);
      ring.download(raw, reinterpret_cast<const char*>(labels), m * 4, stream, size_t(1) << 20);
      std::free(raw);
    });
  }

  // Readying the labels' memory as a fit does (gpu::ready_label_values: a fresh 2 MiB-aligned
  // block, first-touched on all cores), 30 times each with and without huge pages advised: the
  // huge pages' first touch may wait on the kernel's compaction (THP defrag).
  for (int defrag = 0; defrag < 2; ++defrag) {
    const char* path = defrag ? "/sys/kernel/mm/transparent_hugepage/khugepaged/defrag" : "/sys/kernel/mm/transparent_hugepage/defrag";
    char text[128] = "unreadable\n";
    if (FILE* f = std::fopen(path, "r")) {
      if (!std::fgets(text, sizeof text, f)) std::strcpy(text, "unreadable\n");
      std::fclose(f);
    }
    std::printf("%s: %s", path, text);
  }
  for (int mode = 0; mode < 4; ++mode) {
    const bool advised = mode < 2, all_cores = mode % 2 == 0;
    std::vector<double> ms;
    for (int r = 0; r < 30; ++r) {
      const double start = now();
      const size_t bytes = (m * 4 + kHuge - 1) / kHuge * kHuge;
      auto* raw = static_cast<char*>(std::aligned_alloc(kHuge, bytes));
      if (advised) advise_huge(raw, bytes);
#pragma omp parallel for schedule(static) if (all_cores)
      for (int64_t i = 0; i < int64_t(bytes); i += 4096) raw[i] = 0;
      ms.push_back((now() - start) * 1e3);
      std::free(raw);
    }
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    const int over = int(std::count_if(ms.begin(), ms.end(), [](double t) { return t > 5.0; }));
    const std::string name = std::string(advised ? "huge pages advised" : "4 KiB pages") + (all_cores ? ", all cores" : ", one thread");
    std::printf("ready 40 MB labels, %-32s median %6.2f  max %7.2f  over 5 ms: %d of 30\n", name.c_str(), sorted[15],
                sorted.back(), over);
  }

  // Into memory readied beforehand (allocated, huge pages advised, touched on all cores), as a
  // fit's labels are (gpu::ready_label_values): the ring's piece and copy granule alone.
  {
    const size_t bytes = (m * 4 + kHuge - 1) / kHuge * kHuge;
    auto* ready = static_cast<char*>(std::aligned_alloc(kHuge, bytes));
    advise_huge(ready, bytes);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < int64_t(bytes); i += 4096) ready[i] = 0;
    std::printf("%-52s %9s\n", "labels read-back into readied memory", "ms");
    for (const auto& shape : {std::tuple<int, size_t, size_t>{4, size_t(32) << 20, size_t(1) << 20},
                              {4, size_t(8) << 20, size_t(1) << 20}, {4, size_t(8) << 20, size_t(512) << 10},
                              {8, size_t(4) << 20, size_t(256) << 10}, {4, size_t(16) << 20, size_t(1) << 20}}) {
      const int count = std::get<0>(shape);
      const size_t piece = std::get<1>(shape), granule = std::get<2>(shape);
      Ring ring(count, piece);
      const std::string name = std::to_string(count) + " x " + std::to_string(piece >> 20) + " MiB ring, " +
                               std::to_string(granule >> 10) + " KiB copies";
      time_it(name.c_str(), 4, [&] { ring.download(ready, reinterpret_cast<const char*>(labels), m * 4, stream, granule); });
    }
    std::free(ready);
  }

  // Uploads: 1.28 GB of host rows.
  const size_t bytes = m * n * 4;
  char* points = nullptr;
  ok(cudaMalloc(&points, bytes), "cudaMalloc");
  for (int source = 0; source < 2; ++source) {
    char* host = static_cast<char*>(source == 0 ? std::aligned_alloc(kHuge, bytes) : std::malloc(bytes));
    if (source == 0) advise_huge(host, bytes);  // NumPy advises huge pages for large arrays
    auto* values = reinterpret_cast<float*>(host);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < int64_t(m * n); ++i) values[i] = float(i % 977) * 0.001f;
    std::printf("%-52s %9s  (%s)\n", "upload of 10M x 32 floats", "ms",
                source == 0 ? "2 MiB-aligned, huge pages advised" : "malloc");
    for (size_t piece : {size_t(64) << 20, size_t(16) << 20}) {
      const std::string name = "lock " + std::to_string(piece >> 20) + " MiB pieces in place, DMA each";
      time_it(name.c_str(), 2, [&] {
        std::vector<char*> locked;
        for (size_t offset = 0; offset < bytes;) {
          const uintptr_t end = (reinterpret_cast<uintptr_t>(host + offset) + piece + 4095) / 4096 * 4096;
          const size_t length = std::min(bytes - offset, size_t(end - reinterpret_cast<uintptr_t>(host + offset)));
          if (lock(host + offset, length, true)) locked.push_back(host + offset);
          ok(cudaMemcpyAsync(points + offset, host + offset, length, cudaMemcpyHostToDevice, stream), "upload");
          offset += length;
        }
        ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        for (char* begin : locked) cudaHostUnregister(begin);
      });
    }
    time_it("pageable cudaMemcpy", 2, [&] { ok(cudaMemcpy(points, host, bytes, cudaMemcpyHostToDevice), "upload"); });
    for (auto [count, piece] : {std::pair<int, size_t>{4, size_t(32) << 20}, {4, size_t(16) << 20},
                                {8, size_t(16) << 20}, {2, size_t(64) << 20}, {4, size_t(128) << 20}}) {
      Ring ring(count, piece);
      const std::string name = "staged, " + std::to_string(count) + " x " + std::to_string(piece >> 20) +
                               " MiB pinned ring, copies on all cores";
      time_it(name.c_str(), 3, [&] { ring.upload(points, host, bytes, stream); });
    }
    {  // how often an upload through the ring's size is disturbed
      Ring ring(4, size_t(16) << 20);
      std::vector<double> ms;
      for (int r = 0; r < 15; ++r) {
        const double start = now();
        ring.upload(points, host, bytes, stream);
        ms.push_back((now() - start) * 1e3);
      }
      std::string all;
      for (double t : ms) all += " " + std::to_string(int(t + 0.5));
      std::printf("staged, 4 x 16 MiB, 15 uploads (ms):%s\n", all.c_str());
    }
    std::free(host);
  }
  return 0;
}
