// The CPU engine of the subset batch: the FP64 reference of the GPU engine, and what runs
// where there is no GPU (CI). Every problem keeps FP64 centroids and sums; a point goes to
// the nearest centroid by Σ(x − c)² in FP64, ties to the lower index. A step also scores
// itself: its points per (cluster, class) and the inertia of its partition about the means it
// moves the centroids to, so score() has nothing left to do.
//
// The table is read in tiles of rows that stay in cache while every active problem passes
// over them (the GPU engine's idea, at cache scale); within a tile one thread owns a
// problem, so its sums are added in row order and the result does not depend on the thread
// count or the schedule.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/errors.hpp"
#include "variants/subset_batch/engines.hpp"

namespace mk::batch {
namespace {

// 2048 rows of 18 floats are 144 KB: inside a core's L2 on the machines CI and the lease use.
constexpr int64_t kTileRows = 2048;

class CpuSubsetRun : public SubsetBatchRun {
 public:
  CpuSubsetRun(const SharedTable& table, const SubsetProblems& problems)
      : data_(*table.data),
        labels_(table.classes > 0 ? table.labels : nullptr),
        classes_(std::max(table.classes, 1)),
        s_(problems.s),
        k_(problems.k),
        count_(problems.count),
        columns_(problems.columns),
        centroids_(problems.centroids.begin(), problems.centroids.end()),
        thresholds_(problems.thresholds),
        active_(size_t(problems.count), 1),
        steps_(size_t(problems.count), 0),
        converged_(size_t(problems.count), 0),
        class_counts_(size_t(problems.count) * problems.k * classes_, 0),
        inertia_(size_t(problems.count), 0.0) {}

  int64_t step() override {
    std::vector<int64_t> active;
    for (int64_t b = 0; b < count_; ++b)
      if (active_[b]) active.push_back(b);
    const size_t a_count = active.size();
    std::vector<double> sums(a_count * k_ * s_, 0.0), distances(a_count, 0.0);
    std::vector<int64_t> counts(a_count * k_, 0), cells(a_count * k_ * classes_, 0);
    for_tiles(active, [&](size_t slot, int64_t b, int64_t row, const double* x, int nearest, double distance) {
      (void)b;
      double* sum = sums.data() + (slot * k_ + nearest) * s_;
      for (int d = 0; d < s_; ++d) sum[d] += x[d];
      ++counts[slot * k_ + nearest];
      ++cells[(slot * k_ + nearest) * classes_ + (labels_ ? (*labels_)[size_t(row)] : 0)];
      distances[slot] += distance;
    });
    int64_t still = 0;
#pragma omp parallel for schedule(static) reduction(+ : still)
    for (int64_t slot = 0; slot < int64_t(a_count); ++slot) {
      const int64_t b = active[slot];
      double shift = 0;
      // Σ‖x − μ_j‖² = Σ‖x − c_j‖² − n_j‖μ_j − c_j‖² per cluster: the step's inertia about its means.
      double inertia = distances[slot];
      for (int j = 0; j < k_; ++j) {
        const int64_t count = counts[slot * k_ + j];
        if (count == 0) continue;  // keep: an empty cluster keeps its centroid
        double* c = centroids_.data() + (b * k_ + j) * s_;
        double moved = 0;
        for (int d = 0; d < s_; ++d) {
          const double next = sums[(slot * k_ + j) * s_ + d] / double(count);
          moved += (next - c[d]) * (next - c[d]);
          c[d] = next;
        }
        shift += moved;
        inertia -= double(count) * moved;
      }
      inertia_[b] = std::max(0.0, inertia);
      std::copy(cells.begin() + slot * k_ * classes_, cells.begin() + (slot + 1) * k_ * classes_,
                class_counts_.begin() + b * k_ * classes_);
      ++steps_[b];
      if (shift <= thresholds_[b]) {
        active_[b] = 0;
        converged_[b] = 1;
      } else {
        ++still;
      }
    }
    return still;
  }

  void score() override {
    if (std::none_of(steps_.begin(), steps_.end(), [](int32_t steps) { return steps > 0; }))
      throw InputError("subset batch: score() before any step");
  }

  SubsetOutcome read_back() override {
    SubsetOutcome out;
    out.s = s_;
    out.k = k_;
    out.classes = labels_ ? classes_ : 0;
    out.count = count_;
    out.centroids.assign(centroids_.begin(), centroids_.end());
    out.steps = steps_;
    out.converged = converged_;
    out.inertia = inertia_;
    out.class_counts = class_counts_;
    return out;
  }

  double prepare_seconds() const override { return 0; }

 private:
  // visit(slot, problem, row, x (its s values), nearest centroid, squared distance) for every
  // row and every listed problem; calls for one problem come in row order from one thread.
  template <typename Visit>
  void for_tiles(const std::vector<int64_t>& problems, Visit visit) {
    const int64_t m = data_.m;
    const int n = data_.n;
    const float* values = data_.values.data();
    const int64_t listed = int64_t(problems.size());
#pragma omp parallel
    {
      std::vector<double> x(s_);
      for (int64_t start = 0; start < m; start += kTileRows) {
        const int64_t end = std::min(m, start + kTileRows);
#pragma omp for schedule(dynamic, 4)
        for (int64_t slot = 0; slot < listed; ++slot) {
          const int64_t b = problems[slot];
          const int32_t* cols = columns_.data() + b * s_;
          const double* c = centroids_.data() + b * k_ * s_;
          for (int64_t row = start; row < end; ++row) {
            const float* point = values + row * n;
            for (int d = 0; d < s_; ++d) x[d] = point[cols[d]];
            int nearest = 0;
            double best = std::numeric_limits<double>::infinity();
            for (int j = 0; j < k_; ++j) {
              double distance = 0;
              for (int d = 0; d < s_; ++d) {
                const double delta = x[d] - c[j * s_ + d];
                distance += delta * delta;
              }
              if (distance < best) best = distance, nearest = j;
            }
            visit(size_t(slot), b, row, x.data(), nearest, best);
          }
        }
      }
    }
  }

  const Dataset& data_;
  const std::vector<int32_t>* labels_;
  int classes_;
  int s_, k_;
  int64_t count_;
  std::vector<int32_t> columns_;
  std::vector<double> centroids_;
  std::vector<double> thresholds_;
  std::vector<uint8_t> active_;
  std::vector<int32_t> steps_;
  std::vector<uint8_t> converged_;
  std::vector<int64_t> class_counts_;
  std::vector<double> inertia_;
};

class CpuSubsetEngine : public SubsetBatchEngine {
 public:
  std::string name() const override { return "cpu-openmp"; }
  std::string description() const override {
    return "FP64 reference on the host (OpenMP over problems, tiles of rows in cache)";
  }
  std::optional<std::string> can_run(const SubsetShape&, const DeviceInfo&) const override { return std::nullopt; }
  std::unique_ptr<SubsetBatchRun> prepare(const SharedTable& table, const SubsetProblems& problems,
                                          const DeviceInfo&) const override {
    check_subset_input(table, problems);
    return std::make_unique<CpuSubsetRun>(table, problems);
  }
};

}  // namespace

const SubsetBatchEngine& cpu_subset_engine() {
  static const CpuSubsetEngine engine;
  return engine;
}

}  // namespace mk::batch
