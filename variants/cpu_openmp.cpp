// cpu-openmp: the CPU baseline, and the only variant on a machine without a GPU.
// Distances are computed in FP32 like the GPU variants, so a speedup over this row compares
// like with like; sums and inertia are FP64 per thread and merged once after the parallel
// loop, so accuracy does not depend on the thread count or the schedule.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "variants/common/host_update.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

int hardware_threads() { return std::max(1, omp_get_num_procs()); }

double physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? double(pages) * double(page_size) : 0.0;
}

// Host bytes prepare() and iterate() hold besides the caller's dataset.
double bytes_needed(const Problem& problem, int threads) {
  const double slots = problem.k.sum();
  const double per_thread = slots * problem.n * 8.0 + slots * 8.0 + slots * 4.0 + problem.k.count() * 8.0;
  return problem.data_bytes() + double(problem.k.count()) * double(problem.m) * 4.0 + threads * per_thread +
         slots * problem.n * 4.0 * 2.0;
}

// One thread's private accumulators in a single 64-byte-aligned block, every array starting
// on its own cache line and the block padded to whole lines: separate small heap
// allocations of neighbouring threads share lines, and that false sharing cost more than
// the second core gained.
class ThreadAccumulators {
 public:
  static constexpr size_t kLine = 64;

  ThreadAccumulators(int slots, int n, int k_count) {
    const size_t sums_bytes = round_up(size_t(slots) * n * sizeof(double));
    const size_t counts_bytes = round_up(size_t(slots) * sizeof(int64_t));
    const size_t inertia_bytes = round_up(size_t(k_count) * sizeof(double));
    const size_t distances_bytes = round_up(size_t(slots) * sizeof(float));
    const size_t bytes = sums_bytes + counts_bytes + inertia_bytes + distances_bytes;
    block_ = static_cast<unsigned char*>(std::aligned_alloc(kLine, bytes));
    if (!block_) throw std::bad_alloc();
    sums = reinterpret_cast<double*>(block_);
    counts = reinterpret_cast<int64_t*>(block_ + sums_bytes);
    inertia = reinterpret_cast<double*>(block_ + sums_bytes + counts_bytes);
    distances = reinterpret_cast<float*>(block_ + sums_bytes + counts_bytes + inertia_bytes);
    sums_count = size_t(slots) * n;
    slots_ = slots;
    k_count_ = k_count;
  }
  ~ThreadAccumulators() { std::free(block_); }
  ThreadAccumulators(const ThreadAccumulators&) = delete;
  ThreadAccumulators& operator=(const ThreadAccumulators&) = delete;

  void zero() {
    std::fill(sums, sums + sums_count, 0.0);
    std::fill(counts, counts + slots_, int64_t(0));
    std::fill(inertia, inertia + k_count_, 0.0);
  }

  double* sums = nullptr;       // slots*n
  int64_t* counts = nullptr;    // slots
  double* inertia = nullptr;    // one per K
  float* distances = nullptr;   // slots: scratch for the point being classified
  size_t sums_count = 0;

 private:
  static size_t round_up(size_t bytes) { return (bytes + kLine - 1) / kLine * kLine; }
  unsigned char* block_ = nullptr;
  int slots_ = 0;
  int k_count_ = 0;
};

struct ChunkInputs {
  const float* points;        // m*n, row-major
  const float* by_dimension;  // n*slots: centroid coordinate d of every slot, contiguous
  int64_t m;
  int n;
  int slots;
  KRange ks;
  int32_t* labels;  // (kmax-kmin+1)*m, or null
};

// The hot loop is compiled for several x86 levels and picked at load time by CPU feature,
// so the baseline uses AVX2/AVX-512 where the host has them without building for one
// machine (-march=native would make the binary unusable on older CI hosts). Features, not
// "arch=" names: those dispatch on the CPU model, which virtual machines often hide.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define MKBENCH_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MKBENCH_CPU_CLONES
#endif

MKBENCH_CPU_CLONES
void classify_range(const ChunkInputs& in, int64_t begin, int64_t end, ThreadAccumulators& acc) {
  const int n = in.n;
  const int slots = in.slots;
  const KRange ks = in.ks;
  float* __restrict dist = acc.distances;
  double* __restrict sums = acc.sums;
  for (int64_t i = begin; i < end; ++i) {
    const float* __restrict x = in.points + size_t(i) * n;
    // Dimension-major centroids let the inner loop run over centroid slots, which
    // vectorises however small N is. Dimension 0 initialises the distances (zeroing them
    // first became a memset call per point, a third of the time at small ΣK).
    {
      const float x0 = x[0];
      const float* __restrict column = in.by_dimension;
      for (int s = 0; s < slots; ++s) {
        const float diff = x0 - column[s];
        dist[s] = diff * diff;
      }
    }
    for (int d = 1; d < n; ++d) {
      const float xd = x[d];
      const float* __restrict column = in.by_dimension + size_t(d) * slots;
      for (int s = 0; s < slots; ++s) {
        const float diff = xd - column[s];
        dist[s] += diff * diff;
      }
    }
    for (int k = ks.kmin; k <= ks.kmax; ++k) {
      const int base = ks.slot_offset(k);
      float best = FLT_MAX;
      int best_c = 0;
      // Strict '<': the lowest index wins an exact tie, as in the reference.
      for (int c = 0; c < k; ++c)
        if (dist[base + c] < best) {
          best = dist[base + c];
          best_c = c;
        }
      const int slot = base + best_c;
      double* __restrict slot_sums = sums + size_t(slot) * n;
      for (int d = 0; d < n; ++d) slot_sums[d] += double(x[d]);
      acc.counts[slot] += 1;
      acc.inertia[k - ks.kmin] += double(best);
      if (in.labels) in.labels[size_t(k - ks.kmin) * size_t(in.m) + size_t(i)] = best_c;
    }
  }
}

