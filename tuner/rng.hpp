#pragma once
// Portable draws from a seeded engine: std::uniform_*_distribution differ between standard
// libraries, and a fixed --seed must give the same tune everywhere.
#include <cstdint>
#include <random>

namespace mk::tuner {

using Rng = std::mt19937_64;

// Uniform in [0, count) without modulo bias; count must be > 0.
inline uint64_t uniform_index(Rng& rng, uint64_t count) {
  const uint64_t limit = ~uint64_t(0) - (~uint64_t(0) % count);
  uint64_t draw;
  do draw = rng();
  while (draw >= limit);
  return draw % count;
}

// Uniform in [0, 1).
inline double uniform01(Rng& rng) { return double(rng() >> 11) * (1.0 / 9007199254740992.0); }

}  // namespace mk::tuner
