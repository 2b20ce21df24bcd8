#pragma once
// A K range split into consecutive passes for a run that holds a bounded number of centroid
// slots (tensor-multik: 64, fewer at wider N). Each pass is a range of its own, solved by its
// own run over the same points; together they cover the range in order.
#include <vector>

#include "core/problem.hpp"

namespace mk {

// The fewest consecutive passes of at most `max_slots` slots (ΣK) each, and among those the
// split whose largest pass is smallest (the passes' times follow their slots). Empty when one K
// alone exceeds `max_slots` or max_slots < 1.
std::vector<KRange> split_k_range(const KRange& range, int max_slots);

// `problem` restricted to one pass's range.
Problem problem_for_pass(const Problem& problem, const KRange& pass);

}  // namespace mk
