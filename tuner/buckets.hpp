#pragma once
// Problem buckets: tuned parameters are stored per class of shape, not per exact shape,
// so a config tuned on a suite also serves nearby problems. Classes are ordered from
// small to large so that "nearest bucket" is a distance on class indices.
#include <string>

#include "core/problem.hpp"

namespace mk::tuner {

inline constexpr int kNClassCount = 6;  // ≤4, ≤8, ≤16, ≤32, ≤64, >64
inline constexpr int kKClassCount = 5;  // single-small, multi-small, medium, large, huge
inline constexpr int kMClassCount = 4;  // ≤1M, ≤8M, ≤64M, >64M (binary M as in parse_count)

struct Bucket {
  int n_class = 0;
  int k_class = 0;
  int m_class = 0;

  static Bucket of(const Problem& problem);
  // Inverse of label(); InputError for anything else.
  static Bucket parse(const std::string& label);
  // "n<=8/multi-small/m<=64M"
  std::string label() const;
  // L1 distance on the three class indices: 0 for the same bucket.
  int distance(const Bucket& other) const;

  bool operator==(const Bucket& other) const {
    return n_class == other.n_class && k_class == other.k_class && m_class == other.m_class;
  }
  bool operator!=(const Bucket& other) const { return !(*this == other); }
  bool operator<(const Bucket& other) const;
};

int n_class_of(int n);
int k_class_of(const KRange& k);
int m_class_of(int64_t m);
const char* n_class_name(int index);
const char* k_class_name(int index);
const char* m_class_name(int index);

}  // namespace mk::tuner
