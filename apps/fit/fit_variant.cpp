#include "apps/fit/fit_variant.hpp"

#include "core/errors.hpp"

namespace mk {

// The automatic choice of `run` (variants/auto_select.cpp, which defines it without a header;
// tests/test_variant_spaces.cpp declares it the same way). Reusing it keeps fit on the
// measured choice.
std::pair<std::string, std::string> choose_auto_delegate(const Problem& problem, const DeviceInfo& device,
                                                         double sparse_threshold);

namespace {

// auto's default threshold (variants/auto_select.cpp, kDefaultSparseThreshold).
constexpr double kAutoSparseThreshold = 0.7;

}  // namespace

FitVariantChoice choose_fit_variant(const std::string& requested, const Problem& problem, const DeviceInfo& device) {
  if (requested != "auto") {
    const Variant& variant = Registry::instance().get(requested);  // InputError listing the known names
    return {variant.name(), "requested with --variant"};
  }
  if (!device.is_gpu) return {"cpu-openmp", "no CUDA GPU: the CPU baseline"};
  const auto [delegate, why] = choose_auto_delegate(problem, device, kAutoSparseThreshold);
  if (delegate.empty()) return {"", why};
  return {delegate, "auto's choice (" + why + ")"};
}

}  // namespace mk
