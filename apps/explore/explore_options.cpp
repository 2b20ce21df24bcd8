// Option checks of `mkbench explore` (explore_options.hpp).
#include "apps/explore/explore_options.hpp"

#include <cmath>

#include "core/errors.hpp"

namespace mk::explore {

void check_explore_options(const ExploreOptions& options) {
  if (options.dataset.empty()) throw InputError("--dataset is required (susy:..., csv:PATH:label=COL, npy:PATH, idx:PATH)");
  if (options.subset_size < 1) throw InputError("--subset-size must be at least 1, got " + std::to_string(options.subset_size));
  if (options.k < 1) throw InputError("--k must be at least 1, got " + std::to_string(options.k));
  if (options.all && options.copies_given) throw InputError("--copies and --all exclude each other");
  if (options.copies < 1 || options.copies > kMaxCopies)
    throw InputError("--copies must be in 1.." + std::to_string(kMaxCopies) + ", got " + std::to_string(options.copies));
  if (options.max_iter < 1) throw InputError("--max-iter must be at least 1, got " + std::to_string(options.max_iter));
  if (!std::isfinite(options.tol) || options.tol < 0) throw InputError("--tol must be a finite number >= 0");
  if (options.top < 1) throw InputError("--top must be at least 1, got " + std::to_string(options.top));
  if (options.repeat < 1) throw InputError("--repeat must be at least 1, got " + std::to_string(options.repeat));
  if (options.dims < 0) throw InputError("--dims cannot be negative");
  if (options.engine != "auto" && options.engine != "cuda" && options.engine != "cpu-openmp")
    throw InputError("--engine must be auto, cuda or cpu-openmp, got '" + options.engine + "'");
}

}  // namespace mk::explore
