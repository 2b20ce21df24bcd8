#pragma once
// Which variant `mkbench fit` runs. A fit needs the step split in two phases (accumulate,
// update with per-K freezing and the empty policy: variants/step.hpp), so `--variant auto`
// takes `run`'s automatic choice unless that variant cannot split its step, and then the
// next variant of the same preference chain that can. Nothing falls back silently: the
// choice and its reason are printed and recorded in fit.json.
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "variants/variant.hpp"

namespace mk {

// Variants whose run divides inside its kernel, so accumulate() refuses. tensor-multik's last
// block divides; it leaves this list when its split mode lands (docs/variant-interface.md).
const std::vector<std::string>& variants_without_split_step();
bool splits_step(const std::string& variant);

struct FitVariantChoice {
  std::string name;    // empty: nothing can run; `reason` says why
  std::string reason;  // one line for the log and fit.json
};

// `requested` is --variant: "auto" or a variant name. Without a GPU, auto is cpu-openmp.
// A named variant that cannot split its step is refused (UnsupportedError, exit 3) with the
// alternative auto would take; an unknown name is an InputError listing the known ones.
FitVariantChoice choose_fit_variant(const std::string& requested, const Problem& problem, const DeviceInfo& device);

}  // namespace mk
