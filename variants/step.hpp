#pragma once
// One Lloyd step split in two phases, for the applications built on the variants (fit,
// out-of-core, multi-GPU, explore, quantize, Python). The timed `iterate()` of the benchmark
// stays one fused call; applications call accumulate() -> [the accumulator hook] -> update().
// docs/variant-interface.md gives the whole design, including the parts later work fills in.
#include <cstdint>
#include <string>
#include <vector>

namespace mk {

// What happens to a cluster that received no point in a step.
//   keep:     it keeps its previous centroid (the benchmark's policy in every variant).
//   farthest: it moves to the point farthest from its own centroid, and that point leaves
//             its old cluster's sums, as scikit-learn relocates empty clusters.
//   random:   it moves to a uniformly drawn point (seed 003 redraws a random colour); the
//             other clusters' sums are untouched.
enum class EmptyPolicy { Keep, Farthest, Random };
const char* to_string(EmptyPolicy policy);
EmptyPolicy parse_empty_policy(const std::string& text);  // InputError for anything else

struct AccumulateOptions {
  bool store_labels = false;  // materialise labels (per K) for read_back()
  // One flag per K of the range (kmin first), as UpdateOptions::active: a K whose flag is 0 is
  // frozen by the caller, so a run may leave it out of this pass (its sums, counts, inertia
  // and labels are then not computed; the update leaves it as it is). Empty = every K. Runs
  // that cannot skip a K compute it anyway (gemm-cublas skips: docs/variant-interface.md).
  std::vector<uint8_t> active;
};

// The FP64 accumulators of a step, where the run keeps them (device memory for GPU runs,
// host memory for CPU runs), for a hook between accumulate() and update(): an all-reduce
// across devices, or sums carried across chunks. Slots are packed per KRange::slot_offset.
struct AccumulatorRefs {
  double* sums = nullptr;              // slots * n
  unsigned long long* counts = nullptr;  // slots
  double* inertia = nullptr;           // one per K of the range
  int slots = 0;
  int n = 0;
  int k_count = 0;
  bool on_device = false;
  void* stream = nullptr;  // cudaStream_t of the run (GPU runs): the hook works on it
};

// Where a run on a streamed problem (Problem::streamed, out-of-core) takes its next chunk of
// points: the chunked runner writes up to `capacity` rows there (row-major float32; device
// memory on `stream` when on_device), then calls PreparedRun::set_point_count(rows) before
// accumulate(). Rows past the count are the run's business (padding it zeroes itself).
struct PointsSlot {
  float* points = nullptr;
  int64_t capacity = 0;
  int n = 0;
  bool on_device = false;
  void* stream = nullptr;  // cudaStream_t of the run
};

struct UpdateOptions {
  // One flag per K of the range (kmin first); a K whose flag is 0 is frozen: its centroids,
  // counts and inertia are left as they are. Empty = every K moves.
  std::vector<uint8_t> active;
  EmptyPolicy empty = EmptyPolicy::Keep;
  uint64_t seed = 0;  // random policy: the draw depends on (seed, K, cluster) only
  // false: the caller reads no summary (a sharded run's iterate()), so a GPU run enqueues the
  // division and returns at once with an empty StepSummary, leaving the wait to the caller;
  // only with EmptyPolicy::Keep (the other policies act on the summary's empty counts). Host
  // runs compute the summary anyway.
  bool summary = true;
};

// What a step reports per K, in one small read-back: the convergence test and the progress
// line need nothing more.
struct KStepSummary {
  int k = 0;
  double inertia = 0;        // Σ squared distance to the centroids *before* the update
  double shift = 0;          // Σ over the K's centroids of ‖c_new − c_old‖² (0 when frozen)
  int empty = 0;             // clusters that received no point
  int relocated = 0;         // of those, moved by the empty policy
  bool active = true;
};

struct StepSummary {
  std::vector<KStepSummary> per_k;  // kmin..kmax
};

}  // namespace mk
