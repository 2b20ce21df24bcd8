#pragma once
// `mkbench fit --weights npy:PATH`: one weight per point, scikit-learn's sample_weight
// (docs/fit.md, "Sample weights"). The file is a 1-D (M,) or (M, 1) array of little-endian
// float32 or float64, as numpy writes it (np.save of a float64 vector is the common case).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mk {

// The weights of `m` points from a --weights spec ("npy:PATH"). InputError (exit 2) naming
// --weights for: another spec, an unreadable or malformed file, another dtype or shape, a
// length other than m, a negative, NaN or infinite weight, or weights that sum to 0.
// float64 values are rounded to float32 (the precision every kernel computes in).
std::vector<float> load_sample_weights(const std::string& spec, int64_t m);

// The same checks on a file's bytes already in memory; `origin` names it in messages.
std::vector<float> parse_sample_weights(std::string_view bytes, const std::string& origin, int64_t m);

}  // namespace mk
