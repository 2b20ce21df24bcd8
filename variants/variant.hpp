#pragma once
// The variant contract. A variant is one file under variants/ that declares its name,
// what it can do, and its tunable space as data, and registers itself with
// MKBENCH_REGISTER_VARIANT. Nothing central switches on variant names.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/dataset.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "variants/step.hpp"

namespace mk {

using Params = nlohmann::json;  // object: axis name -> value (int or string)

struct Axis {
  std::string name;
  std::vector<nlohmann::json> values;  // allowed values, in the order a sweep visits them
  std::string help;
};

struct Restriction {
  std::string description;  // shown by `mkbench list` and in refusals, e.g. "block*ppt <= M"
  std::function<bool(const Params&)> allows;
};

struct ParamSpace {
  std::vector<Axis> axes;
  std::vector<Restriction> restrictions;
  // Legal points that run the code of another legal point (a value such as auto that stands for
  // one of its axis's others): check() accepts them, enumerate() leaves them out, so a search does
  // not measure one configuration twice. `allows` is false for the point that repeats another.
  std::vector<Restriction> repeats;

  const Axis* find(const std::string& name) const;
  // nullopt when params are a legal point of the space; otherwise the reason.
  std::optional<std::string> check(const Params& params) const;
  // Every legal combination that repeats no other (the exhaustive tuner's list, in axis order).
  std::vector<Params> enumerate() const;
  size_t size_unrestricted() const;
  nlohmann::json to_json() const;
};

// Result of one Lloyd iteration for one K of the range.
struct KResult {
  int k = 0;
  std::vector<float> centroids;   // k*n row-major, after the update
  std::vector<int64_t> counts;    // k
  double inertia = 0;             // Σ min squared distance, w.r.t. the centroids before the update
  LabelValues labels;             // m, only when labels were requested
};

struct IterationResult {
  std::vector<KResult> per_k;  // kmin..kmax in order
};

// A variant bound to one problem, dataset and parameter point: device memory allocated,
// data uploaded. Timed code calls iterate() only.
class PreparedRun {
 public:
  virtual ~PreparedRun() = default;
  // Replace the current centroids (packed per KRange::slot_offset).
  virtual void set_centroids(const std::vector<float>& packed) = 0;
  // One full Lloyd iteration for every K: assignment and update, no host round trip.
  // Asynchronous on GPU variants; store_labels materialises labels for read_back().
  virtual void iterate(bool store_labels) = 0;
  virtual void synchronize() = 0;
  virtual IterationResult read_back() = 0;
  // cudaStream_t as void* so CPU-only translation units need no CUDA headers.
  virtual void* stream() { return nullptr; }
  // Time of a one-time conversion of the points made while preparing (a layout the timed
  // iterations read instead of the rows), when there was one.
  virtual std::optional<double> conversion_ms() const { return std::nullopt; }

  // One step in two phases, for the applications (variants/step.hpp; the design, with the
  // extensions later work adds, is docs/variant-interface.md). A run that cannot split its
  // step throws UnsupportedError from these.
  //   accumulate(): assignment and FP64 sums, counts and inertia; the centroids stay as they are.
  //   accumulators(): those sums in the run's memory, for a hook (all-reduce, chunk sums).
  //   update(): sums / counts into centroids for the active Ks, with the empty-cluster policy,
  //             and the per-K summary (one small read-back).
  virtual void accumulate(const AccumulateOptions& options);
  virtual AccumulatorRefs accumulators();
  virtual StepSummary update(const UpdateOptions& options);
  // Optional: builds now what the split step would build on first use (tensor-multik compiles
  // its sums kernels, about 0.7 s of NVRTC), so a loop timed from its first step measures steps.
  virtual void prepare_split() {}

  // Out-of-core (Problem::streamed; docs/out-of-core.md): where the next chunk's points go,
  // and how many rows the next accumulate() reads. Runs that cannot take new points between
  // steps throw UnsupportedError.
  virtual PointsSlot points_slot();
  virtual void set_point_count(int64_t rows);
  // Optional, out of core from a generator: whether the run can make rows of `spec` itself,
  // where its kernel reads its points (no buffer, no copy), and the rows the next accumulate()
  // reads that way: [first_row, first_row + the point count). The next points_slot() returns
  // the run to its buffer. The default cannot (UnsupportedError); docs/out-of-core.md,
  // "Generated chunks".
  virtual bool reads_generated_rows(const GeneratorSpec&) const { return false; }
  virtual void set_generated_rows(const GeneratorSpec& spec, int64_t first_row);
  // Optional hint from a fit: a later read_back() carries labels (its final pass). A run that
  // copies labels into new host memory may ready that memory now, while the steps run.
  virtual void expect_labels_read_back() {}
};

// What a prepared run holds where it runs, at its peak (transient copies made while
// preparing included): the GPU's memory for GPU variants, host memory for CPU variants. The
// harness plans memory from it before allocating anything (harness/memory_plan.hpp,
// docs/memory-planning.md), so an estimate that is too low ends in a cudaMalloc failure
// (exit 4) instead of a clear refusal, and one far too high refuses runs that would fit.
struct DeviceFootprint {
  struct Part {
    std::string what;  // "points", "labels", "prepared operands", ...
    int64_t bytes = 0;
  };
  std::vector<Part> parts;