class CpuOpenMpRun : public PreparedRun {
 public:
  CpuOpenMpRun(const Problem& problem, const Dataset& data, const Params& params)
      : problem_(problem),
        slots_(problem.k.sum()),
        threads_(params.at("threads").get<int>() > 0 ? params.at("threads").get<int>() : omp_get_max_threads()),
        chunk_(params.at("schedule_chunk").get<int>()),
        capacity_(problem.m),
        centroids_(size_t(slots_) * problem.n, 0.0f),
        centroids_by_dimension_(size_t(slots_) * problem.n, 0.0f) {
    if (problem.streamed) {
      // Out-of-core: the chunked runner writes each chunk here (points_slot()).
      points_.assign(size_t(problem.m) * problem.n, 0.0f);
    } else {
      if (data.m != problem.m || data.n != problem.n || !data.holds_rows())
        throw InputError("cpu-openmp: dataset is " + std::to_string(data.m) + "x" + std::to_string(data.n) +
                         " but the problem is " + problem.str());
      // A private copy, like a GPU upload: the run must not depend on the caller keeping
      // its dataset alive.
      points_.assign(data.points(), data.points() + size_t(problem.m) * problem.n);
    }
    for (int t = 0; t < threads_; ++t)
      per_thread_.push_back(std::make_unique<ThreadAccumulators>(slots_, problem.n, problem.k.count()));
    sums_.assign(size_t(slots_) * problem.n, 0.0);
    counts_.assign(slots_, 0ull);
    inertia_.assign(problem.k.count(), 0.0);
  }

  void set_centroids(const std::vector<float>& packed) override {
    if (packed.size() != centroids_.size())
      throw InputError("centroid array has " + std::to_string(packed.size()) + " values, expected " +
                       std::to_string(centroids_.size()));
    centroids_ = packed;
  }

  void iterate(bool store_labels) override {
    accumulate(AccumulateOptions{store_labels});
    update(UpdateOptions{});
  }

  void accumulate(const AccumulateOptions& options) override {
    const int n = problem_.n;
    const int64_t m = problem_.m;
    const KRange ks = problem_.k;
    const bool store_labels = options.store_labels;
    if (store_labels && labels_.empty()) labels_.resize(size_t(ks.count()) * size_t(capacity_));
    labels_valid_ = store_labels;

    for (int s = 0; s < slots_; ++s)
      for (int d = 0; d < n; ++d) centroids_by_dimension_[size_t(d) * slots_ + s] = centroids_[size_t(s) * n + d];

    for (auto& acc : per_thread_) acc->zero();

    const ChunkInputs inputs{points_.data(), centroids_by_dimension_.data(), m, n, slots_, ks,
                             store_labels ? labels_.data() : nullptr};
    const int64_t chunk = chunk_;
    const int64_t chunks = (m + chunk - 1) / chunk;
#pragma omp parallel num_threads(threads_)
    {
      ThreadAccumulators& acc = *per_thread_[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 1) nowait
      for (int64_t c = 0; c < chunks; ++c) classify_range(inputs, c * chunk, std::min(m, (c + 1) * chunk), acc);
    }

    // Merge in thread order. Which points a thread summed depends on the dynamic schedule,
    // but in FP64 that changes the sums far below the precision of the FP32 centroids.
    std::fill(sums_.begin(), sums_.end(), 0.0);
    std::fill(counts_.begin(), counts_.end(), 0ull);
    std::fill(inertia_.begin(), inertia_.end(), 0.0);
    for (const auto& acc : per_thread_) {
      for (size_t j = 0; j < sums_.size(); ++j) sums_[j] += acc->sums[j];
      for (int s = 0; s < slots_; ++s) counts_[s] += static_cast<unsigned long long>(acc->counts[s]);
      for (int k = 0; k < ks.count(); ++k) inertia_[k] += acc->inertia[k];
    }
  }

  AccumulatorRefs accumulators() override {
    AccumulatorRefs refs;
    refs.sums = sums_.data();
    refs.counts = counts_.data();
    refs.inertia = inertia_.data();
    refs.slots = slots_;
    refs.n = problem_.n;
    refs.k_count = problem_.k.count();
    return refs;
  }

