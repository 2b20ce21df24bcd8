// tensor-multik on the GPU: three Lloyd steps of every update, argmin, distance, fetch and
// operand form against the FP64 reference, over uniform, blobs, offset, tiny, tied and all-zero
// data. The CPU tests at the end check the cases themselves: each shape is one Hopper accepts
// (so a GPU run cannot skip it), and the offset cases' tolerance still sees a broken update.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "datasets/dataset.hpp"
#include "harness/reference.hpp"
#include "tests/reference_steps.hpp"
#include "tests/synthetic_devices.hpp"
#include "tests/variant_claims.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

Problem shape(int n, int kmin, int kmax, int64_t m) {
  Problem problem;
  problem.m = m;
  problem.n = n;
  problem.k = KRange{kmin, kmax};
  return problem;
}

struct DeviceCase {
  std::string name;
  int n, kmin, kmax;
  int64_t m;
  std::string kind;  // generator
  float scale, offset;  // every value becomes value·scale + offset
  std::string update;
  bool labels;
  float grid = 0.f;  // > 0: values rounded to multiples of it, so many distances tie exactly
  std::string fragments = "registers";  // where the centroid operands live
  std::string argmin = "packed";        // index-packed keys or in-window bit masks
  std::string distance = "tf32x3";      // the distance product's arithmetic
  std::string fetch = "ring";           // how points reach the fragments
  std::string operands = "per-step";    // FP16 operands split every step or prepared once
  int stages = 0;                       // ring depth; 0: the default
  std::string group_min = "float";      // each K group's minimum: FMNMX or biased integer keys
};

void PrintTo(const DeviceCase& c, std::ostream* os) { *os << c.name; }

// group_min=int's blind spot, counted in FP64 from the data alone: points with two keys of one
// K group below zero, a key being ‖x − c‖² − ‖x − μ‖² + bias with μ the data's mean and the bias
// the mean of ‖x − μ‖² (what the run adds to every key), for the given centroids.
int64_t points_with_two_negative_keys(const Dataset& data, const KRange& k, const std::vector<float>& centroids) {
  const int n = data.n;
  std::vector<double> mean(size_t(n), 0.0);
  for (int64_t i = 0; i < data.m; ++i)
    for (int d = 0; d < n; ++d) mean[size_t(d)] += data.values[size_t(i) * n + d];
  for (double& v : mean) v /= double(data.m);
  auto squared = [&](const float* x, auto&& coordinate) {
    double sum = 0.0;
    for (int d = 0; d < n; ++d) sum += (x[d] - coordinate(d)) * (x[d] - coordinate(d));
    return sum;
  };
  std::vector<double> centred(size_t(data.m));
  double bias = 0.0;
  for (int64_t i = 0; i < data.m; ++i) {
    centred[size_t(i)] = squared(&data.values[size_t(i) * n], [&](int d) { return mean[size_t(d)]; });
    bias += centred[size_t(i)];
  }
  bias /= double(data.m);
  int64_t points = 0;
  for (int64_t i = 0; i < data.m; ++i) {
    const float* x = &data.values[size_t(i) * n];
    bool two = false;
    for (int kk = k.kmin; kk <= k.kmax && !two; ++kk) {
      int negative = 0;
      for (int c = 0; c < kk; ++c) {
        const float* centroid = &centroids[size_t(k.slot_offset(kk) + c) * n];
        if (squared(x, [&](int d) { return double(centroid[d]); }) - centred[size_t(i)] + bias < 0.0) ++negative;
      }
      two = negative >= 2;
    }
    points += two;
  }
  return points;
}

class TensorMultiKOnDevice : public ::testing::TestWithParam<DeviceCase> {
 protected:
  void SetUp() override {
    if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  }
};

Dataset case_data(const DeviceCase& c) {
  GeneratorSpec spec;
  spec.kind = c.kind;
  spec.m = c.m;
  spec.n = c.n;
  spec.centers = 6;
  spec.seed = 21 + c.n;
  Dataset data = generate(spec);
  for (float& v : data.values) {
    v = v * c.scale + c.offset;
    if (c.grid > 0.f) v = std::round(v / c.grid) * c.grid;
  }
  return data;
}

