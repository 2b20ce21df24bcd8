#include "harness/measure.hpp"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>

#include "core/errors.hpp"
#include "harness/fault_injection.hpp"
#include "harness/memory_plan.hpp"
#include "harness/metrics.hpp"
#include "harness/parallel/sharded_run.hpp"
#include "harness/parallel/sharded_variant.hpp"
#include "harness/reference.hpp"
#include "harness/stream_hold.hpp"
#include "variants/batched/batched_variant.hpp"
#include "variants/chunked/chunked_run.hpp"

namespace mk {

namespace {

void cuda_check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  throw DeviceError(std::string(what) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

// SM clock per sample through NVML, loaded with dlopen so the binary has no link
// dependency on the driver's management library (CI machines have none).
class SmClockReader {
 public:
  static SmClockReader& instance() {
    static SmClockReader reader;
    return reader;
  }

  // 0 when unavailable.
  double sm_clock_mhz(int ordinal) {
    if (!get_clock_) return 0;
    void* handle = handle_for(ordinal);
    if (!handle) return 0;
    unsigned int mhz = 0;
    constexpr int kNvmlClockSm = 1;
    return get_clock_(handle, kNvmlClockSm, &mhz) == 0 ? double(mhz) : 0.0;
  }

 private:
  using InitFn = int (*)();
  using HandleByPciFn = int (*)(const char*, void**);
  using ClockFn = int (*)(void*, int, unsigned int*);

  SmClockReader() {
    library_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library_) return;
    auto init = reinterpret_cast<InitFn>(dlsym(library_, "nvmlInit_v2"));
    by_pci_ = reinterpret_cast<HandleByPciFn>(dlsym(library_, "nvmlDeviceGetHandleByPciBusId_v2"));
    auto clock = reinterpret_cast<ClockFn>(dlsym(library_, "nvmlDeviceGetClockInfo"));
    if (!init || !by_pci_ || !clock || init() != 0) return;
    get_clock_ = clock;
  }

  // CUDA ordinals and NVML indices differ under CUDA_VISIBLE_DEVICES; the PCI bus id
  // names the same board in both.
  void* handle_for(int ordinal) {
    auto it = handles_.find(ordinal);
    if (it != handles_.end()) return it->second;
    void* handle = nullptr;
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ordinal) != cudaSuccess) {
      cudaGetLastError();
    } else if (by_pci_(bus_id, &handle) != 0) {
      handle = nullptr;
    }
    handles_[ordinal] = handle;
    return handle;
  }

  void* library_ = nullptr;
  HandleByPciFn by_pci_ = nullptr;
  ClockFn get_clock_ = nullptr;
  std::map<int, void*> handles_;
};

class NvtxRange {
 public:
  explicit NvtxRange(const std::string& name) { nvtxRangePushA(name.c_str()); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

// Swallows Google Benchmark's own report: mkbench prints rows in its own formats.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

void initialise_benchmark_library() {
  static std::once_flag once;
  std::call_once(once, [] {
    static char program[] = "mkbench";
    static char* argv[] = {program, nullptr};
    int argc = 1;
    benchmark::Initialize(&argc, argv);
  });
}

// Times one iteration of a prepared run; GPU runs with CUDA events on the run's stream,
// CPU runs with steady_clock around iterate + synchronize.
class IterationTimer {
 public:
  IterationTimer(PreparedRun& run, bool on_gpu, int ordinal, void* flush_buffer, size_t flush_bytes,
                 bool hide_launch_latency)
      : run_(run),
        on_gpu_(on_gpu),
        ordinal_(ordinal),
        flush_buffer_(flush_buffer),
        flush_bytes_(flush_bytes),
        hide_launch_latency_(hide_launch_latency) {
    if (on_gpu_) {
      stream_ = static_cast<cudaStream_t>(run.stream());
      cuda_check(cudaEventCreate(&start_), "cudaEventCreate");
      cuda_check(cudaEventCreate(&stop_), "cudaEventCreate");
    }
  }
  ~IterationTimer() {
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
  }
  IterationTimer(const IterationTimer&) = delete;
  IterationTimer& operator=(const IterationTimer&) = delete;

  double time_one(bool store_labels) {
    if (!on_gpu_) {
      const auto begin = std::chrono::steady_clock::now();
      run_.iterate(store_labels);
      run_.synchronize();
      const auto end = std::chrono::steady_clock::now();
      return std::chrono::duration<double, std::milli>(end - begin).count();
    }
    if (flush_buffer_) {
      // Outside the events: evicts the points from L2 so every sample reads DRAM like
      // the first one would, instead of timing an L2-resident replay.
      cuda_check(cudaMemsetAsync(flush_buffer_, int(flush_round_++ & 0xff), flush_bytes_, stream_),
                 "L2 flush");
    }
    // Otherwise the start event fires on an idle stream while the host is still launching.
    if (hide_launch_latency_) hold_stream(stream_, kLaunchHoldMicroseconds);
    cuda_check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    run_.iterate(store_labels);
    cuda_check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop_), "iteration");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return double(ms);
  }

