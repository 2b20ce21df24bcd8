#include "tuner/buckets.hpp"

#include <cstdlib>
#include <tuple>

#include "core/errors.hpp"

namespace mk::tuner {
namespace {

const char* const kNNames[kNClassCount] = {"n<=4", "n<=8", "n<=16", "n<=32", "n<=64", "n>64"};
const char* const kKNames[kKClassCount] = {"single-small", "multi-small", "medium", "large", "huge"};
const char* const kMNames[kMClassCount] = {"m<=1M", "m<=8M", "m<=64M", "m>64M"};

template <size_t Count>
int index_of_name(const char* const (&names)[Count], const std::string& text) {
  for (size_t i = 0; i < Count; ++i)
    if (text == names[i]) return int(i);
  return -1;
}

}  // namespace

int n_class_of(int n) {
  const int limits[] = {4, 8, 16, 32, 64};
  for (int i = 0; i < 5; ++i)
    if (n <= limits[i]) return i;
  return 5;
}

int k_class_of(const KRange& k) {
  // Up to K=16 every centroid of the range fits in registers, so what matters is whether
  // several Ks share the data pass. Beyond that the work per point (ΣK centroid slots)
  // decides between register, shared-memory and tiled strategies.
  if (k.kmax <= 16) return k.count() > 1 ? 1 : 0;
  const int64_t sum_k = int64_t(k.kmin + k.kmax) * k.count() / 2;
  if (sum_k <= 256) return 2;
  if (sum_k <= 1024) return 3;
  return 4;
}

int m_class_of(int64_t m) {
  const int64_t mi = int64_t(1) << 20;
  if (m <= mi) return 0;
  if (m <= 8 * mi) return 1;
  if (m <= 64 * mi) return 2;
  return 3;
}

const char* n_class_name(int index) { return kNNames[index]; }
const char* k_class_name(int index) { return kKNames[index]; }
const char* m_class_name(int index) { return kMNames[index]; }

Bucket Bucket::of(const Problem& problem) {
  return Bucket{n_class_of(problem.n), k_class_of(problem.k), m_class_of(problem.m)};
}

Bucket Bucket::parse(const std::string& label) {
  const auto first = label.find('/');
  const auto second = first == std::string::npos ? std::string::npos : label.find('/', first + 1);
  if (second == std::string::npos || label.find('/', second + 1) != std::string::npos)
    throw InputError("bucket label '" + label + "' is not of the form n<=8/multi-small/m<=64M");
  Bucket bucket{index_of_name(kNNames, label.substr(0, first)),
                index_of_name(kKNames, label.substr(first + 1, second - first - 1)),
                index_of_name(kMNames, label.substr(second + 1))};
  if (bucket.n_class < 0 || bucket.k_class < 0 || bucket.m_class < 0)
    throw InputError("bucket label '" + label + "' names an unknown class (see tuner/README.md)");
  return bucket;
}

std::string Bucket::label() const {
  return std::string(kNNames[n_class]) + "/" + kKNames[k_class] + "/" + kMNames[m_class];
}

int Bucket::distance(const Bucket& other) const {
  return std::abs(n_class - other.n_class) + std::abs(k_class - other.k_class) +
         std::abs(m_class - other.m_class);
}

bool Bucket::operator<(const Bucket& other) const {
  return std::tie(n_class, k_class, m_class) < std::tie(other.n_class, other.k_class, other.m_class);
}

}  // namespace mk::tuner
