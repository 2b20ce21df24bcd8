// cpu-openmp: the CPU baseline, and the only variant on a machine without a GPU.
// Distances are computed in FP32 like the GPU variants, so a speedup over this row compares
// like with like; sums and inertia are FP64 per thread and merged once after the parallel
// loop, so accuracy does not depend on the thread count or the schedule.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/errors.hpp"
#include "harness/variant.hpp"

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

// One thread's private accumulators. Each lives in its own allocation so threads never
// write to the same cache line.
struct ThreadAccumulators {
  std::vector<double> sums;      // slots*n
  std::vector<int64_t> counts;   // slots
  std::vector<double> inertia;   // one per K
  std::vector<float> distances;  // slots: scratch for the point being classified
};

class CpuOpenMpRun : public PreparedRun {
 public:
  CpuOpenMpRun(const Problem& problem, const Dataset& data, const Params& params)
      : problem_(problem),
        slots_(problem.k.sum()),
        threads_(params.at("threads").get<int>() > 0 ? params.at("threads").get<int>() : omp_get_max_threads()),
        chunk_(params.at("schedule_chunk").get<int>()),
        // A private copy, like a GPU upload: the run must not depend on the caller keeping
        // its dataset alive.
        points_(data.values),
        centroids_(size_t(slots_) * problem.n, 0.0f),
        centroids_by_dimension_(size_t(slots_) * problem.n, 0.0f),
        per_thread_(threads_) {
    if (data.m != problem.m || data.n != problem.n)
      throw InputError("cpu-openmp: dataset is " + std::to_string(data.m) + "x" + std::to_string(data.n) +
                       " but the problem is " + problem.str());
    for (auto& acc : per_thread_) {
      acc.sums.resize(size_t(slots_) * problem.n);
      acc.counts.resize(slots_);
      acc.inertia.resize(problem.k.count());
      acc.distances.resize(slots_);
    }
    counts_.assign(slots_, 0);
    inertia_.assign(problem.k.count(), 0.0);
  }

  void set_centroids(const std::vector<float>& packed) override {
    if (packed.size() != centroids_.size())
      throw InputError("centroid array has " + std::to_string(packed.size()) + " values, expected " +
                       std::to_string(centroids_.size()));
    centroids_ = packed;
  }

  void iterate(bool store_labels) override {
    const int n = problem_.n;
    const int64_t m = problem_.m;
    const KRange ks = problem_.k;
    if (store_labels && labels_.empty()) labels_.resize(size_t(ks.count()) * size_t(m));
    labels_valid_ = store_labels;

    // Dimension-major centroids let the inner loop run over centroid slots, which the
    // compiler vectorises regardless of how small N is.
    for (int s = 0; s < slots_; ++s)
      for (int d = 0; d < n; ++d) centroids_by_dimension_[size_t(d) * slots_ + s] = centroids_[size_t(s) * n + d];

    for (auto& acc : per_thread_) {
      std::fill(acc.sums.begin(), acc.sums.end(), 0.0);
      std::fill(acc.counts.begin(), acc.counts.end(), 0);
      std::fill(acc.inertia.begin(), acc.inertia.end(), 0.0);
    }

    const float* points = points_.data();
    const float* by_dimension = centroids_by_dimension_.data();
    int32_t* labels = store_labels ? labels_.data() : nullptr;
    const int slots = slots_;

#pragma omp parallel num_threads(threads_)
    {
      ThreadAccumulators& acc = per_thread_[omp_get_thread_num()];
      float* dist = acc.distances.data();
      double* sums = acc.sums.data();
      int64_t* counts = acc.counts.data();
      double* inertia = acc.inertia.data();
#pragma omp for schedule(dynamic, chunk_) nowait
      for (int64_t i = 0; i < m; ++i) {
        const float* x = points + size_t(i) * n;
        for (int s = 0; s < slots; ++s) dist[s] = 0.0f;
        for (int d = 0; d < n; ++d) {
          const float xd = x[d];
          const float* column = by_dimension + size_t(d) * slots;
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
          double* slot_sums = sums + size_t(slot) * n;
          for (int d = 0; d < n; ++d) slot_sums[d] += double(x[d]);
          counts[slot] += 1;
          inertia[k - ks.kmin] += double(best);
          if (labels) labels[size_t(k - ks.kmin) * size_t(m) + size_t(i)] = best_c;
        }
      }
    }

    // Merge in thread order: the result is the same for any schedule.
    std::vector<double> sums(size_t(slots_) * n, 0.0);
    std::fill(counts_.begin(), counts_.end(), 0);
    std::fill(inertia_.begin(), inertia_.end(), 0.0);
    for (const auto& acc : per_thread_) {
      for (size_t j = 0; j < sums.size(); ++j) sums[j] += acc.sums[j];
      for (int s = 0; s < slots_; ++s) counts_[s] += acc.counts[s];
      for (int k = 0; k < ks.count(); ++k) inertia_[k] += acc.inertia[k];
    }
    for (int s = 0; s < slots_; ++s) {
      if (counts_[s] == 0) continue;  // empty cluster keeps its previous centroid
      const double inv = 1.0 / double(counts_[s]);
      for (int d = 0; d < n; ++d) centroids_[size_t(s) * n + d] = float(sums[size_t(s) * n + d] * inv);
    }
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
  std::vector<float> points_;
  std::vector<float> centroids_;
  std::vector<float> centroids_by_dimension_;
  std::vector<ThreadAccumulators> per_thread_;
  std::vector<int64_t> counts_;
  std::vector<double> inertia_;
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
