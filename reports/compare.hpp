#pragma once
// `mkbench compare`: decides, row by row, whether a candidate result file is slower than a
// baseline. The decision rule is documented in reports/README.md; it is implemented only
// in decide_verdict() so the README, the tests and the gate cannot drift apart.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mk::reports {

struct CompareOptions {
  double threshold = 0.05;  // relative change of the median that matters (0.05 = 5%)
  double alpha = 0.05;      // significance level of the Mann-Whitney U test
  bool force = false;       // compare across devices / datasets anyway
  // A row whose parameters changed (a retune, a new axis) is paired with its baseline row by
  // variant, shape and dataset and reported as PARAMS-CHANGED. With ignore_params the change
  // is expected (a run with tuned configs against one with the defaults): such rows get
  // their timing verdict, the candidate's params named in the note.
  bool ignore_params = false;
  // A baseline row the comparison cannot judge (no partner in the candidate, not ok in the
  // baseline, no samples) makes the gate exit 2 unless this is set.
  bool allow_missing = false;
  // A candidate whose median SM clock is more than this fraction below the baseline's
  // is suspected of thermal/power throttling rather than of a code regression.
  double throttle_fraction = 0.05;
};

enum class Verdict {
  Same,       // no practically relevant change
  Slower,     // significant and beyond the threshold: a regression (exit 1)
  Faster,     // significant and beyond the threshold, the good way
  Ambiguous,  // beyond the threshold but not significant: rerun with more samples
  Throttled,  // would be Slower, but the candidate's SM clock dropped: flagged, not failed
  Broken,     // ok in the baseline, failed/refused in the candidate (exit 1)
  Skipped,    // not ok in the baseline, or no samples: cannot be judged (exit 2 unless allowed)
  ParamsChanged,  // paired by variant, shape and dataset, params differ; timing_verdict says how it ran
};
const char* to_string(Verdict verdict);

// Pure decision from the two statistics; see reports/README.md.
Verdict decide_verdict(double p_value, double relative_change, const CompareOptions& options);

struct RowComparison {
  std::string name;
  double base_median_ms = 0, cand_median_ms = 0;
  double change = 0;        // cand/base − 1
  double p_value = 1;
  bool exact_test = false;
  double u_statistic = 0;   // U of the candidate sample (pairs where cand > base)
  size_t base_count = 0, cand_count = 0;
  Verdict verdict = Verdict::Same;
  // For ParamsChanged: the verdict of the timing comparison, made as for any other row.
  Verdict timing_verdict = Verdict::Same;
  std::string base_params, cand_params;  // "key=value,..." when they differ, else empty
  // Second opinion, nvbench style: are the [min, q3] intervals disjoint?
  std::string robust;       // "slower" | "faster" | "overlap" | "" when not computable
  double base_clock_mhz = 0, cand_clock_mhz = 0;  // medians, 0 when not recorded
  std::string note;
};

struct ComparisonReport {
  std::string base_device, cand_device;     // display names
  std::string base_commit, cand_commit;
  std::string base_created, cand_created;
  std::vector<RowComparison> rows;
  std::vector<std::string> missing;  // in the baseline, not in the candidate
  std::vector<std::string> added;    // in the candidate, not in the baseline
  std::vector<std::string> warnings; // e.g. what --force overrode
  size_t baseline_rows = 0;
  bool allow_missing = false;        // CompareOptions::allow_missing of the comparison
  int count(Verdict verdict) const;
  // Rows that ran slower: Slower, Broken, and ParamsChanged whose timing was Slower.
  int regressions() const;
  // Baseline rows the comparison could not judge: missing in the candidate, or Skipped.
  int unjudged() const;
  // 1: a regression (it wins over 2: a judged slowdown is the more specific news); 2: a
  // baseline row could not be judged and allow_missing is off; 0 otherwise.
  int exit_code() const;
};

// Throws InputError (exit 2) when the files cannot be compared: no rows, different devices
// or datasets without options.force, or no row in common.
ComparisonReport compare_results(const nlohmann::json& baseline, const nlohmann::json& candidate,
                                 const CompareOptions& options);

std::string render_compare_markdown(const ComparisonReport& report, const CompareOptions& options);
std::string render_compare_table(const ComparisonReport& report, const CompareOptions& options);
nlohmann::json compare_to_json(const ComparisonReport& report, const CompareOptions& options);

// "5%" -> 0.05, "0.05" -> 0.05; a bare number >= 1 is rejected as ambiguous.
double parse_fraction(const std::string& text, const std::string& what);

}  // namespace mk::reports
