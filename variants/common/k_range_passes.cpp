// Consecutive passes over a K range (k_range_passes.hpp).
#include "variants/common/k_range_passes.hpp"

#include <algorithm>
#include <cstdint>

namespace mk {
namespace {

// Greedy from kmin: each pass takes Ks while they fit in `cap`. For a fixed cap this gives the
// fewest passes, so the smallest cap that keeps that count is found by trying caps upwards.
std::vector<KRange> greedy(const KRange& range, int cap) {
  std::vector<KRange> passes;
  int64_t slots = 0;
  for (int k = range.kmin; k <= range.kmax; ++k) {
    if (k > cap) return {};
    if (passes.empty() || slots + k > cap) {
      passes.push_back(KRange{k, k});
      slots = k;
    } else {
      passes.back().kmax = k;
      slots += k;
    }
  }
  return passes;
}

}  // namespace

std::vector<KRange> split_k_range(const KRange& range, int max_slots) {
  if (max_slots < 1 || range.kmin < 1 || range.kmax < range.kmin) return {};
  const std::vector<KRange> fewest = greedy(range, max_slots);
  if (fewest.empty()) return {};
  // The largest pass is at least ΣK / passes and at least kmax; caps from there up to
  // max_slots, the first that needs no more passes than `fewest` wins.
  const int64_t total = range.sum();
  const int64_t count = int64_t(fewest.size());
  int64_t low = std::max<int64_t>(range.kmax, (total + count - 1) / count);
  for (int64_t cap = low; cap < max_slots; ++cap) {
    std::vector<KRange> passes = greedy(range, int(cap));
    if (!passes.empty() && passes.size() <= fewest.size()) return passes;
  }
  return fewest;
}

Problem problem_for_pass(const Problem& problem, const KRange& pass) {
  Problem one = problem;
  one.k = pass;
  return one;
}

}  // namespace mk
