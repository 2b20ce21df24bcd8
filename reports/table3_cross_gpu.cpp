// Seed Table 3 and `report --merge`: the same problems on several GPUs, with speedup and
// cost-performance (--price), and the published T4/A100 numbers (reports/published/table3_t4_a100.json)
// beside a single table3 file.
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

namespace {

std::optional<double> price_for_text(const std::string& haystack, const ReportOptions& options) {
  const std::string text = lower(haystack);
  std::optional<double> price;
  size_t best_length = 0;
  for (const auto& [key, value] : options.prices) {
    const std::string needle = lower(key);
    if (!needle.empty() && text.find(needle) != std::string::npos && needle.size() > best_length) {
      price = value;
      best_length = needle.size();
    }
  }
  return price;
}

std::optional<double> price_for(const json& doc, const ReportOptions& options) {
  return price_for_text(device_label(doc) + " " + device_slug(doc), options);
}

}  // namespace

PublishedTable3 load_published_table3(const std::string& path) {
  PublishedTable3 published;
  if (path == "none") return published;
  const std::string text = load_text_or_empty(path);
  if (text.empty()) {
    published.why_not_shown = "published T4/A100 columns left out: " + path + " not found";
    return published;
  }
  try {
    const json doc = json::parse(text);
    published.source = string_or(doc, "source", "");
    if (doc.contains("setup")) published.m = int64_t(number_or(doc["setup"], "m", 0));
    for (const json& row : doc.at("rows")) {
      const auto k = row.contains("k") ? parse_k_text(row["k"]) : std::nullopt;
      if (!k) continue;
      published.rows[{int64_t(number_or(row, "n", 0)), k->first, k->second}] = {
          number_or(row, "t4_gops", NAN), number_or(row, "t4_time_ms", NAN), number_or(row, "a100_gops", NAN),
          number_or(row, "a100_time_ms", NAN)};
    }
    published.loaded = true;
  } catch (const std::exception& error) {
    published.why_not_shown = "published T4/A100 columns left out: " + path + " is malformed (" + error.what() + ")";
  }
  return published;
}

