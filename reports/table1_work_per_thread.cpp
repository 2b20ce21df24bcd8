// Seed Table 1: work per thread (the table1 suite's grid sweep), with the published T4 numbers
// (reports/published/table1_t4.json) beside ours.
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

struct PublishedTable1 {
  bool loaded = false;
  std::string gpu, source;
  bool has_ops_note = false;
  std::optional<ProblemKey> problem;  // from "setup" (n, k, m) when the file gives it
  struct Row { int64_t grid; double points_per_thread, time_ms, gops; };
  std::vector<Row> rows;
  std::string why_not_shown;
};

PublishedTable1 load_published_table1(const std::string& path) {
  PublishedTable1 published;
  if (path == "none") return published;
  const std::string text = load_text_or_empty(path);
  if (text.empty()) {
    published.why_not_shown = "published T4 column left out: " + path + " not found";
    return published;
  }
  try {
    const json doc = json::parse(text);
    published.gpu = doc.contains("gpu") ? (doc["gpu"].is_string() ? doc["gpu"].get<std::string>() : doc["gpu"].dump()) : "";
    published.source = string_or(doc, "source", "");
    published.has_ops_note = doc.contains("ops_note");
    if (doc.contains("setup") && doc["setup"].is_object()) {
      const json& setup = doc["setup"];
      const auto k = setup.contains("k") ? parse_k_text(setup["k"]) : std::nullopt;
      if (k && setup.contains("n") && setup.contains("m"))
        published.problem = ProblemKey{int64_t(number_or(setup, "n", 0)), k->first, k->second,
                                       int64_t(number_or(setup, "m", 0))};
    }
    for (const json& row : doc.at("rows"))
      published.rows.push_back({int64_t(number_or(row, "grid", -1)), number_or(row, "points_per_thread", NAN),
                                number_or(row, "time_ms", NAN), number_or(row, "gops", NAN)});
    published.loaded = true;
  } catch (const std::exception& error) {
    published.why_not_shown = "published T4 column left out: " + path + " is malformed (" + error.what() + ")";
  }
  return published;
}

// Fixed wording: readers must never take the seed's numbers for ours.
const char* const kPublishedTable1Label = "published (Tesla T4, seed 000) — another GPU, not our measurement";

// Grid and points per thread of a row. The table1 suite sets one of them to 0 ("derive it
// from the other"): ppt = ceil(M / (grid·block)), grid = ceil(M / (block·ppt)).
std::pair<double, double> grid_and_ppt(const json& row, int64_t m) {
  const json& params = params_of(row);
  double grid = number_or(params, "grid", NAN);
  double ppt = number_or(params, "ppt", number_or(params, "points_per_thread", NAN));
  const double block = number_or(params, "block", NAN);
  const bool known_grid = std::isfinite(grid) && grid > 0, known_ppt = std::isfinite(ppt) && ppt > 0;
  if (!known_grid && known_ppt && std::isfinite(block) && block > 0 && m > 0)
    grid = std::ceil(double(m) / (block * ppt));
  if (!known_ppt && known_grid && std::isfinite(block) && block > 0 && m > 0)
    ppt = std::ceil(double(m) / (grid * block));
  return {grid > 0 ? grid : NAN, ppt > 0 ? ppt : NAN};
}

}  // namespace

