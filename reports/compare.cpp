#include "reports/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/errors.hpp"
#include "reports/results_io.hpp"
#include "reports/stats.hpp"

namespace mk::reports {

using nlohmann::json;

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::Same: return "SAME";
    case Verdict::Slower: return "SLOWER";
    case Verdict::Faster: return "FASTER";
    case Verdict::Ambiguous: return "AMBIGUOUS";
    case Verdict::Throttled: return "THROTTLED?";
    case Verdict::Broken: return "BROKEN";
    case Verdict::Skipped: return "SKIPPED";
    case Verdict::ParamsChanged: return "PARAMS-CHANGED";
  }
  return "?";
}

Verdict decide_verdict(double p_value, double relative_change, const CompareOptions& options) {
  const bool significant = p_value < options.alpha;
  const bool beyond_threshold = std::fabs(relative_change) > options.threshold;
  if (!beyond_threshold) return Verdict::Same;  // whatever p says, too small to matter
  if (!significant) return Verdict::Ambiguous;  // big change, but the samples overlap too much
  return relative_change > 0 ? Verdict::Slower : Verdict::Faster;
}

int ComparisonReport::count(Verdict verdict) const {
  return int(std::count_if(rows.begin(), rows.end(),
                           [&](const RowComparison& row) { return row.verdict == verdict; }));
}

int ComparisonReport::regressions() const {
  int slower_retunes = 0;
  for (const auto& row : rows)
    slower_retunes += row.verdict == Verdict::ParamsChanged && row.timing_verdict == Verdict::Slower;
  return count(Verdict::Slower) + count(Verdict::Broken) + slower_retunes;
}

int ComparisonReport::unjudged() const { return int(missing.size()) + count(Verdict::Skipped); }

int ComparisonReport::exit_code() const {
  if (regressions() > 0) return 1;
  if (unjudged() > 0 && !allow_missing) return 2;
  return 0;
}

