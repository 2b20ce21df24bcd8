#include "apps/fit/fit_variant.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace mk {

// The automatic choice of `run` and its chain of dense variants (variants/auto_select.cpp,
// which defines both without a header; tests/test_variant_spaces.cpp declares them the
// same way). Reusing them keeps fit on the measured choice wherever that choice can split.
std::pair<std::string, std::string> choose_auto_delegate(const Problem& problem, const DeviceInfo& device,
                                                         double sparse_threshold);
std::vector<std::string> dense_preference(const Problem& problem);

namespace {

// auto's default threshold (variants/auto_select.cpp, kDefaultSparseThreshold).
constexpr double kAutoSparseThreshold = 0.7;

}  // namespace

const std::vector<std::string>& variants_without_split_step() {
  static const std::vector<std::string> names = {"tensor-multik"};
  return names;
}

bool splits_step(const std::string& variant) {
  const auto& names = variants_without_split_step();
  return std::find(names.begin(), names.end(), variant) == names.end();
}

FitVariantChoice choose_fit_variant(const std::string& requested, const Problem& problem, const DeviceInfo& device) {
  const Registry& registry = Registry::instance();
  if (requested != "auto") {
    const Variant& variant = registry.get(requested);  // InputError listing the known names
    if (!splits_step(variant.name())) {
      const FitVariantChoice alternative = choose_fit_variant("auto", problem, device);
      throw UnsupportedError("fit: " + variant.name() +
                             " cannot split its step into accumulate and update yet (its kernel divides in its "
                             "last block), which per-K convergence needs" +
                             (alternative.name.empty() ? std::string()
                                                       : "; --variant auto would run " + alternative.name));
    }
    return {variant.name(), "requested with --variant"};
  }
  if (!device.is_gpu) return {"cpu-openmp", "no CUDA GPU: the CPU baseline"};

  const auto [delegate, why] = choose_auto_delegate(problem, device, kAutoSparseThreshold);
  if (delegate.empty()) return {"", why};
  if (splits_step(delegate)) return {delegate, "auto's choice (" + why + ")"};
  // auto chose a variant that cannot split its step: the next one of its chain that can.
  const std::vector<std::string> chain = dense_preference(problem);
  auto it = std::find(chain.begin(), chain.end(), delegate);
  std::string refusals;
  for (it = it == chain.end() ? chain.begin() : it + 1; it != chain.end(); ++it) {
    if (!splits_step(*it)) continue;
    const Variant* candidate = registry.find(*it);
    if (!candidate) continue;
    const auto refusal = candidate->can_implement(problem, device);
    if (!refusal) {
      std::string reason = "auto chose " + delegate + ", which cannot split its step yet; the next of its chain";
      if (!refusals.empty()) reason += " (" + refusals + ")";
      return {*it, reason};
    }
    refusals += (refusals.empty() ? "" : "; ") + *it + ": " + *refusal;
  }
  return {"", "auto chose " + delegate + ", which cannot split its step, and no later variant of its chain can run" +
                  (refusals.empty() ? std::string() : " (" + refusals + ")")};
}

}  // namespace mk
