#pragma once
// tensor-multik's host side of the kernel: the shape rules and resources of a parameter point,
// and the NVRTC specialisation (the #defines kernel/config.cuh reads) with its cache.
#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <string>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "variants/common/nvrtc_module.hpp"
#include "variants/variant.hpp"

namespace mk::tensor_multik {

// Register budget: centroid fragments (4 per n-tile and k-step) and update accumulators (4
// per n-tile and row tile) stay resident for the whole kernel.
constexpr int kMaxSlots = 64;
constexpr int kMaxTilesTimesSteps = 8;
// A point's inertia term is taken exactly when the expansion's error bound (TIE_SCALE/2 of the
// scale) could exceed 1/128 of its distance: data whose points sit close to their centroids
// (tight blobs) then gets exact terms, while on uniform data 0.001–0.09 % of points per K
// group pay (N=16 down to N=4, first-K initial centroids). A fixed 2 % of the scale,
// registers-multik's rule, flags 0.2–0.9 % per K group at N=8, and every flagged point costs
// its warp a pass through the fix-up.
constexpr double kGuardOverTieScale = 64.0;
// operands=prepared: the step this many steps beyond the next one is asked into L2.
constexpr int kDefaultPrefetchAhead = 0;

int n_tiles(int sum_k);
int k_steps(int n);

// Forward-error window of the expanded distances (see kernel_config.cpp) and FP16's absolute
// floor, both relative to the scale ‖x‖² + 2·max‖c‖² (the kernel's TIE_SCALE and ABS_SCALE).
double tie_scale(int n, int kmax, bool packed_keys, bool f16_distance, bool centred);
double abs_window_scale(int n);

// Dynamic shared memory of one block, in bytes: exact centroids, norms, and per warp a ring
// of `stages` 32-point steps plus the 32-row transpose buffer. The ring holds FP32 rows
// (32·N floats a step) or nothing (fetch=registers).
enum class Ring { rows, none };
int64_t dynamic_smem_bytes(int n, int sum_k, int block, int stages, Ring ring_kind = Ring::rows);
int64_t smem_limit(const DeviceInfo& device);

struct KernelConfig {
  int n, kmin, kmax, block, min_blocks, stages;
  bool stmatrix;
  bool update_f16;
  bool scale_points;  // the FP16 update multiplies points by a power of two first
  bool shared_fragments;  // centroid operands re-read from shared memory every step
  bool argmin_mask;       // in-window bit masks instead of index-packed keys
  bool f16_distance;      // distance product in FP16 hi + lo (m16n8k16), operands shared with the update
  bool fetch_registers;   // points straight from global memory into fragment registers, no stage ring
  bool prepared_operands;   // operands=prepared: FP16 fragment words and ‖x‖² prepared once
  int cc_major, cc_minor;
  // operands=prepared compiles the labels store in or out (its pointer test cost ~5
  // instructions a step): iterations that keep labels get their own kernel, built on first use.
  // Per-step kernels keep the test (compiled out, N=16 and N=5 spilled 4 bytes more).
  bool store_labels = false;
  int prefetch_ahead = 0;  // operands=prepared: steps beyond the next one asked into L2 (0: none)
  bool int_group_min = false;  // group_min=int: keys biased non-negative, minimised as integers
  bool timeline = false;       // MKBENCH_TIMELINE: the kernel stamps where each block's time goes
  // The accumulate phase of a split step (variants/step.hpp): the last block leaves the FP64 sums,
  // of the points in data units, in the run's sums instead of dividing them into centroids.
  bool sums_out = false;
  bool operator<(const KernelConfig& o) const {
    return std::tie(n, kmin, kmax, block, min_blocks, stages, stmatrix, update_f16, scale_points, shared_fragments,
                    argmin_mask, f16_distance, fetch_registers, prepared_operands, cc_major, cc_minor,
                    store_labels, prefetch_ahead, int_group_min, timeline, sums_out) <
           std::tie(o.n, o.kmin, o.kmax, o.block, o.min_blocks, o.stages, o.stmatrix, o.update_f16, o.scale_points,
                    o.shared_fragments, o.argmin_mask, o.f16_distance, o.fetch_registers, o.prepared_operands,
                    o.cc_major, o.cc_minor, o.store_labels, o.prefetch_ahead, o.int_group_min, o.timeline,
                    o.sums_out);
  }
};

gpu::RuntimeCompileRequest compile_request(const KernelConfig& config);
// Compiled and loaded once per process and configuration.
cudaKernel_t compiled_kernel(const KernelConfig& config);

bool f16_distance_applies(int n, const Params& params);
bool prepared_operands_requested(const Params& params);
std::optional<std::string> fetch_registers_refusal(int n, int sum_k, const Params& params,
                                                   const std::string& form = "fetch=registers");
std::optional<std::string> prepared_operands_refusal(int n, int sum_k, const Params& params);
bool int_group_min_requested(const Params& params);
std::optional<std::string> int_group_min_refusal(const Params& params);
Ring ring_kind(const Params& params);
KernelConfig config_for(const Problem& problem, const Params& params, int cc_major, int cc_minor,
                        float point_scale = 1.f);

}  // namespace mk::tensor_multik
