#pragma once
// Measuring one row: a variant bound to a problem, dataset and parameter point, timed
// with Google Benchmark (manual time from CUDA events, or steady_clock for CPU variants),
// optionally verified against the FP64 reference before and after the timed loop.
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "harness/results.hpp"
#include "variants/variant.hpp"

namespace mk {

inline constexpr int kRecommendedMinSamples = 10;

struct RowSpec {
  const Variant* variant = nullptr;
  Problem problem;
  Params params = Params::object();  // user/suite overrides; resolve_params fills the rest
  const Dataset* dataset = nullptr;
  std::vector<float> init_centroids;  // packed per KRange::slot_offset
  int warmup = 3;
  int samples = 20;
  bool verify = false;
  bool store_labels = false;  // materialise labels in the timed loop too
  // Out of core (docs/out-of-core.md): forced with chunks of this many points, or with the
  // largest that fit; otherwise the memory plan streams the points only when they do not fit.
  int64_t chunk_points = 0;
  bool out_of_core = false;
};

struct MeasureOptions {
  bool benchmark_console = false;  // let Google Benchmark print its own report (to stderr)
  // GPU rows: hold the stream (hold_stream) before each sample's start event, so the events
  // time the GPU's work and not the host's launch latency too. Off by default: on the H200 it took
  // ~3.5 µs off a 50 µs launch but put 0.3-1.8 % on the 32M-point cases, whose kernels then ran
  // slower than when launched onto an idle GPU (e71fbcf,
  // reports/results/nvidia-h200/ab/tensor-multik-launch-hold.txt), so the default stays the
  // measurement every earlier result used.
  bool hide_launch_latency = false;
  // The row's 1-based place in its command (a suite's [i/n]; 0 = none), which the
  // MKBENCH_FAULT_ROW seam may name (harness/fault_injection.hpp).
  size_t row_index = 0;
};

// Never throws for refusals or device failures: those become rows with status
// "refused"/"failed" and a reason. Throws InputError for a malformed spec. A row whose memory
// plan (harness/memory_plan.hpp) does not fit the GPU's free memory, or the host's, is
// refused before the variant allocates anything.
ResultRow measure_row(const RowSpec& spec, const DeviceInfo& device, const MeasureOptions& options = {});

// Makes `ordinal` the current CUDA device (no-op without a GPU); DeviceError on failure.
void select_device(int ordinal);

}  // namespace mk
