#include "apps/fit/fit_options.hpp"

#include <cmath>
#include <sstream>

#include "core/errors.hpp"
#include "core/problem.hpp"

namespace mk {

namespace {

std::string number_text(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

}  // namespace

void check_fit_options(const FitOptions& options) {
  if (options.dataset.empty())
    throw InputError("fit needs --dataset (uniform, blobs:..., csv:PATH, npy:PATH, idx:PATH)");
  if (!std::isfinite(options.tol) || options.tol < 0)
    throw InputError("--tol must be a finite number >= 0, got " + number_text(options.tol));
  if (options.max_iter < 1)
    throw InputError("--max-iter must be at least 1, got " + std::to_string(options.max_iter));
  if (options.n_init < 1) throw InputError("--n-init must be at least 1, got " + std::to_string(options.n_init));
  if (options.silhouette_sample < 0 || options.silhouette_sample == 1)
    throw InputError("--silhouette-sample must be 0 (off) or at least 2, got " +
                     std::to_string(options.silhouette_sample));
  if (options.dims < 0) throw InputError("--dims must be at least 1, got " + std::to_string(options.dims));
  if (!options.init_sample.empty()) {
    if (options.init != "k-means++" && options.init != "k-means||")
      throw InputError("--init-sample samples the rows k-means++ or k-means|| seeds from; --init is " + options.init);
    int64_t rows = 0;
    try {
      rows = parse_count(options.init_sample);
    } catch (const InputError& e) {
      throw InputError(std::string("--init-sample: ") + e.what());
    }
    if (rows < 1) throw InputError("--init-sample must be at least 1 row, got " + options.init_sample);
  }
  const std::string& init = options.init;
  const bool known_init = init == "first" || init == "random" || init == "k-means++" || init == "k-means||" ||
                          (init.rfind("npy:", 0) == 0 && init.size() > 4);
  if (!known_init)
    throw InputError("--init must be first, random, k-means++, k-means|| or npy:PATH, got '" + init + "'");
  parse_empty_policy(options.empty);  // throws InputError naming --empty
  if (!options.weights.empty() && (options.weights.rfind("npy:", 0) != 0 || options.weights.size() == 4))
    throw InputError("--weights must be npy:PATH (a 1-D float32 or float64 array, one weight per point), got '" +
                     options.weights + "'");
}

}  // namespace mk