std::vector<ReportTable> table1_tables(const LoadedResults& file, const ReportOptions& options) {
  std::vector<ReportTable> tables;
  const std::string published_path =
      options.published_table1.empty() ? default_published_table1_path() : options.published_table1;
  const PublishedTable1 published = load_published_table1(published_path);

  // One table per problem (the seed has one: N=8, K=3..7, M=32M).
  std::vector<ProblemKey> problems;
  std::map<ProblemKey, std::vector<const json*>> by_problem;
  for (const json* row : ok_rows(file.doc)) {
    const json& params = params_of(*row);
    if (!params.contains("grid") && !params.contains("ppt")) continue;
    const ProblemKey key = problem_of(*row);
    if (!by_problem.count(key)) problems.push_back(key);
    by_problem[key].push_back(row);
  }
  for (const ProblemKey& key : problems) {
    const std::vector<const json*>& rows = by_problem[key];
    // Show the other parameters only when they vary, so the usual table stays the seed's.
    std::set<std::string> others, variants;
    for (const json* row : rows) {
      others.insert(params_text(params_of(*row), {"grid", "ppt", "points_per_thread"}));
      variants.insert(string_or(*row, "variant", ""));
    }
    const bool show_params = others.size() > 1 || variants.size() > 1;
    bool all_measured = true;
    for (const json* row : rows)
      all_measured = all_measured && row->contains("metrics") &&
                     number_or((*row)["metrics"], "pct_fp32_measured", 0) > 0;
    std::string published_note = published.why_not_shown;
    bool with_published = published.loaded;
    if (with_published && published.problem && !(*published.problem == key)) {
      with_published = false;
      published_note = "published T4 column left out: the seed measured N=" + std::to_string(published.problem->n) +
                       ", K=" + published.problem->k_text() + ", M=" + std::to_string(published.problem->m) +
                       ", not this problem";
    }
    // The suite lists its grids in the order of the seed's rows (multiples of this GPU's SM
    // count standing in for the T4's), so equal row counts pair rows by position; otherwise
    // rows pair only where the grids are equal.
    const bool by_position = with_published && published.rows.size() == rows.size();

    ReportTable table;
    table.title = "Table 1 — work per thread: N=" + std::to_string(key.n) + ", K=" + key.k_text() +
                  ", M=" + std::to_string(key.m) + " — " + short_device(file.doc);
    table.provenance.push_back(provenance_line(file, rows));
    table.header = {"Grid", "Points/thread", "Time (ms)", "Gops/s",
                    all_measured ? "% peak (measured FP32)" : "% peak (theoretical FP32)"};
    table.numeric = {true, true, true, true, true};
    if (show_params) {
      table.header.insert(table.header.begin() + 1, "Params");
      table.numeric.insert(table.numeric.begin() + 1, false);
    }
    const size_t our_columns = table.header.size();
    if (with_published) {
      for (const char* column : {"T4 Grid¹", "T4 Points/thread¹", "T4 Time (ms)¹", "T4 Gops/s¹"}) {
        table.header.push_back(column);
        table.numeric.push_back(true);
      }
    }
    size_t best = 0;
    for (size_t i = 0; i < rows.size(); ++i)
      if (row_gops(*rows[i]) > row_gops(*rows[best])) best = i;

    auto published_cells = [&](const PublishedTable1::Row& p) {
      return std::vector<std::string>{std::to_string(p.grid), fixed(p.points_per_thread, 0), ms_text(p.time_ms),
                                      fixed(p.gops, 2)};
    };
    struct Line { double grid; std::vector<std::string> cells; bool bold; };
    std::vector<Line> lines;
    std::set<int64_t> our_grids;
    for (size_t i = 0; i < rows.size(); ++i) {
      const json& row = *rows[i];
      const auto [grid, ppt] = grid_and_ppt(row, key.m);
      if (std::isfinite(grid)) our_grids.insert(int64_t(grid));
      const json metrics = row.contains("metrics") ? row["metrics"] : json::object();
      const double pct = all_measured ? number_or(metrics, "pct_fp32_measured", NAN)
                                      : number_or(metrics, "pct_fp32_theoretical", NAN);
      std::vector<std::string> cells = {fixed(grid, 0), fixed(ppt, 0), ms_text(row_median_ms(row)),
                                        fixed(row_gops(row), 2), fixed(pct > 0 ? pct : NAN, 1)};
      if (show_params) {
        std::string label = params_text(params_of(row), {"grid", "ppt", "points_per_thread"});
        if (variants.size() > 1) label = string_or(row, "variant", "") + " " + label;
        cells.insert(cells.begin() + 1, label);
      }
      if (with_published) {
        std::vector<std::string> extra(4, kMissing);
        if (by_position) {
          extra = published_cells(published.rows[i]);
        } else {
          for (const auto& p : published.rows)
            if (std::isfinite(grid) && p.grid == int64_t(grid)) extra = published_cells(p);
        }
        cells.insert(cells.end(), extra.begin(), extra.end());
      }
      lines.push_back({grid, cells, i == best});
    }
    if (with_published && !by_position) {
      // Grids only the seed measured still get a line, so its whole table is visible.
      for (const auto& p : published.rows) {
        if (our_grids.count(p.grid)) continue;
        std::vector<std::string> cells(our_columns, kMissing);
        cells[0] = std::to_string(p.grid);  // the grid column is shared when pairing by grid
        const auto extra = published_cells(p);
        cells.insert(cells.end(), extra.begin(), extra.end());
        lines.push_back({double(p.grid), cells, false});
      }
      std::stable_sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) {
        return (std::isfinite(a.grid) ? a.grid : 1e300) < (std::isfinite(b.grid) ? b.grid : 1e300);
      });
    }
    for (auto& line : lines) {
      table.rows.push_back(line.cells);
      table.bold.push_back(line.bold);
    }
    table.notes.push_back("Bold: our best row (highest Gops/s). Time is the median of the timed "
                          "iterations; Gops/s = 3·ΣK·N·M / time.");
    if (with_published) {
      std::string note = std::string("¹ ") + kPublishedTable1Label + ".";
      if (!published.source.empty()) note += " Source: " + published.source + ".";
      if (!published.gpu.empty()) note += " GPU: " + published.gpu + ".";
      note += by_position ? " Rows are paired by position: the suite's grids are multiples of this GPU's "
                            "SM count standing in for the seed's multiples of the T4's 40 SMs."
                          : " Rows are paired where the grids are equal.";
      if (published.has_ops_note)
        note += " The published times cover about 5 Lloyd iterations (see ops_note in the file): "
                "compare Gops/s, not time.";
      table.notes.push_back(note);
    } else if (!published_note.empty()) {
      table.notes.push_back(published_note);
    }
    tables.push_back(std::move(table));
  }
  return tables;
}

}  // namespace mk::reports::detail