double parse_fraction(const std::string& text, const std::string& what) {
  std::string body = text;
  const bool percent = !body.empty() && body.back() == '%';
  if (percent) body.pop_back();
  double value = 0;
  size_t used = 0;
  try {
    value = std::stod(body, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (body.empty() || used != body.size() || !std::isfinite(value) || value < 0)
    throw InputError(what + " \"" + text + "\" is not a non-negative number (use e.g. 5% or 0.05)");
  if (percent) return value / 100.0;
  if (value >= 1)
    throw InputError(what + " \"" + text + "\" is ambiguous: write a percentage (\"" + text +
                     "%\") or a fraction below 1");
  return value;
}

namespace {

json object_or_empty(const json& row, const char* key) {
  const auto it = row.find(key);
  if (it == row.end() || it->is_null()) return json::object();
  return *it;
}

// A row of a suite is the same row as long as its variant, shape and data are: a retune or a
// new parameter axis changes its params, not which row it is.
bool same_row(const json& a, const json& b, bool compare_dataset) {
  if (a.value("variant", "") != b.value("variant", "")) return false;
  if (object_or_empty(a, "problem") != object_or_empty(b, "problem")) return false;
  if (compare_dataset &&
      dataset_identity(object_or_empty(a, "dataset")) != dataset_identity(object_or_empty(b, "dataset")))
    return false;
  return true;
}

bool same_params(const json& a, const json& b) { return object_or_empty(a, "params") == object_or_empty(b, "params"); }

// Pairs each baseline row with a candidate row of the same variant, shape and dataset: first
// the rows whose params are equal too (a sweep's rows differ only in params, so they pair by
// them), then the rest of each (variant, shape, dataset) in file order (a retuned row).
std::vector<int> match_rows(const json& base_rows, const json& cand_rows, bool compare_dataset) {
  std::vector<int> partner(base_rows.size(), -1);
  std::vector<bool> used(cand_rows.size(), false);
  for (const bool by_params : {true, false}) {
    for (size_t i = 0; i < base_rows.size(); ++i) {
      if (partner[i] >= 0) continue;
      for (size_t j = 0; j < cand_rows.size(); ++j) {
        if (used[j] || !same_row(base_rows[i], cand_rows[j], compare_dataset)) continue;
        if (by_params && !same_params(base_rows[i], cand_rows[j])) continue;
        partner[i] = int(j);
        used[j] = true;
        break;
      }
    }
  }
  return partner;
}

const char* digest_name(const std::string& key) {
  return key == "sha256" ? "SHA-256 (results schema mkbench.results/1)" : "XXH3-128 (results schema mkbench.results/2)";
}

// Rows left unpaired because the two files name their file data with different digests (a
// baseline measured before the results schema 2 named files by XXH3-128): the same file has
// another identity under each, so pairing by identity would call every such row missing.
// Without --force that is refused with what happened; with it, rows of the same variant and
// shape whose files have the same format, size and name are paired, with a warning.
void pair_across_digests(const json& base_rows, const json& cand_rows, std::vector<int>& partner,
                         const CompareOptions& options, ComparisonReport& report) {
  std::vector<bool> used(cand_rows.size(), false);
  for (int p : partner)
    if (p >= 0) used[size_t(p)] = true;
  size_t paired = 0;
  for (size_t i = 0; i < base_rows.size(); ++i) {
    if (partner[i] >= 0) continue;
    const json base_data = object_or_empty(base_rows[i], "dataset");
    const std::string base_key = dataset_digest_key(base_data);
    if (base_key.empty()) continue;
    for (size_t j = 0; j < cand_rows.size(); ++j) {
      if (used[j] || !same_row(base_rows[i], cand_rows[j], /*compare_dataset=*/false)) continue;
      const json cand_data = object_or_empty(cand_rows[j], "dataset");
      const std::string cand_key = dataset_digest_key(cand_data);
      if (cand_key.empty() || cand_key == base_key) continue;
      const std::string what = "the two files name their data differently: the baseline names " +
                               describe_dataset(base_data) + " by " + digest_name(base_key) + ", the candidate names " +
                               describe_dataset(cand_data) + " by " + digest_name(cand_key) +
                               "; the same file has a different identity under each";
      if (!options.force)
        throw InputError(what + ". Measure the baseline again with this mkbench (mkbench baseline update), or "
                                "--force pairs such rows by variant, shape and the file's format, size and name");
      if (!same_file_across_digests(base_data, cand_data)) continue;
      if (paired++ == 0) report.warnings.push_back(what + " (rows paired by the file's format, size and name because of --force)");
      partner[i] = int(j);
      used[j] = true;
      break;
    }
  }
}

std::string device_key(const json& results) {
  const std::string slug = device_slug(results);
  return slug.empty() ? device_label(results) : slug;
}

std::string commit_of(const json& results) {
  return results.contains("build") ? string_or(results["build"], "git_sha", "unknown") : "unknown";
}

// The verdict of a pair from its statuses and timing samples alone.
RowComparison judge_row(const json& base, const json& cand, const CompareOptions& options) {
  RowComparison out;
  out.name = row_name(base);
  out.base_median_ms = row_median_ms(base);
  out.cand_median_ms = row_median_ms(cand);
  if (row_status(base) != "ok") {
    out.verdict = Verdict::Skipped;
    const std::string reason = string_or(base, "reason", "");
    out.note = "baseline row is " + row_status(base) + (reason.empty() ? "" : " (" + reason + ")") +
               ": no baseline timing to judge against";
    return out;
  }
  if (row_status(cand) != "ok") {
    out.verdict = Verdict::Broken;
    out.note = "candidate status=" + row_status(cand) + ": " + string_or(cand, "reason", "");
    return out;
  }
  const std::vector<double> base_samples = row_samples_ms(base);
  const std::vector<double> cand_samples = row_samples_ms(cand);
  out.base_count = base_samples.size();
  out.cand_count = cand_samples.size();
  if (base_samples.empty() || cand_samples.empty()) {
    out.change = out.cand_median_ms / out.base_median_ms - 1.0;
    out.verdict = Verdict::Skipped;
    out.note = std::string("no timing.samples_ms in the ") +
               (base_samples.empty() && cand_samples.empty() ? "baseline or the candidate"
                : base_samples.empty()                       ? "baseline"
                                                             : "candidate") +
               ": no test possible";
    return out;
  }
  out.base_median_ms = median(base_samples);
  out.cand_median_ms = median(cand_samples);
  out.change = out.base_median_ms > 0 ? out.cand_median_ms / out.base_median_ms - 1.0 : 0.0;
  const MannWhitneyResult test = mann_whitney_u(cand_samples, base_samples);
  out.p_value = test.p_value;
  out.exact_test = test.exact;
  out.u_statistic = test.u_first;
  out.verdict = decide_verdict(out.p_value, out.change, options);

  const double base_min = *std::min_element(base_samples.begin(), base_samples.end());
  const double cand_min = *std::min_element(cand_samples.begin(), cand_samples.end());
  const double base_q3 = quantile(base_samples, 0.75);
  const double cand_q3 = quantile(cand_samples, 0.75);
  out.robust = cand_min > base_q3 ? "slower" : base_min > cand_q3 ? "faster" : "overlap";

  const std::vector<double> base_clocks = row_sm_clocks(base);
  const std::vector<double> cand_clocks = row_sm_clocks(cand);
  if (!base_clocks.empty() && !cand_clocks.empty()) {
    out.base_clock_mhz = median(base_clocks);
    out.cand_clock_mhz = median(cand_clocks);
    const bool clock_dropped = out.cand_clock_mhz < (1.0 - options.throttle_fraction) * out.base_clock_mhz;
    if (clock_dropped) {
      char text[160];
      std::snprintf(text, sizeof text, "median SM clock %.0f MHz vs %.0f MHz in the baseline",
                    out.cand_clock_mhz, out.base_clock_mhz);
      out.note = text;
      if (out.verdict == Verdict::Slower) out.verdict = Verdict::Throttled;
    }
  }
  if (out.base_count < kExactMaxSize || out.cand_count < kExactMaxSize) {
    if (!out.note.empty()) out.note += "; ";
    out.note += "few samples (" + std::to_string(out.base_count) + " vs " +
                std::to_string(out.cand_count) + "): the test has little power";
  }
  return out;
}

RowComparison compare_row(const json& base, const json& cand, const CompareOptions& options) {
  RowComparison out = judge_row(base, cand, options);
  if (same_params(base, cand)) return out;
  out.base_params = params_text(object_or_empty(base, "params"));
  out.cand_params = params_text(object_or_empty(cand, "params"));
  std::string what;
  if (options.ignore_params) {
    what = "candidate params " + object_or_empty(cand, "params").dump();
  } else {
    what = "params changed: " + out.base_params + " -> " + out.cand_params;
    // The timing comparison still counts (a retune that ran slower is a regression), but the
    // row no longer measures what the baseline did. A broken or unjudged row keeps that verdict.
    if (out.verdict != Verdict::Broken && out.verdict != Verdict::Skipped) {
      out.timing_verdict = out.verdict;
      out.verdict = Verdict::ParamsChanged;
    }
  }
  out.note = out.note.empty() ? what : what + "; " + out.note;
  return out;
}

std::string fixed(double value, int decimals) {
  if (!std::isfinite(value)) return "—";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string time_text(double ms) {
  if (!std::isfinite(ms)) return "—";
  const double magnitude = std::fabs(ms);
  return fixed(ms, magnitude >= 100 ? 2 : magnitude >= 1 ? 3 : 4);
}

std::string change_text(const RowComparison& row) {
  if (!std::isfinite(row.change) || (row.verdict == Verdict::Broken)) return "—";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", row.change * 100.0);
  return text;
}

// "PARAMS-CHANGED (SLOWER)": a retuned row carries the verdict of its timing too.
std::string verdict_text(const RowComparison& row) {
  std::string text = to_string(row.verdict);
  if (row.verdict == Verdict::ParamsChanged) text += std::string(" (") + to_string(row.timing_verdict) + ")";
  return text;
}

bool is_regression(const RowComparison& row) {
  return row.verdict == Verdict::Slower || row.verdict == Verdict::Broken ||
         (row.verdict == Verdict::ParamsChanged && row.timing_verdict == Verdict::Slower);
}

std::string p_text(const RowComparison& row) {
  if (row.verdict == Verdict::Broken || row.verdict == Verdict::Skipped) return "—";
  char text[32];
  if (row.p_value < 1e-4)
    std::snprintf(text, sizeof text, "%.1e", row.p_value);
  else
    std::snprintf(text, sizeof text, "%.4f", row.p_value);
  return std::string(text) + (row.exact_test ? " (exact)" : "");
}

std::string escape_markdown_cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

std::string summary_line(const ComparisonReport& report) {
  std::ostringstream text;
  text << report.rows.size() << " rows compared:";
  bool first = true;
  for (Verdict verdict : {Verdict::Slower, Verdict::Broken, Verdict::ParamsChanged, Verdict::Throttled,
                          Verdict::Ambiguous, Verdict::Faster, Verdict::Same, Verdict::Skipped}) {
    const int n = report.count(verdict);
    if (n == 0) continue;
    text << (first ? " " : ", ") << n << " " << to_string(verdict);
    first = false;
  }
  if (!report.missing.empty()) text << "; " << report.missing.size() << " missing";
  if (!report.added.empty()) text << "; " << report.added.size() << " new";
  return text.str();
}

// Why the exit status is what it is, in one line.
std::string outcome_line(const ComparisonReport& report) {
  std::ostringstream text;
  const int regressions = report.regressions(), unjudged = report.unjudged();
  if (regressions > 0) text << "REGRESSION: " << regressions << " row(s) slower or broken";
  if (unjudged > 0) {
    text << (regressions > 0 ? "; " : "") << unjudged << " of " << report.baseline_rows
         << " baseline rows not judged (missing in the candidate, not ok in the baseline, or without samples)";
    text << (report.allow_missing ? ", accepted by --allow-missing" : ": the gate cannot pass (exit 2; --allow-missing accepts that)");
  }
  if (regressions == 0 && unjudged == 0) text << "no regression: every baseline row judged";
  return text.str();
}

std::string headline(const ComparisonReport& report) {
  switch (report.exit_code()) {
    case 1: return "REGRESSION";
    case 2: return "ROWS NOT JUDGED";
    default: return report.unjudged() > 0 ? "no regression in the rows judged" : "no regression";
  }
}

std::string rule_line(const CompareOptions& options) {
  char text[256];
  std::snprintf(text, sizeof text,
                "Rule: two-sided Mann-Whitney U on timing.samples_ms at alpha=%.3g; change = "
                "median(cand)/median(base) - 1; threshold ±%.3g%%.",
                options.alpha, options.threshold * 100.0);
  return text;
}

}  // namespace

ComparisonReport compare_results(const json& baseline, const json& candidate,
                                 const CompareOptions& options) {
  const json& base_rows = baseline.at("rows");
  const json& cand_rows = candidate.at("rows");
  if (base_rows.empty()) throw InputError("the baseline has no rows to compare");
  if (cand_rows.empty()) throw InputError("the candidate has no rows to compare");

  ComparisonReport report;
  report.base_device = device_label(baseline);
  report.cand_device = device_label(candidate);
  report.base_commit = commit_of(baseline);
  report.cand_commit = commit_of(candidate);
  report.base_created = string_or(baseline, "created", "");
  report.cand_created = string_or(candidate, "created", "");

  if (device_key(baseline) != device_key(candidate)) {
    const std::string what = "different devices: baseline ran on " + report.base_device + " (" +
                             device_key(baseline) + "), candidate on " + report.cand_device + " (" +
                             device_key(candidate) + ")";
    if (!options.force)
      throw InputError(what + "; timings from different GPUs are not comparable "
                              "(--force compares anyway)");
    report.warnings.push_back(what + " (compared because of --force)");
  }

  report.baseline_rows = base_rows.size();
  report.allow_missing = options.allow_missing;
  std::vector<int> partner = match_rows(base_rows, cand_rows, /*compare_dataset=*/true);
  pair_across_digests(base_rows, cand_rows, partner, options, report);
  const bool any_exact_match =
      std::any_of(partner.begin(), partner.end(), [](int p) { return p >= 0; });
  if (!any_exact_match) {
    std::vector<int> loose = match_rows(base_rows, cand_rows, /*compare_dataset=*/false);
    const auto first_loose = std::find_if(loose.begin(), loose.end(), [](int p) { return p >= 0; });
    if (first_loose != loose.end()) {
      const size_t i = size_t(first_loose - loose.begin());
      const std::string what =
          "the dataset identities of all matching rows differ (e.g. baseline: " +
          describe_dataset(object_or_empty(base_rows[i], "dataset")) + ", candidate: " +
          describe_dataset(object_or_empty(cand_rows[size_t(*first_loose)], "dataset")) + ")";
      if (!options.force)
        throw InputError(what + "; results on different data are not comparable "
                                "(--force compares anyway)");
      report.warnings.push_back(what + " (compared because of --force)");
      partner = loose;
    } else {
      throw InputError("no row of the candidate matches a row of the baseline (rows are matched "
                       "by variant, problem and dataset); are these the same suite?");
    }
  }

  std::vector<bool> cand_used(cand_rows.size(), false);
  for (size_t i = 0; i < base_rows.size(); ++i) {
    if (partner[i] < 0) {
      report.missing.push_back(row_name(base_rows[i]));
      continue;
    }
    cand_used[size_t(partner[i])] = true;
    report.rows.push_back(compare_row(base_rows[i], cand_rows[size_t(partner[i])], options));
  }
  for (size_t j = 0; j < cand_rows.size(); ++j)
    if (!cand_used[j]) report.added.push_back(row_name(cand_rows[j]));
  return report;
}

std::string render_compare_markdown(const ComparisonReport& report, const CompareOptions& options) {
  std::ostringstream md;
  md << "### mkbench compare: " << headline(report) << "\n\n";
  md << summary_line(report) << "\n\n" << outcome_line(report) << "\n\n";
  md << "- Baseline: " << report.base_device << ", commit `" << report.base_commit << "`, "
     << report.base_created << "\n";
  md << "- Candidate: " << report.cand_device << ", commit `" << report.cand_commit << "`, "
     << report.cand_created << "\n";
  md << "- " << rule_line(options) << "\n";
  for (const auto& warning : report.warnings) md << "- **Warning:** " << warning << "\n";
  md << "\n| Row | Base median (ms) | Cand median (ms) | Change | p-value | Verdict | [min, q3] disjoint? | Note |\n";
  md << "|---|---:|---:|---:|---:|---|---|---|\n";
  for (const auto& row : report.rows) {
    const bool bad = is_regression(row) || (row.verdict == Verdict::Skipped && !report.allow_missing);
    const std::string verdict = verdict_text(row);
    md << "| " << escape_markdown_cell(row.name) << " | " << time_text(row.base_median_ms) << " | "
       << time_text(row.cand_median_ms) << " | " << change_text(row) << " | " << p_text(row)
       << " | " << (bad ? "**" + verdict + "**" : verdict) << " | "
       << (row.robust.empty() ? "—" : row.robust) << " | " << escape_markdown_cell(row.note) << " |\n";
  }
  if (!report.missing.empty()) {
    md << "\nMissing in the candidate (" << (report.allow_missing ? "accepted by --allow-missing" : "not judged: exit 2")
       << "):\n";
    for (const auto& name : report.missing) md << "- " << name << "\n";
  }
  if (!report.added.empty()) {
    md << "\nNew in the candidate (not in the baseline, not judged, not a failure):\n";
    for (const auto& name : report.added) md << "- " << name << "\n";
  }
  return md.str();
}

std::string render_compare_table(const ComparisonReport& report, const CompareOptions& options) {
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"row", "base_ms", "cand_ms", "change", "p", "verdict", "min-q3", "note"});
  for (const auto& row : report.rows)
    cells.push_back({row.name, time_text(row.base_median_ms), time_text(row.cand_median_ms),
                     change_text(row), p_text(row), verdict_text(row),
                     row.robust.empty() ? "-" : row.robust, row.note});
  // Column widths in code points so "—" does not break the alignment.
  auto width_of = [](const std::string& text) {
    size_t width = 0;
    for (unsigned char c : text) width += (c & 0xC0) != 0x80;
    return width;
  };
  std::vector<size_t> widths(cells[0].size(), 0);
  for (const auto& line : cells)
    for (size_t c = 0; c < line.size(); ++c) widths[c] = std::max(widths[c], width_of(line[c]));
  std::ostringstream out;
  out << summary_line(report) << "\n" << outcome_line(report) << "\n" << rule_line(options) << "\n";
  for (const auto& warning : report.warnings) out << "warning: " << warning << "\n";
  for (const auto& line : cells) {
    std::string text;
    for (size_t c = 0; c < line.size(); ++c) {
      text += line[c];
      if (c + 1 < line.size()) text += std::string(widths[c] - width_of(line[c]) + 2, ' ');
    }
    text.erase(text.find_last_not_of(' ') + 1);
    out << text << "\n";
  }
  for (const auto& name : report.missing)
    out << "missing in candidate" << (report.allow_missing ? " (allowed)" : " (not judged)") << ": " << name << "\n";
  for (const auto& name : report.added) out << "new in candidate: " << name << "\n";
  return out.str();
}

json compare_to_json(const ComparisonReport& report, const CompareOptions& options) {
  json out;
  out["threshold"] = options.threshold;
  out["alpha"] = options.alpha;
  out["exit_code"] = report.exit_code();
  out["allow_missing"] = report.allow_missing;
  out["baseline_rows"] = report.baseline_rows;
  out["regressions"] = report.regressions();
  out["unjudged"] = report.unjudged();
  out["outcome"] = outcome_line(report);
  out["baseline"] = {{"device", report.base_device}, {"commit", report.base_commit},
                     {"created", report.base_created}};
  out["candidate"] = {{"device", report.cand_device}, {"commit", report.cand_commit},
                      {"created", report.cand_created}};
  json counts = json::object();
  for (Verdict verdict : {Verdict::Same, Verdict::Slower, Verdict::Faster, Verdict::Ambiguous,
                          Verdict::Throttled, Verdict::Broken, Verdict::Skipped, Verdict::ParamsChanged})
    counts[to_string(verdict)] = report.count(verdict);
  out["counts"] = counts;
  out["rows"] = json::array();
  auto finite_or_null = [](double value) { return std::isfinite(value) ? json(value) : json(nullptr); };
  for (const auto& row : report.rows) {
    out["rows"].push_back({{"name", row.name},
                           {"base_median_ms", finite_or_null(row.base_median_ms)},
                           {"cand_median_ms", finite_or_null(row.cand_median_ms)},
                           {"change", finite_or_null(row.change)},
                           {"p_value", row.p_value},
                           {"exact_test", row.exact_test},
                           {"u_candidate", row.u_statistic},
                           {"base_samples", row.base_count},
                           {"cand_samples", row.cand_count},
                           {"verdict", to_string(row.verdict)},
                           {"timing_verdict", row.verdict == Verdict::ParamsChanged
                                                  ? json(to_string(row.timing_verdict)) : json(nullptr)},
                           {"base_params", row.base_params},
                           {"cand_params", row.cand_params},
                           {"robust", row.robust},
                           {"base_sm_clock_mhz", row.base_clock_mhz},
                           {"cand_sm_clock_mhz", row.cand_clock_mhz},
                           {"note", row.note}});
  }
  out["missing"] = report.missing;
  out["new"] = report.added;
  out["warnings"] = report.warnings;
  return out;
}

}  // namespace mk::reports
