#pragma once
// A batch of B independent problems (Problem::batch, `mkbench run --batch B`; docs/batched.md),
// each with m points of its own (rows [b·m, (b+1)·m) of the data) and its own centroids and
// counts. Any variant solves a batch through this wrapper, as B runs of itself, one a problem:
// on a GPU each run keeps its own stream and a step forks them from the first run's stream and
// joins them back into it, so the problems' kernels may overlap where the GPU has room (not yet
// measured) and the harness's events on that stream time the whole batch. This is the baseline a kernel that serves
// the B problems in one launch is to be measured against; none does yet.
#include <memory>
#include <vector>

#include "variants/variant.hpp"

namespace mk {

// The problem each member of a batch solves: `problem` with batch 1.
Problem problem_of_one(const Problem& problem);

// Problem b's rows of a batch's data, viewed in place (valid while `data` lives). InputError when
// the data does not hold problem.batch × problem.m rows.
Dataset problem_rows(const Dataset& data, const Problem& problem, int b);

// Problem b's share of a batch's packed centroids (problem after problem, ΣK slots each).
std::vector<float> problem_centroids(const std::vector<float>& packed, const Problem& problem, int b);

// Problem b's results from a batch's read_back (per_k holds ΣK-range results problem after problem).
IterationResult problem_result(const IterationResult& batch, const Problem& problem, int b);

// `variant` answering for batches: can_implement, its space, defaults and a tuned point are those
// of one problem (problem_of_one); its footprint is B times one problem's; prepare() takes the
// variant's own run for the whole batch where it serves one (Variant::prepare_batch: one launch a
// kernel), else makes a run a problem, each on its own stream. A problem with batch 1 passes
// through unchanged.
std::unique_ptr<Variant> variant_for_batch(const Variant& variant);

// The refusal of a batch streamed out of core: each problem's run holds its rows whole.
inline constexpr const char* kRefuseBatchedOutOfCore =
    "a batch's problems are prepared whole, one run each, so a batch is not streamed out of core in chunks "
    "(--chunk-points/--out-of-core do not combine with --batch); fewer problems or fewer points a problem may fit";

}  // namespace mk