  StepSummary update(const UpdateOptions& options) override {
    const HostStepState state{points_.data(), problem_.m, problem_.n, problem_.k,
                              &sums_,         &counts_,   &inertia_,  &centroids_};
    return host_update(state, options, updates_++);
  }

  PointsSlot points_slot() override {
    if (!problem_.streamed) throw UnsupportedError("points_slot: this run was prepared on points that do not change");
    PointsSlot slot;
    slot.points = points_.data();
    slot.capacity = capacity_;
    slot.n = problem_.n;
    return slot;
  }

  void set_point_count(int64_t rows) override {
    if (!problem_.streamed) throw UnsupportedError("set_point_count: the run's points are not streamed");
    if (rows < 1 || rows > capacity_)
      throw InputError("a chunk of " + std::to_string(rows) + " points does not fit a buffer of " +
                       std::to_string(capacity_));
    problem_.m = rows;
  }

  void synchronize() override {}

  IterationResult read_back() override {
    const int n = problem_.n;
    IterationResult result;
    for (int k = problem_.k.kmin; k <= problem_.k.kmax; ++k) {
      const int index = k - problem_.k.kmin;
      const int offset = problem_.k.slot_offset(k);
      KResult r;
      r.k = k;
      r.centroids.assign(centroids_.begin() + size_t(offset) * n, centroids_.begin() + size_t(offset + k) * n);
      r.counts.assign(counts_.begin() + offset, counts_.begin() + offset + k);
      r.inertia = inertia_[index];
      if (labels_valid_)
        r.labels.assign(labels_.begin() + size_t(index) * size_t(problem_.m),
                        labels_.begin() + size_t(index + 1) * size_t(problem_.m));
      result.per_k.push_back(std::move(r));
    }
    return result;
  }

 private:
  Problem problem_;
  int slots_;
  int threads_;
  int chunk_;
  int64_t capacity_;  // points the buffer holds (problem_.m may be less for a streamed chunk)
  std::vector<float> points_;
  std::vector<float> centroids_;
  std::vector<float> centroids_by_dimension_;
  std::vector<std::unique_ptr<ThreadAccumulators>> per_thread_;
  std::vector<double> sums_;
  std::vector<unsigned long long> counts_;
  std::vector<double> inertia_;
  uint64_t updates_ = 0;
  std::vector<int32_t> labels_;
  bool labels_valid_ = false;
};

class CpuOpenMp : public Variant {
 public:
  std::string name() const override { return "cpu-openmp"; }
  std::string description() const override {
    return "CPU baseline: OpenMP over points, FP32 distances, per-thread FP64 sums merged after the loop";
  }
  bool runs_on_gpu() const override { return false; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo&) const override {
    const double need = bytes_needed(problem, hardware_threads());
    const double have = physical_memory_bytes();
    if (have > 0 && need > 0.8 * have)
      return "needs about " + std::to_string(int64_t(need / (1 << 20))) + " MiB of host memory, machine has " +
             std::to_string(int64_t(have / (1 << 20))) + " MiB";
    return std::nullopt;
  }

  // Host memory: the run's copy of the points, two centroid layouts, each thread's
  // accumulators, and the labels when asked for.
  DeviceFootprint device_footprint(const Problem& problem, const Params& params, const DeviceInfo&,
                                   bool with_labels) const override {
    int threads = omp_get_max_threads();
    if (params.is_object() && params.contains("threads") && params.at("threads").is_number_integer() &&
        params.at("threads").get<int>() > 0)
      threads = params.at("threads").get<int>();
    const double slots = problem.k.sum();
    const double per_thread = slots * problem.n * 8.0 + slots * 8.0 + slots * 4.0 + problem.k.count() * 8.0;
    DeviceFootprint footprint;
    footprint.add("points (copy)", problem.data_bytes());
    footprint.add("centroids", slots * problem.n * 4.0 * 2.0);
    footprint.add("per-thread accumulators", double(threads) * per_thread);
    if (with_labels) footprint.add("labels", double(problem.k.count()) * double(problem.m) * 4.0);
    return footprint;
  }

  ParamSpace param_space(const Problem&, const DeviceInfo&) const override {
    ParamSpace space;
    space.axes.push_back({"threads", {0, 1, 2, 4, 8, 16, 32, 64}, "OpenMP threads (0 = all the runtime offers)"});
    space.axes.push_back({"schedule_chunk", {1024, 8192, 65536}, "points per dynamic-schedule chunk"});
    const int available = hardware_threads();
    space.restrictions.push_back(
        {"threads <= hardware threads (" + std::to_string(available) + ") when nonzero",
         [available](const Params& params) {
           const int threads = params.at("threads").get<int>();
           return threads == 0 || threads <= available;
         }});
    return space;
  }

  Params default_params(const Problem&, const DeviceInfo&) const override {
    return {{"threads", 0}, {"schedule_chunk", 8192}};
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo&) const override {
    return std::make_unique<CpuOpenMpRun>(problem, data, params);
  }
};

MKBENCH_REGISTER_VARIANT(CpuOpenMp);

}  // namespace
}  // namespace mk
