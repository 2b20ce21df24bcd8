#pragma once
// A generator's spec in one expression, for tests that make their data (datasets/dataset.hpp).
#include <cstdint>
#include <string>

#include "datasets/dataset.hpp"

namespace mk::testing_support {

inline GeneratorSpec generator_spec(const std::string& kind, int64_t m, int n, uint64_t seed,
                                    double zero_fraction = 0.0) {
  GeneratorSpec spec;
  spec.kind = kind;
  spec.m = m;
  spec.n = n;
  spec.seed = seed;
  spec.zero_fraction = zero_fraction;
  return spec;
}

}  // namespace mk::testing_support
