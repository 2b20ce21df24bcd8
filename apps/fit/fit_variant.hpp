#pragma once
// Which variant `mkbench fit` runs. A fit needs the step split in two phases (accumulate,
// update with per-K freezing and the empty policy: variants/step.hpp); every variant splits
// its step (tensor-multik since commit 6f30fdd), so `--variant auto` is exactly `run`'s
// automatic choice, and the choice and its reason are printed and recorded in fit.json.
#include <string>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "variants/variant.hpp"

namespace mk {

struct FitVariantChoice {
  std::string name;    // empty: nothing can run; `reason` says why
  std::string reason;  // one line for the log and fit.json
};

// `requested` is --variant: "auto" or a variant name. Without a GPU, auto is cpu-openmp;
// with one, the delegate `run --variant auto` takes for this problem. An unknown name is an
// InputError listing the known ones.
FitVariantChoice choose_fit_variant(const std::string& requested, const Problem& problem, const DeviceInfo& device);

}  // namespace mk