// The check's tolerance for a case. With operands per step the update sums uncentred points in
// FP32 tensor-core accumulators, which truncate (Fasi et al. 2021 for V100..A100); on data offset
// far from the origin (30000 with a spread of 1, 150 ULPs wide) that costs whole ULPs of the
// centroid: an emulation of truncating accumulation over 1-3 32-point steps per warp (the
// launch shapes of these M) gave 1-4 ULPs, so these cases allow 8. Everything else, operands=prepared
// included (its points are centred on the data's mean, so its sums are of small numbers), keeps
// --verify's tolerance: 1 ULP + 1e-4 of the data's spread.
Tolerances case_tolerance(const DeviceCase& c) {
  Tolerances tol;
  if (c.offset != 0.f && c.operands != "prepared") tol.centroid_ulps = 8;
  return tol;
}

TEST_P(TensorMultiKOnDevice, ThreeStepsMatchTheReference) {
  const DeviceCase c = GetParam();
  const Dataset data = case_data(c);
  const Problem problem = shape(c.n, c.kmin, c.kmax, c.m);
  const Variant& variant = Registry::instance().get("tensor-multik");
  const DeviceInfo device = query_device(0);
  if (auto reason = variant.can_implement(problem, device)) {
    // Every case's shape is accepted on Hopper (HopperAcceptsEveryDeviceCase checks that on CPU).
    if (testing_support::claims_apply_to(device))
      FAIL() << device.name << " refused " << problem.str() << ", a shape tensor-multik runs on Hopper: " << *reason;
    GTEST_SKIP() << "tensor-multik cannot run " << problem.str() << " on " << device.name << ": " << *reason;
  }
  Params overrides = Params::object();
  overrides["update"] = c.update;
  overrides["fragments"] = c.fragments;
  overrides["argmin"] = c.argmin;
  overrides["distance"] = c.distance;
  overrides["fetch"] = c.fetch;
  overrides["operands"] = c.operands;
  if (c.stages > 0) overrides["stages"] = c.stages;
  overrides["group_min"] = c.group_min;
  const Params params = resolve_params(variant, problem, device, overrides);
  SCOPED_TRACE(params_label(params));
  auto run = variant.prepare(problem, data, params, device);
  // A run that converted the points says how long that took; one that did not, says nothing.
  EXPECT_EQ(run->conversion_ms().has_value(), c.operands == "prepared");
  const std::vector<float> centroids = initial_centroids(data, problem.k, InitMethod::RandomSample, 4);
  const Tolerances tol = case_tolerance(c);
  double largest_ulps = 0;
  testing_support::expect_steps_match_reference(*run, data, problem.k, centroids, 3, c.labels, tol, &largest_ulps);
  // The measurement behind case_tolerance's allowance, in the test log.
  if (tol.centroid_ulps != Tolerances{}.centroid_ulps)
    std::cout << "[   INFO   ] " << c.name << ": largest centroid error " << largest_ulps << " ULP (allowed "
              << tol.centroid_ulps << ")\n";
}