  DeviceFootprint& add(const std::string& what, double bytes);  // parts of 0 bytes are skipped
  int64_t total() const;
  std::string describe() const;  // "points 2.0 GiB + labels 640.0 MiB + ..."
};

// The buffers every GpuRun's LloydState allocates (variants/common/gpu_lloyd_state.cuh):
// points (AoS padded to kAosPointPadding rows; SoA with a staging copy while transposing),
// centroids, FP64 sums, counts, inertia, and labels when asked for.
DeviceFootprint lloyd_state_footprint(const Problem& problem, Layout layout, bool with_labels);

// AoS points on the device are followed by zero rows up to a multiple of this many points,
// so a kernel may copy whole warp-sized steps of points without a bounds check per copy.
inline constexpr int64_t kAosPointPadding = 32;

class Variant {
 public:
  virtual ~Variant() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual bool runs_on_gpu() const = 0;
  // nullopt if the variant can solve the problem on this device; otherwise why not.
  virtual std::optional<std::string> can_implement(const Problem& problem,
                                                   const DeviceInfo& device) const = 0;
  virtual ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const = 0;
  // Documented heuristic used when neither the user nor a tuned config gives parameters.
  virtual Params default_params(const Problem& problem, const DeviceInfo& device) const = 0;
  // A tuned point from a nearby shape's entry, made to fit this shape where the variant knows a
  // value's equivalent here (tuner/tuned_config.cpp applies it before checking the space). The
  // default changes nothing: an entry whose point does not fit is then passed over.
  virtual Params adapt_tuned_params(const Problem&, const DeviceInfo&, Params params) const { return params; }
  virtual std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data,
                                               const Params& params,
                                               const DeviceInfo& device) const = 0;
  // Optional: one prepared run serving a whole batch (problem.batch > 1, the problems' rows one
  // after another in `data`, `params` resolved for one problem) with one launch a kernel, or
  // null where the variant cannot for these parameters: the batch then runs one prepared run a
  // problem, each on its own stream (variants/batched/batched_variant.hpp).
  virtual std::unique_ptr<PreparedRun> prepare_batch(const Problem&, const Dataset&, const Params&,
                                                     const DeviceInfo&) const {
    return nullptr;
  }
  // Bytes prepare() and iterate() allocate for `params` (resolved), with labels when
  // `with_labels` (verification, --store-labels). The default is lloyd_state_footprint with
  // the "layout" parameter for GPU variants, and the points plus labels for CPU variants;
  // a variant that allocates more (tiles, prepared operands, CSR arrays) adds its buffers.
  virtual DeviceFootprint device_footprint(const Problem& problem, const Params& params, const DeviceInfo& device,
                                           bool with_labels) const;
};

class Registry {
 public:
  static Registry& instance();
  void add(std::unique_ptr<Variant> variant);
  const Variant* find(const std::string& name) const;
  const Variant& get(const std::string& name) const;  // throws InputError listing known names
  std::vector<const Variant*> all() const;

 private:
  std::vector<std::unique_ptr<Variant>> variants_;
};

template <typename V>
struct VariantRegistrar {
  VariantRegistrar() { Registry::instance().add(std::make_unique<V>()); }
};

#define MKBENCH_CONCAT_INNER(a, b) a##b
#define MKBENCH_CONCAT(a, b) MKBENCH_CONCAT_INNER(a, b)
#define MKBENCH_REGISTER_VARIANT(Class) \
  static ::mk::VariantRegistrar<Class> MKBENCH_CONCAT(mkbench_registrar_, __LINE__)

// The refusal (can_implement) of variants that cannot take points streamed in chunks
// (Problem::streamed).
inline constexpr const char* kRefuseStreamed =
    "it derives state from all the points when it prepares, so it cannot take them in chunks (out-of-core); "
    "registers-multik, shared-atomics, warp-centric, gemm-cublas, naive-atomics and cpu-openmp can";

// Merge user-supplied params over defaults, then check them against the space.
// Throws UnsupportedError with the restriction text when illegal.
Params resolve_params(const Variant& variant, const Problem& problem, const DeviceInfo& device,
                      const Params& overrides);

// Canonical "grid=264,ppt=64,block=256" text used in row names and NVTX ranges.
std::string params_label(const Params& params);

}  // namespace mk