  double sm_clock_mhz() { return on_gpu_ ? SmClockReader::instance().sm_clock_mhz(ordinal_) : 0.0; }

 private:
  PreparedRun& run_;
  bool on_gpu_;
  int ordinal_;
  void* flush_buffer_;
  size_t flush_bytes_;
  bool hide_launch_latency_;
  unsigned flush_round_ = 1;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

class DeviceScratch {
 public:
  DeviceScratch() = default;
  ~DeviceScratch() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  bool allocate(size_t bytes) {
    if (cudaMalloc(&ptr_, bytes) != cudaSuccess) {
      cudaGetLastError();
      ptr_ = nullptr;
      return false;
    }
    bytes_ = bytes;
    return true;
  }
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

std::vector<float> pack_centroids(const IterationResult& result) {
  std::vector<float> packed;
  for (const auto& k : result.per_k) packed.insert(packed.end(), k.centroids.begin(), k.centroids.end());
  return packed;
}

VerifyReport verify_one_step(PreparedRun& run, const Dataset& data, const Problem& problem,
                             const std::vector<float>& centroids_before) {
  // The FP64 reference reads every point; `run` makes the data whole under --verify.
  if (!data.holds_rows())
    throw UnsupportedError("--verify needs every point at hand for the FP64 reference, and these are " +
                           std::string(data.is_on_demand() ? "generated chunk by chunk" : "not held"));
  run.set_centroids(centroids_before);
  run.iterate(true);
  run.synchronize();
  const IterationResult got = run.read_back();
  const size_t expected = size_t(problem.k.count()) * size_t(problem.batch);
  if (got.per_k.size() != expected)
    throw VerifyError("variant returned " + std::to_string(got.per_k.size()) + " K results, expected " +
                      std::to_string(expected));
  return compare_batch_with_reference(data, problem, centroids_before, got);
}

// Defaults overlaid with the requested params, without legality checks: names refused
// rows the way the accepted row would have been named.
Params best_effort_params(const Variant& variant, const Problem& problem, const DeviceInfo& device,
                          const Params& overrides) {
  Params params = Params::object();
  try {
    params = variant.default_params(problem, device);
  } catch (const std::exception&) {
  }
  if (!params.is_object()) params = Params::object();
  for (auto it = overrides.begin(); it != overrides.end(); ++it) params[it.key()] = it.value();
  return params;
}

// The pinned host→device bandwidth an out-of-core row is judged by: the best of three
// copies of `bytes` (at most 256 MiB) from page-locked memory, in GB/s; 0 when the buffers
// cannot be had.
double pinned_h2d_gb_per_s(size_t bytes) {
  bytes = std::min<size_t>(bytes, size_t(256) << 20);
  if (bytes == 0) return 0;
  void* host = nullptr;
  if (cudaHostAlloc(&host, bytes, cudaHostAllocDefault) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  DeviceScratch device;
  if (!device.allocate(bytes)) {
    cudaFreeHost(host);
    return 0;
  }
  std::memset(host, 1, bytes);
  cudaEvent_t start = nullptr, stop = nullptr;
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  float best = 0;
  for (int i = 0; i < 3; ++i) {
    cuda_check(cudaEventRecord(start), "cudaEventRecord");
    cuda_check(cudaMemcpyAsync(device.get(), host, bytes, cudaMemcpyHostToDevice), "pinned copy");
    cuda_check(cudaEventRecord(stop), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop), "pinned copy");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (i == 0 || ms < best) best = ms;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFreeHost(host);
  return best > 0 ? double(bytes) / (double(best) * 1e-3) / 1e9 : 0;
}

}  // namespace

void select_device(int ordinal) {
  if (ordinal < 0 || gpu_count() == 0) return;
  cuda_check(cudaSetDevice(ordinal), "cudaSetDevice");
}

ResultRow measure_row(const RowSpec& spec, const DeviceInfo& device, const MeasureOptions& options) {
  if (!spec.variant) throw InputError("measure_row: no variant");
  if (!spec.dataset) throw InputError("measure_row: no dataset");
  if (spec.samples < 1) throw InputError("the number of timed iterations must be at least 1");
  if (spec.warmup < 0) throw InputError("the number of warm-up iterations cannot be negative");
  // A batch runs as one run of each problem (variants/batched/; wrapping a variant already
  // wrapped for batches changes nothing, since each problem's run has batch 1).
  const std::unique_ptr<Variant> batched = spec.problem.batch > 1 ? variant_for_batch(*spec.variant) : nullptr;
  const Variant& variant = batched ? *batched : *spec.variant;
  const Problem& problem = spec.problem;
  const bool on_gpu = variant.runs_on_gpu();

  ResultRow row;
  row.variant = variant.name();
  row.problem = problem;
  row.dataset = spec.dataset->identity;
  row.timing.clock = on_gpu ? "cuda-event" : "steady-clock";
  row.timing.warmup = spec.warmup;
  row.params = spec.params.is_object() ? spec.params : Params::object();
  row.name = row_name(row.variant, problem, row.params);

  auto refuse = [&](const std::string& reason) {
    row.params = best_effort_params(variant, problem, device, spec.params);
    row.name = row_name(row.variant, problem, row.params);
    row.status = "refused";
    row.reason = reason;
    return row;
  };

  if (problem.batch > 1 && is_sharded_variant(*spec.variant))
    return refuse("a batch runs its problems on one device; over several shards it is not built");
  if (on_gpu && !device.is_gpu)
    return refuse("needs a CUDA GPU: " + (gpu_count() == 0 ? no_gpu_reason() : std::string("device is the host CPU")));
  // The plan comes first: out of core, the variant runs (and must accept) the chunk problem,
  // where the whole one may exceed what it accepts in memory.
  MemoryPlan plan;
  try {
    if (on_gpu) select_device(device.ordinal);
    RowWork work{&variant, problem, row.params, spec.verify || spec.store_labels, spec.verify};
    work.chunk_points = spec.chunk_points;
    work.out_of_core = spec.out_of_core;
    plan = plan_memory(describe_loaded_data(*spec.dataset), work, device,
                       current_memory_limits(on_gpu ? device : DeviceInfo{}));
  } catch (const UnsupportedError& e) {
    return refuse(e.what());
  } catch (const Error& e) {
    row.status = "failed";
    row.reason = e.what();
    return row;
  }
  // The plan may choose out of core on its own when a shard's rows exceed its device.
  if (plan.out_of_core() && is_sharded_variant(variant)) return refuse(kRefuseShardedOutOfCore);
  if (plan.out_of_core() && problem.batch > 1) return refuse(kRefuseBatchedOutOfCore);
  const Problem run_problem = plan.out_of_core() ? chunk_problem(problem, plan.chunk_points) : problem;
  if (auto reason = variant.can_implement(run_problem, device)) return refuse(*reason);
  try {
    row.params = resolve_params(variant, run_problem, device, row.params);
  } catch (const UnsupportedError& e) {
    return refuse(e.what());
  }
  row.name = row_name(row.variant, problem, row.params);

  try {
    if (!plan.runs()) throw UnsupportedError(plan.message);
    std::unique_ptr<PreparedRun> run;
    if (plan.out_of_core()) {
      auto chunked = prepare_chunked(variant, problem, chunk_source_of(*spec.dataset), plan.chunk_points, row.params,
                                     device);
      row.out_of_core = chunked->info().to_json();
      row.out_of_core["bytes_per_iteration"] = problem.data_bytes();
      if (on_gpu) {
        // The roof `mkbench peak` measured and cached; where the cache predates that entry, a
        // measurement for this row.
        const double cached = device.peaks.h2d_pinned_gbps_measured;
        row.out_of_core["h2d_gb_per_s"] =
            cached > 0 ? cached : pinned_h2d_gb_per_s(size_t(plan.chunk_points) * problem.n * sizeof(float));
        row.out_of_core["h2d_source"] = cached > 0 ? "mkbench peak" : "measured for this row";
      }
      run = std::move(chunked);
    } else {
      if (spec.dataset->is_mapped() || spec.dataset->is_on_demand())  // planned out of core: not expected
        throw UnsupportedError(std::string("the points were ") +
                               (spec.dataset->is_mapped() ? "left in their memory-mapped file"
                                                          : "left to be generated chunk by chunk") +
                               ", which only out-of-core runs read; this row's plan is in core (" + plan.summary() +
                               ")");
      run = variant.prepare(problem, *spec.dataset, row.params, device);
    }
    if (!run) throw DeviceError("variant " + row.variant + " returned no prepared run");
    if (auto fault = row_fault_for(options.row_index, row.name)) fire_row_fault(*fault, run->stream(), on_gpu);
    row.timing.conversion_ms = run->conversion_ms();
    // Several devices (harness/parallel/): the row records them, and their summed peaks.
    auto* sharded = dynamic_cast<ShardedRun*>(run.get());

    VerifyReport first_check;
    if (spec.verify) first_check = verify_one_step(*run, *spec.dataset, problem, spec.init_centroids);
    run->set_centroids(spec.init_centroids);

    DeviceScratch flush;
    if (on_gpu && device.l2_bytes > 0 && problem.data_bytes() <= double(device.l2_bytes)) {
      row.timing.l2_flushed = flush.allocate(size_t(device.l2_bytes) * 2);
      if (!row.timing.l2_flushed)
        std::cerr << "mkbench: warning: could not allocate the L2 flush buffer; " << row.name
                  << " may be timed with warm L2\n";
    }

    // A sharded step is synchronous (every shard's update reads back), so its samples are
    // end to end already; holding one device's stream would only delay that shard.
    // Nor a batch: its B runs' launches outlast the hold's fixed 200 µs once B is more than a few.
    row.timing.launch_latency_hidden = on_gpu && options.hide_launch_latency && !sharded && problem.batch == 1;
    IterationTimer timer(*run, on_gpu, device.ordinal, flush.get(), flush.bytes(), row.timing.launch_latency_hidden);
    std::vector<double> samples, clocks;
    std::exception_ptr loop_failure;
    {
      NvtxRange range(row.name);
      for (int i = 0; i < spec.warmup; ++i) run->iterate(spec.store_labels);
      run->synchronize();

      initialise_benchmark_library();
      auto* bench = benchmark::RegisterBenchmark(row.name.c_str(), [&](benchmark::State& state) {
        // Google Benchmark may call the body again (repetitions); keep the last call only.
        samples.clear();
        clocks.clear();
        for (auto _ : state) {
          try {
            const double ms = timer.time_one(spec.store_labels);
            state.SetIterationTime(ms * 1e-3);
            samples.push_back(ms);
            if (double mhz = timer.sm_clock_mhz(); mhz > 0) clocks.push_back(mhz);
          } catch (...) {
            loop_failure = std::current_exception();
            state.SkipWithError("iteration failed");
            break;
          }
        }
      });
      bench->UseManualTime()->Iterations(spec.samples)->Unit(benchmark::kMillisecond);
      if (sharded) sharded->clear_step_timings();
      if (options.benchmark_console) {
        benchmark::ConsoleReporter console;
        console.SetOutputStream(&std::cerr);
        console.SetErrorStream(&std::cerr);
        benchmark::RunSpecifiedBenchmarks(&console, ".");
      } else {
        SilentReporter silent;
        benchmark::RunSpecifiedBenchmarks(&silent, ".");
      }
      benchmark::ClearRegisteredBenchmarks();
      run->synchronize();
    }
    if (loop_failure) std::rethrow_exception(loop_failure);
    if (samples.size() != size_t(spec.samples))
      throw DeviceError("timed loop produced " + std::to_string(samples.size()) + " of " +
                        std::to_string(spec.samples) + " samples");
    row.timing.samples_ms = samples;
    // Partial clock lists would misalign with samples; keep all or nothing.
    if (clocks.size() == samples.size()) row.timing.sm_clock_mhz = clocks;
    row.summary = summarize(samples);
    if (sharded) row.parallel = sharded->parallel_info(samples.size());
    // A CPU variant on a GPU machine is not bounded by the GPU's roofs; shards on several
    // GPUs are bounded by all of theirs.
    const Peaks peaks = !on_gpu ? Peaks{} : sharded ? sharded->summed_peaks() : device.peaks;
    row.metrics = compute_metrics(problem, row.summary.median_ms, peaks);

    if (spec.verify) {
      // The second check starts from wherever the timed loop left the centroids, so a
      // variant that only gets the first step right (stale state, races) still fails.
      const std::vector<float> final_centroids = pack_centroids(run->read_back());
      VerifyReport final_check = verify_one_step(*run, *spec.dataset, problem, final_centroids);
      nlohmann::json verify = first_check.to_json();
      verify["first_step_passed"] = first_check.passed;
      verify["summary"] = first_check.summary();
      verify["final_step"] = final_check.to_json();
      verify["final_step"]["summary"] = final_check.summary();
      verify["passed"] = first_check.passed && final_check.passed;
      row.verify = std::move(verify);
    }
  } catch (const VerifyError& e) {
    // The variant produced something the reference cannot even compare (bad labels):
    // that is a verification failure, not a device failure.
    benchmark::ClearRegisteredBenchmarks();
    row.status = "failed";
    row.reason = std::string("verification: ") + e.what();
    row.verify = {{"passed", false}, {"error", e.what()}};
  } catch (const UnsupportedError& e) {
    benchmark::ClearRegisteredBenchmarks();
    row.status = "refused";
    row.reason = e.what();
  } catch (const Error& e) {
    benchmark::ClearRegisteredBenchmarks();
    row.status = "failed";
    row.reason = e.what();
  } catch (const std::bad_alloc&) {
    benchmark::ClearRegisteredBenchmarks();
    row.status = "failed";
    row.reason = "host out of memory";
  } catch (const std::exception& e) {
    benchmark::ClearRegisteredBenchmarks();
    row.status = "failed";
    row.reason = e.what();
  }
  return row;
}

}  // namespace mk
