#pragma once
// `mkbench explore` (seed 000 §4, issue 33): k-means copies on attribute subsets of a labelled
// table, scored by majority-vote accuracy, ranked. docs/explore.md is the user's page.
#include <ostream>

#include <nlohmann/json.hpp>

#include "apps/explore/explore_options.hpp"

namespace mk::explore {

// Loads, draws the copies, solves them on the chosen engine (--repeat times), scores and ranks
// them, runs the all-attributes baseline, and returns the explore.json document
// (schema "mkbench.explore/2", docs/explore.md). Progress lines go to `log` unless quiet.
// Throws mk::Error subclasses (exit codes of core/errors.hpp).
nlohmann::json run_explore(const ExploreOptions& options, std::ostream& log);

// The console summary: where the time went, the baseline, the best subsets.
void print_explore_summary(const nlohmann::json& doc, int top, std::ostream& out);

}  // namespace mk::explore
