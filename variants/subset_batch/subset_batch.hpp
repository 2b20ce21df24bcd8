#pragma once
// Batched k-means over column subsets of one shared table: B independent problems, each with
// its own s columns of the table, its own k centroids, its own convergence and its own
// (cluster × class) counts, solved together so that one read of the table serves every
// problem. This is the "problems that share one table through column subsets" form of the
// batched interface of issue 32 (docs/variant-interface.md, Problem::batch / columns); the
// explorer (apps/explore, seed 000 §4) is its first user. docs/explore.md describes the
// engines; variants/subset_batch/kernel/ holds the GPU kernels.
//
// A run is three calls, like the step interface of the variants (variants/step.hpp):
//   step()        one Lloyd step of every problem still active: assignment, sums, update with
//                 the keep policy (an empty cluster keeps its centroid), and the per-problem
//                 shift Σ‖c_new − c_old‖²; a problem whose shift is at most its threshold is
//                 frozen after this step (`mkbench fit`'s per-K rule, per problem here);
//   score()       each problem's last step scored: its points per (cluster, class) in that
//                 step's assignment, and the inertia of that partition about its means (the
//                 final centroids). Seed 000 recodes the table with the clusters of its 5th
//                 iteration and counts 5 passes; scikit-learn's labels_ would need a sixth
//                 (docs/explore.md, "The score"). An engine may count during the steps
//                 (the CUDA engine's last step counts two classes in its count lane), so
//                 score() then only finishes what the steps gathered;
//   read_back()   centroids, steps, convergence, counts and inertia of every problem.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "datasets/dataset.hpp"

namespace mk::batch {

// The table every problem reads, and its class labels (dense class ids 0..classes-1; empty
// labels with classes = 0: the label pass then counts points per cluster only).
struct SharedTable {
  const Dataset* data = nullptr;
  const std::vector<int32_t>* labels = nullptr;
  int classes = 0;
};

struct SubsetProblems {
  int s = 0;                         // columns per problem
  int k = 0;                         // centroids per problem
  int64_t count = 0;                 // B
  std::vector<int32_t> columns;      // B × s attribute indices, each in [0, n)
  std::vector<float> centroids;      // B × k × s initial centroids, in data units
  std::vector<double> thresholds;    // B: frozen after a step whose shift is <= this (absolute)
};

struct SubsetOutcome {
  int s = 0, k = 0, classes = 0;
  int64_t count = 0;
  std::vector<float> centroids;       // B × k × s, in data units
  std::vector<int32_t> steps;         // B: steps taken (the converging step included)
  std::vector<uint8_t> converged;     // B: 1 when the shift fell to the threshold
  std::vector<double> inertia;        // B: Σ squared distance of the last step's partition to its means
  std::vector<int64_t> class_counts;  // B × k × max(classes, 1): points per (cluster, class), last step
  // Cluster j of problem b holds Σ_c class_counts[(b·k + j)·C + c] points.
  int64_t cluster_size(int64_t b, int j) const;
};

// Why a shape cannot run on an engine, or nullopt.
struct SubsetShape {
  int64_t m = 0;
  int n = 0, s = 0, k = 0, classes = 0;
  int64_t count = 0;
};

class SubsetBatchRun {
 public:
  virtual ~SubsetBatchRun() = default;
  // Returns the number of problems still active after the step (0: all converged).
  virtual int64_t step() = 0;
  // After at least one step (InputError before).
  virtual void score() = 0;
  virtual SubsetOutcome read_back() = 0;
  // Seconds spent preparing (uploading the table on a GPU), for the report.
  virtual double prepare_seconds() const = 0;
};

class SubsetBatchEngine {
 public:
  virtual ~SubsetBatchEngine() = default;
  virtual std::string name() const = 0;  // "cpu-openmp" | "cuda"
  virtual std::string description() const = 0;
  virtual std::optional<std::string> can_run(const SubsetShape& shape, const DeviceInfo& device) const = 0;
  // The problems are copied; the table must outlive the run (a GPU engine uploads it here,
  // the CPU engine reads it in place).
  virtual std::unique_ptr<SubsetBatchRun> prepare(const SharedTable& table, const SubsetProblems& problems,
                                                  const DeviceInfo& device) const = 0;
};

// The engines: "cpu-openmp" (the FP64 reference, any shape) and "cuda" (one launch per step
// for every problem). Throws InputError listing the names for another.
const SubsetBatchEngine& subset_engine(const std::string& name);
std::vector<std::string> subset_engine_names();

// InputError for an inconsistent input (sizes that disagree, a column outside the table, a
// label outside 0..classes-1, a threshold that is negative or not a number), before any work.
void check_subset_input(const SharedTable& table, const SubsetProblems& problems);

// Solves every problem: step() until none is active or max_iter (>= 1) steps, then score().
SubsetOutcome solve_subsets(SubsetBatchRun& run, int max_iter);

}  // namespace mk::batch