ReportTable merged_table(const std::vector<LoadedResults>& files, const ReportOptions& options,
                         const PublishedTable3* published) {
  struct Key {
    std::string variant;
    ProblemKey problem;
    bool operator<(const Key& o) const {
      return std::tie(variant, problem) < std::tie(o.variant, o.problem);
    }
  };
  struct Best { double ms = NAN, gops = NAN; };
  std::vector<Key> keys;
  std::set<Key> seen_keys;
  std::set<std::string> variants;
  std::vector<std::map<Key, Best>> best(files.size());
  std::vector<std::vector<const json*>> file_rows(files.size());
  for (size_t f = 0; f < files.size(); ++f) {
    for (const json* row : ok_rows(files[f].doc)) {
      if (is_cpu_row(*row) && files.size() > 1) continue;  // the GPUs are what is compared
      file_rows[f].push_back(row);
      const Key key{string_or(*row, "variant", ""), problem_of(*row)};
      if (!seen_keys.count(key)) {
        seen_keys.insert(key);
        keys.push_back(key);
      }
      variants.insert(key.variant);
      Best& entry = best[f][key];
      const double ms = row_median_ms(*row);
      if (!std::isfinite(entry.ms) || ms < entry.ms) entry = {ms, row_gops(*row)};
    }
  }
  // Column labels: the GPU name, disambiguated when two files ran on the same model.
  std::vector<std::string> labels;
  for (size_t f = 0; f < files.size(); ++f) {
    std::string label = short_device(files[f].doc);
    if (std::count_if(files.begin(), files.end(), [&](const LoadedResults& other) {
          return short_device(other.doc) == short_device(files[f].doc);
        }) > 1)
      label += " (" + fs::path(files[f].path).filename().string() + ")";
    labels.push_back(label);
  }
  std::vector<std::optional<double>> prices;
  for (const auto& file : files) prices.push_back(price_for(file.doc, options));

  const bool with_published = published && published->loaded && files.size() == 1 &&
                              std::all_of(keys.begin(), keys.end(), [&](const Key& key) {
                                return published->m == 0 || key.problem.m == published->m;
                              });
  const std::optional<double> t4_price = price_for_text("NVIDIA Tesla T4 tesla-t4", options);
  const std::optional<double> a100_price = price_for_text("NVIDIA A100 a100", options);

  // Every value column has a kind so the mean line and the cells format alike.
  enum Kind { Gops, Ms, Speedup, Relative };
  ReportTable table;
  std::vector<Kind> kinds;
  auto add_column = [&](const std::string& name, Kind kind) {
    table.header.push_back(name);
    table.numeric.push_back(true);
    kinds.push_back(kind);
  };
  table.title = files.size() > 1 ? "Table 3 — MultiK on different GPUs and cloud cost"
                                 : "Table 3 — " + short_device(files[0].doc);
  for (size_t f = 0; f < files.size(); ++f) table.provenance.push_back(provenance_line(files[f], file_rows[f]));
  const bool show_variant = variants.size() > 1;
  table.header = {"N", "K"};
  table.numeric = {true, false};
  if (show_variant) {
    table.header.push_back("Variant");
    table.numeric.push_back(false);
  }
  const size_t fixed_columns = table.header.size();
  for (const auto& label : labels) {
    add_column(label + " Gops/s", Gops);
    add_column(label + " ms", Ms);
  }
  std::vector<size_t> priced;  // files (after the first) that get a cost column
  for (size_t f = 1; f < files.size(); ++f) {
    add_column("Speedup " + labels[f] + " vs " + labels[0], Speedup);
    if (prices[0] && prices[f]) {
      priced.push_back(f);
      add_column("Relative cost-perf " + labels[f], Relative);
    }
  }
  const bool price_vs_t4 = with_published && prices[0] && t4_price;
  const bool price_vs_a100 = with_published && prices[0] && a100_price;
  if (with_published) {
    add_column("T4 Gops/s²", Gops);
    add_column("T4 ms²", Ms);
    add_column("A100 Gops/s²", Gops);
    add_column("A100 ms²", Ms);
    add_column("Speedup vs T4²", Speedup);
    if (price_vs_t4) add_column("Relative cost-perf vs T4²", Relative);
    add_column("Speedup vs A100²", Speedup);
    if (price_vs_a100) add_column("Relative cost-perf vs A100²", Relative);
  }

  auto format = [&](Kind kind, double value) {
    switch (kind) {
      case Gops: return fixed(value, 2);
      case Ms: return ms_text(value);
      case Speedup: return speedup_text(value);
      case Relative: return fixed(value, 2);
    }
    return kMissing;
  };
  std::vector<std::vector<double>> column_values(kinds.size());
  for (const Key& key : keys) {
    std::vector<double> values;
    for (size_t f = 0; f < files.size(); ++f) {
      const auto it = best[f].find(key);
      values.push_back(it == best[f].end() ? NAN : it->second.gops);
      values.push_back(it == best[f].end() ? NAN : it->second.ms);
    }
    for (size_t f = 1; f < files.size(); ++f) {
      const double speedup = values[1] / values[2 * f + 1];
      values.push_back(speedup);
      if (std::find(priced.begin(), priced.end(), f) != priced.end())
        values.push_back(speedup / (*prices[f] / *prices[0]));
    }
    if (with_published) {
      PublishedTable3::Row p{NAN, NAN, NAN, NAN};
      const auto it = published->rows.find({key.problem.n, key.problem.k_min, key.problem.k_max});
      if (it != published->rows.end()) p = it->second;
      const double ours = values[1];
      values.insert(values.end(), {p.t4_gops, p.t4_ms, p.a100_gops, p.a100_ms, p.t4_ms / ours});
      if (price_vs_t4) values.push_back(p.t4_ms / ours / (*prices[0] / *t4_price));
      values.push_back(p.a100_ms / ours);
      if (price_vs_a100) values.push_back(p.a100_ms / ours / (*prices[0] / *a100_price));
    }
    std::vector<std::string> cells = {std::to_string(key.problem.n), key.problem.k_text()};
    if (show_variant) cells.push_back(key.variant);
    for (size_t i = 0; i < values.size(); ++i) {
      column_values[i].push_back(values[i]);
      cells.push_back(format(kinds[i], values[i]));
    }
    table.rows.push_back(cells);
    table.bold.push_back(false);
  }
  if (keys.size() > 1) {  // the seed's "media" line
    std::vector<std::string> cells(fixed_columns, "");
    cells[0] = "Mean";
    for (size_t i = 0; i < kinds.size(); ++i) cells.push_back(format(kinds[i], mean_of(column_values[i])));
    table.rows.push_back(cells);
    table.bold.push_back(false);
  }
  table.notes.push_back("Each cell is the fastest row for that variant and problem on that GPU." +
                        (files.size() > 1 ? " Speedup = time on " + labels[0] + " / time on the other GPU."
                                          : std::string()));
  if (!priced.empty() || price_vs_t4 || price_vs_a100) {
    std::string note = "Relative cost-perf = speedup ÷ (price of the GPU the speedup belongs to ÷ price of the GPU "
                       "it is measured against); above 1 the former gives more per unit of money. Prices (--price):";
    for (const auto& [key, value] : options.prices) note += " " + key + "=" + fixed(value, 3);
    table.notes.push_back(note);
  } else if (!options.prices.empty() && (files.size() > 1 || with_published)) {
    std::string unmatched;
    for (size_t f = 0; f < files.size(); ++f)
      if (!prices[f]) unmatched += (unmatched.empty() ? "" : ", ") + labels[f];
    table.notes.push_back("No cost column: --price has no entry matching " +
                          (unmatched.empty() ? std::string("T4/A100") : unmatched) +
                          " (entries match a substring of the device name or slug).");
  }
  if (with_published) {
    std::string note = "² published (Tesla T4 and A100, seed 000) — other GPUs, not our measurement; one Lloyd "
                       "iteration each, so comparable with our per-iteration medians. Speedup vs T4/A100 = "
                       "published time / our time.";
    if (!published->source.empty()) note += " Source: " + published->source + ".";
    table.notes.push_back(note);
  } else if (published && files.size() == 1) {
    table.notes.push_back(published->loaded ? "published T4/A100 columns left out: the seed used M=" +
                                                  std::to_string(published->m) + ", these rows another M"
                                            : published->why_not_shown);
  }
  return table;
}

}  // namespace mk::reports::detail
