#pragma once
// How the tuner gets a number for one point. Strategies and the tune loop only see this
// function object, so tests drive them with a replay of recorded measurements and the
// real command plugs in the harness measurement (harness/measure.hpp).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "variants/variant.hpp"

namespace mk::tuner {

struct Measurement {
  std::vector<double> samples_ms;  // one per timed iteration, in order
  double median_ms = 0;
  bool ok = false;
  std::string reason;  // why not ok (refused, failed, not recorded)
};

using Evaluator = std::function<Measurement(const Variant&, const Params&, const Problem&)>;

double median_of(std::vector<double> samples);
// The paper's metric: 3·ΣK·N·M operations per second, in 1e9/s (0 when time is 0).
double gops_of(const Problem& problem, double median_ms);

struct HarnessEvaluatorOptions {
  int samples = 10;
  int warmup = 3;
  std::string dataset = "uniform";  // a --dataset spec (datasets/dataset.hpp)
  uint64_t seed = 42;
  // Check the first point of each (variant, shape) against the FP64 reference, so a
  // variant that is wrong for this shape is caught before its timings count. Points
  // that fail verification are failed measurements.
  bool verify_first = false;
};

// Measures with measure_row on `device`. Holds the most recent problem's dataset, so
// tuning one shape after another generates each data set once.
Evaluator make_harness_evaluator(const DeviceInfo& device, const HarnessEvaluatorOptions& options);

}  // namespace mk::tuner
