// Seed Table 2: MultiK over a K range against one run per K ("Vários"), one run with K = ΣK
// ("Único") and the CPU.
#include "reports/report_tables.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "reports/report_rows.hpp"
#include "reports/results_io.hpp"

namespace mk::reports::detail {

using nlohmann::json;
namespace fs = std::filesystem;

std::vector<ReportTable> table2_tables(const LoadedResults& file) {
  const std::vector<const json*> rows = ok_rows(file.doc);
  auto is_range = [](const json& row) {
    const std::string tag = role_tag(row);
    if (tag == "range") return true;
    if (!tag.empty() && tag != "range") return false;
    const ProblemKey key = problem_of(row);
    return key.k_min < key.k_max;
  };
  // The MultiK reference of each range problem: the fastest GPU variant that ran that range
  // in one pass (registers-multik and tensor-multik both do; tensor-multik refuses ΣK > 64).
  std::vector<std::string> ranged;  // first-seen order, for the title
  for (const json* row : rows) {
    if (is_cpu_row(*row) || !is_range(*row)) continue;
    const std::string variant = string_or(*row, "variant", "");
    if (std::find(ranged.begin(), ranged.end(), variant) == ranged.end()) ranged.push_back(variant);
  }
  if (ranged.empty()) return {};
  std::string reference;
  for (const std::string& variant : ranged) reference += (reference.empty() ? "" : ", ") + variant;
  if (ranged.size() > 1) reference = "fastest of " + reference;

  std::vector<ProblemKey> cases;
  std::map<ProblemKey, double> reference_ms, reference_gops;
  std::vector<std::string> others;  // variants with single-K rows, first-seen order
  std::map<std::pair<std::string, ProblemKey>, double> single_ms;  // (variant, n/k/k/m) -> best ms
  std::map<ProblemKey, double> cpu_ms;  // best CPU ms per problem (any K span)
  for (const json* row : rows) {
    const ProblemKey key = problem_of(*row);
    const double ms = row_median_ms(*row);
    const std::string variant = string_or(*row, "variant", "");
    if (is_cpu_row(*row)) {
      auto [it, inserted] = cpu_ms.emplace(key, ms);
      if (!inserted) it->second = std::min(it->second, ms);
      continue;
    }
    if (is_range(*row)) {
      if (!reference_ms.count(key)) {
        cases.push_back(key);
        reference_ms[key] = ms;
        reference_gops[key] = row_gops(*row);
      } else if (ms < reference_ms[key]) {
        reference_ms[key] = ms;
        reference_gops[key] = row_gops(*row);
      }
      continue;
    }
    if (key.k_min != key.k_max) continue;
    if (std::find(others.begin(), others.end(), variant) == others.end()) others.push_back(variant);
    auto [it, inserted] = single_ms.emplace(std::make_pair(variant, key), ms);
    if (!inserted) it->second = std::min(it->second, ms);
  }
  if (cases.empty()) return {};

  auto single = [&](const std::string& variant, const ProblemKey& c, int64_t k) -> double {
    const auto it = single_ms.find({variant, ProblemKey{c.n, k, k, c.m}});
    return it == single_ms.end() ? NAN : it->second;
  };
  auto per_k_sum = [&](const std::function<double(int64_t)>& time_for_k, const ProblemKey& c) {
    double sum = 0;
    for (int64_t k = c.k_min; k <= c.k_max; ++k) {
      const double ms = time_for_k(k);
      if (!std::isfinite(ms)) return double(NAN);
      sum += ms;
    }
    return sum;
  };
  auto cpu_time = [&](const ProblemKey& c) -> double {
    if (cpu_ms.count(c)) return cpu_ms[c];
    const double summed = per_k_sum(
        [&](int64_t k) {
          const auto it = cpu_ms.find(ProblemKey{c.n, k, k, c.m});
          return it == cpu_ms.end() ? double(NAN) : it->second;
        },
        c);
    if (std::isfinite(summed)) return summed;
    const auto it = cpu_ms.find(ProblemKey{c.n, c.sum_k(), c.sum_k(), c.m});
    return it == cpu_ms.end() ? NAN : it->second;
  };

  // Only variants that give at least one number get columns.
  std::vector<std::string> shown;
  for (const std::string& variant : others) {
    bool any = false;
    for (const ProblemKey& c : cases)
      any = any || std::isfinite(single(variant, c, c.sum_k())) ||
            std::isfinite(per_k_sum([&](int64_t k) { return single(variant, c, k); }, c));
    if (any) shown.push_back(variant);
  }
  bool any_cpu = false;
  for (const ProblemKey& c : cases) any_cpu = any_cpu || std::isfinite(cpu_time(c));

  ReportTable table;
  table.title = "Table 2 — MultiK (" + reference + ") against one run per K and K=ΣK — " +
                short_device(file.doc);
  table.provenance.push_back(provenance_line(file, rows));
  table.header = {"N", "K range", "M", "Gops/s", "ms"};
  table.numeric = {true, false, true, true, true};
  for (const std::string& variant : shown) {
    table.header.push_back("vs " + variant + " Vários");
    table.header.push_back("vs " + variant + " Único");
    table.numeric.push_back(true);
    table.numeric.push_back(true);
  }
  if (any_cpu) {
    table.header.push_back("vs CPU");
    table.numeric.push_back(true);
  }
  std::vector<std::vector<double>> column_values(table.header.size());
  for (const ProblemKey& c : cases) {
    const double ref = reference_ms[c];
    std::vector<double> values = {double(c.n), NAN, double(c.m), reference_gops[c], ref};
    for (const std::string& variant : shown) {
      values.push_back(per_k_sum([&](int64_t k) { return single(variant, c, k); }, c) / ref);
      values.push_back(single(variant, c, c.sum_k()) / ref);
    }
    if (any_cpu) values.push_back(cpu_time(c) / ref);
    std::vector<std::string> cells = {std::to_string(c.n), c.k_text(), std::to_string(c.m),
                                      fixed(values[3], 2), ms_text(values[4])};
    for (size_t i = 5; i < values.size(); ++i) cells.push_back(speedup_text(values[i]));
    for (size_t i = 0; i < values.size(); ++i) column_values[i].push_back(values[i]);
    table.rows.push_back(cells);
    table.bold.push_back(false);
  }
  if (cases.size() > 1) {  // the seed's "Média" line
    std::vector<std::string> cells = {"Mean", "", "", fixed(mean_of(column_values[3]), 2),
                                      ms_text(mean_of(column_values[4]))};
    for (size_t i = 5; i < column_values.size(); ++i) cells.push_back(speedup_text(mean_of(column_values[i])));
    table.rows.push_back(cells);
    table.bold.push_back(false);
  }
  table.notes.push_back(
      "Speedup = other time / MultiK time (>1: MultiK is faster). Vários: one run per K of the "
      "range, times summed. Único: one run with K = ΣK, the same arithmetic as the whole range. "
      "vs CPU: the CPU row for the same range, else the sum of its per-K rows, else its K = ΣK row. "
      "Each time is the fastest row of that variant and problem (any parameters).");
  return {table};
}

}  // namespace mk::reports::detail