const DeviceCase kUpdateCases[] = {
    // FP16 update without a multiply; a partial last step (M not a multiple of 32).
    DeviceCase{"f16_uniform_n8_k3_7", 8, 3, 7, 100003, "uniform", 1.f, 0.f, "f16", true},
    // Largest |x| below 2^-6 and at or above 2^14: the points are scaled first.
    DeviceCase{"f16_tiny_n8_k3_7", 8, 3, 7, 50000, "uniform", 1e-4f, 0.f, "f16", true},
    DeviceCase{"f16_offset_n4_k3_5", 4, 3, 5, 50000, "uniform", 1.f, 30000.f, "f16", true},
    DeviceCase{"f16_blobs_n16_k3_7", 16, 3, 7, 60000, "blobs", 1.f, 0.f, "f16", true},
    // ΣK = 52: two one-hot words, seven tiles, groups split across transposed blocks.
    DeviceCase{"f16_uniform_n5_k3_10", 5, 3, 10, 40000, "uniform", 1.f, 0.f, "f16", true},
    DeviceCase{"f16_uniform_n3_k1_4", 3, 1, 4, 30000, "uniform", 1.f, 0.f, "f16", true},
    DeviceCase{"f16_blobs_n8_k16_no_labels", 8, 16, 16, 70000, "blobs", 1.f, 0.f, "f16", false},
    DeviceCase{"f16_uniform_n8_k3_7_m100", 8, 3, 7, 100, "uniform", 1.f, 0.f, "f16", true},
    // Values on a grid of halves: many points have two or more centroids at exactly the
    // same distance, so most steps take the exact fix-up and its candidate selection.
    DeviceCase{"f16_grid_ties_n8_k3_7", 8, 3, 7, 40000, "uniform", 1.f, 0.f, "f16", true, 0.5f},
    DeviceCase{"f16_grid_ties_n8_k16", 8, 16, 16, 40000, "uniform", 1.f, 0.f, "f16", true, 0.5f},
    // Centroid operands re-read from shared memory: two k-steps (N=16), two column
    // blocks (ΣK=52), and exact ties through the fix-up.
    DeviceCase{"shared_fragments_blobs_n16_k3_7", 16, 3, 7, 60000, "blobs", 1.f, 0.f, "f16", true, 0.f, "shared"},
    DeviceCase{"shared_fragments_uniform_n5_k3_10", 5, 3, 10, 40000, "uniform", 1.f, 0.f, "f16", true, 0.f,
               "shared"},
    DeviceCase{"shared_fragments_grid_ties_n8_k3_7", 8, 3, 7, 40000, "uniform", 1.f, 0.f, "f16", true, 0.5f,
               "shared"},
    // argmin=mask: in-window bits instead of packed keys. Exact ties (grids of halves) put
    // several bits in a group's field; all-zero data gives a zero window, so no bit at all;
    // one K of 32 fills the whole word; K=1 is a group of one slot.
    DeviceCase{"mask_uniform_n8_k3_7", 8, 3, 7, 100003, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers", "mask"},
    DeviceCase{"mask_grid_ties_n8_k3_7", 8, 3, 7, 40000, "uniform", 1.f, 0.f, "f16", true, 0.5f, "registers",
               "mask"},
    DeviceCase{"mask_grid_ties_n8_k16", 8, 16, 16, 40000, "uniform", 1.f, 0.f, "f16", true, 0.5f, "registers",
               "mask"},
    DeviceCase{"mask_offset_n4_k3_5", 4, 3, 5, 50000, "uniform", 1.f, 30000.f, "f16", true, 0.f, "registers",
               "mask"},
    DeviceCase{"mask_tiny_n8_k3_7", 8, 3, 7, 50000, "uniform", 1e-4f, 0.f, "f16", true, 0.f, "registers", "mask"},
    DeviceCase{"mask_blobs_n16_k3_7_shared", 16, 3, 7, 60000, "blobs", 1.f, 0.f, "f16", true, 0.f, "shared",
               "mask"},
    DeviceCase{"mask_uniform_n3_k1_4", 3, 1, 4, 30000, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers", "mask"},
    DeviceCase{"mask_uniform_n4_k32", 4, 32, 32, 30000, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers", "mask"},
    DeviceCase{"mask_zeros_n8_k3_7", 8, 3, 7, 5000, "uniform", 0.f, 0.f, "f16", true, 0.f, "registers", "mask"},
    DeviceCase{"mask_tf32_uniform_n8_k3_7", 8, 3, 7, 100003, "uniform", 1.f, 0.f, "tf32", true, 0.f, "registers",
               "mask"},
    // distance=f16x2: FP16 hi+lo features, one MMA per tile (N <= 4), two (N <= 8), three per
    // 16 dims wider (N=12 half-fills its step); scaled points (tiny values,
    // a large offset); exact ties and all-zero data through the fix-up; packed keys (ΣK=52).
    DeviceCase{"d16_uniform_n8_k3_7", 8, 3, 7, 100003, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2"},
    DeviceCase{"d16_offset_n4_k3_5", 4, 3, 5, 50000, "uniform", 1.f, 30000.f, "f16", true, 0.f, "registers",
               "mask", "f16x2"},
    DeviceCase{"d16_tiny_n8_k3_7", 8, 3, 7, 50000, "uniform", 1e-4f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2"},
    DeviceCase{"d16_small_n8_k3_7", 8, 3, 7, 50000, "uniform", 0.02f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2"},
    DeviceCase{"d16_grid_ties_n8_k3_7", 8, 3, 7, 40000, "uniform", 1.f, 0.f, "f16", true, 0.5f, "registers",
               "mask", "f16x2"},
    DeviceCase{"d16_grid_ties_n8_k16", 8, 16, 16, 40000, "uniform", 1.f, 0.f, "f16", true, 0.5f, "registers",
               "mask", "f16x2"},
    DeviceCase{"d16_zeros_n8_k3_7", 8, 3, 7, 5000, "uniform", 0.f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2"},
    DeviceCase{"d16_blobs_n16_k3_7_shared", 16, 3, 7, 60000, "blobs", 1.f, 0.f, "f16", true, 0.f, "shared",
               "mask", "f16x2"},
    DeviceCase{"d16_blobs_n16_k3_7", 16, 3, 7, 60000, "blobs", 1.f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2"},
    DeviceCase{"d16_uniform_n3_k1_4", 3, 1, 4, 30000, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2"},
    DeviceCase{"d16_uniform_n5_k3_10_packed", 5, 3, 10, 40000, "uniform", 1.f, 0.f, "f16", true, 0.f,
               "registers", "packed", "f16x2"},
    DeviceCase{"d16_blobs_n12_k3_5", 12, 3, 5, 40000, "blobs", 1.f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2"},
    DeviceCase{"d16_uniform_n8_k3_7_m100", 8, 3, 7, 100, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2"},
    // fetch=registers: fragment pairs from global memory, ‖x‖² through the last tile's free
    // half, the fix-up's point from global memory (exact ties, all-zero data), scaled points,
    // a partial last step, more warps than steps (M=100), one tile (ΣK=4) and two (ΣK=10).
    DeviceCase{"regfetch_uniform_n8_k3_7", 8, 3, 7, 100003, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers"},
    DeviceCase{"regfetch_uniform_n4_k3_5", 4, 3, 5, 100003, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers"},
    DeviceCase{"regfetch_offset_n4_k3_5", 4, 3, 5, 50000, "uniform", 1.f, 30000.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers"},
    DeviceCase{"regfetch_tiny_n8_k3_7", 8, 3, 7, 50000, "uniform", 1e-4f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers"},
    DeviceCase{"regfetch_grid_ties_n8_k3_7", 8, 3, 7, 40000, "uniform", 1.f, 0.f, "f16", true, 0.5f, "registers",
               "mask", "f16x2", "registers"},
    DeviceCase{"regfetch_grid_ties_n4_k3_5", 4, 3, 5, 40000, "uniform", 1.f, 0.f, "f16", true, 0.5f, "registers",
               "mask", "f16x2", "registers"},
    DeviceCase{"regfetch_zeros_n8_k3_7", 8, 3, 7, 5000, "uniform", 0.f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2", "registers"},
    DeviceCase{"regfetch_uniform_n8_k3_7_m100", 8, 3, 7, 100, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers"},
    DeviceCase{"regfetch_blobs_n8_k1_4", 8, 1, 4, 60000, "blobs", 1.f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2", "registers"},
    DeviceCase{"regfetch_blobs_n4_k4", 4, 4, 4, 60000, "blobs", 1.f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2", "registers"},
    // operands=prepared: the fragment words and ‖x‖² converted once; the same shapes as
    // fetch=registers, plus ΣK = 16 and 14 (no free half tile, which only the per-step
    // ‖x‖² needed).
    DeviceCase{"prepared_uniform_n8_k3_7", 8, 3, 7, 100003, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers", "prepared"},
    DeviceCase{"prepared_uniform_n4_k3_5", 4, 3, 5, 100003, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers", "prepared"},
    DeviceCase{"prepared_offset_n4_k3_5", 4, 3, 5, 50000, "uniform", 1.f, 30000.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers", "prepared"},
    DeviceCase{"prepared_tiny_n8_k3_7", 8, 3, 7, 50000, "uniform", 1e-4f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers", "prepared"},
    DeviceCase{"prepared_grid_ties_n8_k3_7", 8, 3, 7, 40000, "uniform", 1.f, 0.f, "f16", true, 0.5f, "registers",
               "mask", "f16x2", "registers", "prepared"},
    DeviceCase{"prepared_grid_ties_n4_k3_5", 4, 3, 5, 40000, "uniform", 1.f, 0.f, "f16", true, 0.5f, "registers",
               "mask", "f16x2", "registers", "prepared"},
    DeviceCase{"prepared_zeros_n8_k3_7", 8, 3, 7, 5000, "uniform", 0.f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2", "registers", "prepared"},
    DeviceCase{"prepared_uniform_n8_k3_7_m100", 8, 3, 7, 100, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers", "prepared"},
    DeviceCase{"prepared_blobs_n8_k1_4", 8, 1, 4, 60000, "blobs", 1.f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2", "registers", "prepared"},
    DeviceCase{"prepared_blobs_n4_k4", 4, 4, 4, 60000, "blobs", 1.f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2", "registers", "prepared"},
    DeviceCase{"prepared_blobs_n8_k16", 8, 16, 16, 70000, "blobs", 1.f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers", "prepared"},
    DeviceCase{"prepared_grid_ties_n8_k16", 8, 16, 16, 40000, "uniform", 1.f, 0.f, "f16", true, 0.5f, "registers",
               "mask", "f16x2", "registers", "prepared"},
    DeviceCase{"prepared_uniform_n4_k2_5", 4, 2, 5, 30001, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers", "prepared"},
    // N=4's default block takes the lean step (LEAN_STEP in the kernel), whose window bounds
    // FP16's absolute floor through the largest centred centroid norm: narrow data far from
    // the origin (centred norms ~1e-3 at a point scale of 1) and all-zero data put that norm
    // below its floor.
    DeviceCase{"prepared_narrow_n4_k3_5", 4, 3, 5, 50001, "uniform", 1e-3f, 1000.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers", "prepared"},
    DeviceCase{"prepared_zeros_n4_k3_5", 4, 3, 5, 5000, "uniform", 0.f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers", "prepared"},
    // group_min=int (its blobs cases below): zeros (a zero bias, every key zero), exact
    // ties, offset and tiny data, a partial last step.
    DeviceCase{"intmin_uniform_n8_k3_7", 8, 3, 7, 100003, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers", "prepared", 0, "int"},
    DeviceCase{"intmin_uniform_n4_k3_5", 4, 3, 5, 100003, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers", "prepared", 0, "int"},
    DeviceCase{"intmin_offset_n4_k3_5", 4, 3, 5, 50000, "uniform", 1.f, 30000.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers", "prepared", 0, "int"},
    DeviceCase{"intmin_tiny_n8_k3_7", 8, 3, 7, 50000, "uniform", 1e-4f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers", "prepared", 0, "int"},
    DeviceCase{"intmin_grid_ties_n8_k3_7", 8, 3, 7, 40000, "uniform", 1.f, 0.f, "f16", true, 0.5f, "registers",
               "mask", "f16x2", "registers", "prepared", 0, "int"},
    DeviceCase{"intmin_zeros_n8_k3_7", 8, 3, 7, 5000, "uniform", 0.f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2", "registers", "prepared", 0, "int"},
    DeviceCase{"intmin_uniform_n8_k3_7_m100", 8, 3, 7, 100, "uniform", 1.f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers", "prepared", 0, "int"},
    // Enough steps that the dynamic tail (N=8's default at 128 registers) hands out chunks on any
    // GPU of up to ~600 SMs; a partial last chunk and step, and blobs whose warps finish unevenly.
    DeviceCase{"dynamic_tail_uniform_n8_k3_7", 8, 3, 7, 1500003, "uniform", 1.f, 0.f, "f16", true, 0.f,
               "registers", "mask", "f16x2", "registers", "prepared"},
    DeviceCase{"dynamic_tail_blobs_n8_k3_7", 8, 3, 7, 1200001, "blobs", 1.f, 0.f, "f16", false, 0.f,
               "registers", "mask", "f16x2", "registers", "prepared"},
    DeviceCase{"tf32_uniform_n8_k3_7", 8, 3, 7, 100003, "uniform", 1.f, 0.f, "tf32", true},
    DeviceCase{"tf32_offset_n5_k3_10", 5, 3, 10, 40000, "uniform", 1.f, 30000.f, "tf32", true}};
INSTANTIATE_TEST_SUITE_P(Updates, TensorMultiKOnDevice, ::testing::ValuesIn(kUpdateCases),
                         [](const ::testing::TestParamInfo<DeviceCase>& info) { return info.param.name; });

// group_min=int with keys biased by the mean ‖x'‖²: blobs far from the mean put points whose
// ‖x'‖² passes the bias next to two or more centroids, i.e. two negative keys in a group, the
// integer min's blind spot, which must reach the exact fix-up. N=8 K=3..7, N=4 and ΣK = 16 in
// one group.
const DeviceCase kIntegerMinBlobsCases[] = {
    DeviceCase{"intmin_blobs_n8_k3_7", 8, 3, 7, 60000, "blobs", 1.f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2", "registers", "prepared", 0, "int"},
    DeviceCase{"intmin_blobs_n4_k3_5", 4, 3, 5, 60000, "blobs", 1.f, 0.f, "f16", true, 0.f, "registers", "mask",
               "f16x2", "registers", "prepared", 0, "int"},
    DeviceCase{"intmin_blobs_n8_k16", 8, 16, 16, 70000, "blobs", 1.f, 0.f, "f16", true, 0.f, "registers",
               "mask", "f16x2", "registers", "prepared", 0, "int"},
};
INSTANTIATE_TEST_SUITE_P(IntegerMinBlobs, TensorMultiKOnDevice, ::testing::ValuesIn(kIntegerMinBlobsCases),
                         [](const ::testing::TestParamInfo<DeviceCase>& info) { return info.param.name; });

// A device case that skipped on a refusal would hide the refusal: every case's shape must be
// accepted, and its parameters resolve, on Hopper (synthetic H100 and H200, no GPU needed).
TEST(TensorMultiKDeviceCases, HopperAcceptsEveryDeviceCase) {
  const Variant& variant = Registry::instance().get("tensor-multik");
  std::vector<DeviceCase> cases(std::begin(kUpdateCases), std::end(kUpdateCases));
  cases.insert(cases.end(), std::begin(kIntegerMinBlobsCases), std::end(kIntegerMinBlobsCases));
  for (const DeviceInfo& device : {testing_support::h100_like(), testing_support::h200()})
    for (const DeviceCase& c : cases) {
      SCOPED_TRACE(c.name + " on " + device.name);
      const Problem problem = shape(c.n, c.kmin, c.kmax, c.m);
      const auto refusal = variant.can_implement(problem, device);
      ASSERT_FALSE(refusal.has_value()) << *refusal;
      Params overrides = {{"update", c.update},     {"fragments", c.fragments}, {"argmin", c.argmin},
                          {"distance", c.distance}, {"fetch", c.fetch},         {"operands", c.operands},
                          {"group_min", c.group_min}};
      if (c.stages > 0) overrides["stages"] = c.stages;
      EXPECT_NO_THROW(resolve_params(variant, problem, device, overrides));
    }
}

// The offset cases' looser allowance (case_tolerance) must still see an update that moved
// nothing: their first step moves the centroids by far more than the allowance.
TEST(TensorMultiKDeviceCases, LooserOffsetToleranceStillSeesAnUpdateThatMovedNothing) {
  int loosened = 0;
  for (const DeviceCase& c : kUpdateCases) {
    const Tolerances tol = case_tolerance(c);
    if (tol.centroid_ulps == Tolerances{}.centroid_ulps) continue;
    ++loosened;
    SCOPED_TRACE(c.name);
    const Dataset data = case_data(c);
    const KRange k{c.kmin, c.kmax};
    const std::vector<float> before = initial_centroids(data, k, InitMethod::RandomSample, 4);
    const auto reference = reference_step(data, k, before);
    IterationResult unchanged;
    for (const KReference& ref : reference) {
      KResult r;
      r.k = ref.k;
      r.counts = ref.counts;
      r.inertia = ref.inertia;
      r.labels.assign(ref.labels.begin(), ref.labels.end());
      const float* start = before.data() + size_t(k.slot_offset(ref.k)) * c.n;
      r.centroids.assign(start, start + size_t(ref.k) * c.n);
      unchanged.per_k.push_back(r);
    }
    const VerifyReport report = compare_with_reference(data, k, before, unchanged, reference, tol);
    EXPECT_FALSE(report.passed) << report.summary();
    for (const KVerdict& verdict : report.per_k) EXPECT_GT(verdict.centroid_tolerance_used, 4.0) << "K=" << verdict.k;
  }
  EXPECT_EQ(loosened, 5);  // the per-step offset cases: f16, mask, d16, regfetch, tf32
}

// The group_min=int blobs cases are there to send groups with two negative keys to the fix-up:
// their data must hold such points at the centroids the device test starts from (no GPU needed).
TEST(TensorMultiKIntegerMin, BlobsCasesHoldPointsWithTwoNegativeKeys) {
  for (const DeviceCase& c : kIntegerMinBlobsCases) {
    SCOPED_TRACE(c.name);
    const Dataset data = case_data(c);
    const KRange k{c.kmin, c.kmax};
    const int64_t points = points_with_two_negative_keys(data, k, initial_centroids(data, k, InitMethod::RandomSample, 4));
    std::cout << c.name << ": " << points << " of " << c.m << " points with two negative keys\n";
    EXPECT_GT(points, 0);
  }
}

}  // namespace
}  // namespace mk
