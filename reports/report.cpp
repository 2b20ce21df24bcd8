#include "reports/report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include <sys/wait.h>

#include "core/errors.hpp"
#include "harness/results.hpp"
#include "reports/results_io.hpp"
#include "reports/stats.hpp"

namespace mk::reports {

using nlohmann::json;
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------
// Formatting

namespace {

const std::string kMissing = "—";

std::string fixed(double value, int decimals) {
  if (!std::isfinite(value)) return kMissing;
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string ms_text(double ms) {
  if (!std::isfinite(ms)) return kMissing;
  const double magnitude = std::fabs(ms);
  return fixed(ms, magnitude >= 100 ? 2 : magnitude >= 1 ? 3 : 4);
}

std::string speedup_text(double speedup) {
  if (!std::isfinite(speedup) || speedup <= 0) return kMissing;
  return fixed(speedup, speedup >= 100 ? 0 : speedup >= 10 ? 1 : 2) + "x";
}

std::string lower(std::string text) {
  for (char& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string short_device(const json& doc) {
  std::string name = device_label(doc);
  for (const char* prefix : {"NVIDIA ", "Tesla "})
    if (name.rfind(prefix, 0) == 0 && name.size() > std::string(prefix).size())
      name = name.substr(std::string(prefix).size());
  return name;
}

double mean_of(const std::vector<double>& values) {
  double sum = 0;
  int count = 0;
  for (double v : values)
    if (std::isfinite(v)) sum += v, ++count;
  return count ? sum / count : NAN;
}

// ---------------------------------------------------------------------------------------
// Row views

struct ProblemKey {
  int64_t n = 0, k_min = 0, k_max = 0, m = 0;
  bool operator<(const ProblemKey& o) const {
    return std::tie(n, k_min, k_max, m) < std::tie(o.n, o.k_min, o.k_max, o.m);
  }
  bool operator==(const ProblemKey& o) const {
    return n == o.n && k_min == o.k_min && k_max == o.k_max && m == o.m;
  }
  int64_t sum_k() const { return (k_min + k_max) * (k_max - k_min + 1) / 2; }
  std::string k_text() const {
    return k_min == k_max ? std::to_string(k_min) : std::to_string(k_min) + "..." + std::to_string(k_max);
  }
};

ProblemKey problem_of(const json& row) {
  const json problem = row.contains("problem") && row["problem"].is_object() ? row["problem"] : json::object();
  ProblemKey key;
  key.n = int64_t(number_or(problem, "n", 0));
  key.k_min = int64_t(number_or(problem, "k_min", number_or(problem, "k", 0)));
  key.k_max = int64_t(number_or(problem, "k_max", double(key.k_min)));
  key.m = int64_t(number_or(problem, "m", 0));
  return key;
}

double row_gops(const json& row) {
  return row.contains("metrics") ? number_or(row["metrics"], "gops", NAN) : NAN;
}

const json& params_of(const json& row) {
  static const json empty = json::object();
  return row.contains("params") && row["params"].is_object() ? row["params"] : empty;
}

// The suite runner may tag a row with its role in table 2; older files do not.
std::string role_tag(const json& row) {
  std::string tag = string_or(row, "suite_role", "");
  if (tag.empty()) tag = string_or(row, "k_mode", "");
  return lower(tag);
}

bool is_cpu_row(const json& row) {
  const std::string variant = lower(string_or(row, "variant", ""));
  return role_tag(row) == "cpu" || variant.rfind("cpu", 0) == 0;
}

std::vector<const json*> ok_rows(const json& doc) {
  std::vector<const json*> rows;
  for (const json& row : doc["rows"])
    if (row_status(row) == "ok" && std::isfinite(row_median_ms(row))) rows.push_back(&row);
  return rows;
}

std::string dataset_summary(const std::vector<const json*>& rows) {
  std::vector<std::string> seen;
  for (const json* row : rows) {
    const json dataset = row->contains("dataset") ? (*row)["dataset"] : json::object();
    const std::string text = describe_dataset(dataset);
    if (std::find(seen.begin(), seen.end(), text) == seen.end()) seen.push_back(text);
  }
  if (seen.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < seen.size() && i < 3; ++i) out += (i ? "; " : "") + seen[i];
  if (seen.size() > 3) out += "; +" + std::to_string(seen.size() - 3) + " more";
  return out;
}

std::string provenance_line(const LoadedResults& file, const std::vector<const json*>& rows) {
  const json& doc = file.doc;
  const json& device = doc["device"];
  const json build = doc.contains("build") && doc["build"].is_object() ? doc["build"] : json::object();
  std::ostringstream line;
  line << "device: " << device_label(doc);
  const std::string slug = device_slug(doc);
  std::string details = slug;
  const std::string driver = string_or(device, "driver", "");
  const std::string runtime = string_or(device, "cuda_runtime", "");
  if (!driver.empty()) details += (details.empty() ? "" : ", ") + std::string("driver ") + driver;
  if (!runtime.empty()) details += (details.empty() ? "" : ", ") + std::string("CUDA ") + runtime;
  if (!details.empty()) line << " (" << details << ")";
  line << " · commit: " << string_or(build, "git_sha", "unknown");
  const std::string build_type = string_or(build, "build_type", "");
  if (!build_type.empty()) line << " (" << build_type << ")";
  line << " · dataset: " << dataset_summary(rows);
  line << " · date: " << string_or(doc, "created", "unknown");
  line << " · file: " << fs::path(file.path).filename().string();
  return line.str();
}

// ---------------------------------------------------------------------------------------
// Generic table: one row per result row.

ReportTable generic_table(const LoadedResults& file) {
  ReportTable table;
  const std::string suite = string_or(file.doc, "suite", "");
  table.title = (suite.empty() ? std::string("Results") : "Suite " + suite) + " — " +
                short_device(file.doc);
  std::vector<const json*> all;
  for (const json& row : file.doc["rows"]) all.push_back(&row);
  table.provenance.push_back(provenance_line(file, all));
  table.header = {"Row", "Status", "Median (ms)", "Min (ms)", "Q3 (ms)", "Gops/s", "GB/s",
                  "% FP32", "% DRAM", "Bound"};
  table.numeric = {false, false, true, true, true, true, true, true, true, false};
  for (const json* row : all) {
    const json summary = row->contains("summary") && (*row)["summary"].is_object() ? (*row)["summary"] : json::object();
    const json metrics = row->contains("metrics") && (*row)["metrics"].is_object() ? (*row)["metrics"] : json::object();
    std::string status = row_status(*row);
    const std::string reason = string_or(*row, "reason", "");
    if (status != "ok" && !reason.empty()) status += ": " + reason;
    // 0 means "no peak known" (SCHEMA.md), e.g. on a CPU-only machine.
    auto percent = [&](const char* measured, const char* theoretical) {
      const double value = number_or(metrics, measured, 0) > 0 ? number_or(metrics, measured, NAN)
                                                               : number_or(metrics, theoretical, NAN);
      return value > 0 ? value : NAN;
    };
    const double pct_fp32 = percent("pct_fp32_measured", "pct_fp32_theoretical");
    const double pct_dram = percent("pct_dram_measured", "pct_dram_theoretical");
    std::string bound = string_or(metrics, "roofline_limit", "");
    if (bound.empty()) bound = kMissing;
    // A refused or failed row has no timing: zeros in its summary must not read as 0 ms.
    const bool measured = row_status(*row) == "ok";
    const double none = NAN;
    table.rows.push_back({row_name(*row), status, ms_text(measured ? row_median_ms(*row) : none),
                          ms_text(measured ? number_or(summary, "min_ms", NAN) : none),
                          ms_text(measured ? number_or(summary, "q3_ms", NAN) : none),
                          fixed(measured ? number_or(metrics, "gops", NAN) : none, 2),
                          fixed(measured ? number_or(metrics, "effective_gbps", NAN) : none, 1),
                          fixed(measured ? pct_fp32 : none, 1), fixed(measured ? pct_dram : none, 1),
                          measured ? bound : std::string(kMissing)});
    table.bold.push_back(false);
  }
  table.notes.push_back("% FP32 and % DRAM use the measured peak (mkbench peak) when the file has one, "
                        "else the theoretical peak; — where no peak is known.");
  return table;
}

// ---------------------------------------------------------------------------------------
// Table 1: work per thread (grid sweep), with the published T4 numbers beside ours.

// "3..7" / "3...7" / "5" -> (kmin, kmax); nullopt when unreadable.
std::optional<std::pair<int64_t, int64_t>> parse_k_text(const json& value) {
  if (value.is_number_integer()) return std::make_pair(value.get<int64_t>(), value.get<int64_t>());
  if (!value.is_string()) return std::nullopt;
  const std::string text = value.get<std::string>();
  try {
    const size_t dots = text.find("..");
    if (dots == std::string::npos) {
      const int64_t k = std::stoll(text);
      return std::make_pair(k, k);
    }
    const size_t end = text.find_first_not_of('.', dots);
    return std::make_pair(int64_t(std::stoll(text.substr(0, dots))), int64_t(std::stoll(text.substr(end))));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string load_text_or_empty(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

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

// ---------------------------------------------------------------------------------------
// Table 2: MultiK over a K range against one run per K ("Vários"), one run with K = ΣK
// ("Único") and the CPU.

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

// ---------------------------------------------------------------------------------------
// Table 3 / --merge: the same problems on several GPUs, with speedup and cost-performance.

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

struct PublishedTable3 {
  bool loaded = false;
  std::string source;
  int64_t m = 0;
  struct Row { double t4_gops, t4_ms, a100_gops, a100_ms; };
  std::map<std::tuple<int64_t, int64_t, int64_t>, Row> rows;  // (n, kmin, kmax)
  std::string why_not_shown;
};

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
                         const PublishedTable3* published = nullptr) {
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

}  // namespace

// ---------------------------------------------------------------------------------------
// Public entry points

std::vector<std::pair<std::string, double>> parse_prices(const std::string& text) {
  std::vector<std::pair<std::string, double>> prices;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    if (item.empty()) continue;
    const size_t equals = item.find('=');
    if (equals == std::string::npos || equals == 0)
      throw InputError("--price entry \"" + item + "\" is not DEVICE=PRICE (e.g. H100=1,T4=0.17)");
    const std::string value_text = item.substr(equals + 1);
    double value = 0;
    size_t used = 0;
    try {
      value = std::stod(value_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value_text.size() || !(value > 0) || !std::isfinite(value))
      throw InputError("--price entry \"" + item + "\": the price must be a positive number");
    prices.push_back({item.substr(0, equals), value});
  }
  if (prices.empty()) throw InputError("--price is empty; expected e.g. H100=1,T4=0.17");
  return prices;
}

std::string default_published_path(const std::string& file_name) {
  if (const char* dir = std::getenv("MKBENCH_REPORTS_DIR"); dir && *dir)
    return (fs::path(dir) / "published" / file_name).string();
#ifdef MKBENCH_SOURCE_DIR
  return (fs::path(MKBENCH_SOURCE_DIR) / "reports" / "published" / file_name).string();
#else
  return "reports/published/" + file_name;
#endif
}

std::string default_published_table1_path() { return default_published_path("table1_t4.json"); }

std::vector<ReportTable> build_report_tables(const std::vector<LoadedResults>& files,
                                             const ReportOptions& options) {
  if (files.empty()) throw InputError("no result files given");
  for (const auto& file : files)
    if (file.doc.at("rows").empty()) throw InputError(file.path + ": has no rows to report");
  std::vector<ReportTable> tables;
  if (options.merge) {
    tables.push_back(merged_table(files, options));
    return tables;
  }
  for (const auto& file : files) {
    const std::string suite = string_or(file.doc, "suite", "");
    std::vector<ReportTable> special;
    if (suite == "table1") special = table1_tables(file, options);
    else if (suite == "table2") special = table2_tables(file);
    else if (suite == "table3") {
      const PublishedTable3 published = load_published_table3(
          options.published_table3.empty() ? default_published_path("table3_t4_a100.json") : options.published_table3);
      special = {merged_table({file}, options, &published)};
    }
    const bool has_special = !special.empty();
    if (!has_special) special.push_back(generic_table(file));
    for (auto& table : special) tables.push_back(std::move(table));
    if (has_special && options.all_rows) {
      ReportTable all = generic_table(file);
      all.title = "All rows — " + all.title;
      tables.push_back(std::move(all));
    }
  }
  return tables;
}

std::string render_markdown(const std::vector<ReportTable>& tables) {
  std::ostringstream md;
  for (const auto& table : tables) {
    md << "## " << table.title << "\n\n";
    for (const auto& line : table.provenance) md << "_Provenance — " << line << "_\n\n";
    auto cell_text = [](std::string text) {
      std::string out;
      for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
      return out;
    };
    md << "|";
    for (const auto& h : table.header) md << " " << cell_text(h) << " |";
    md << "\n|";
    for (size_t c = 0; c < table.header.size(); ++c)
      md << (c < table.numeric.size() && table.numeric[c] ? "---:|" : "---|");
    md << "\n";
    for (size_t r = 0; r < table.rows.size(); ++r) {
      const bool bold = r < table.bold.size() && table.bold[r];
      md << "|";
      for (const auto& cell : table.rows[r]) {
        const bool mark = bold && !cell.empty() && cell != kMissing;
        md << " " << (mark ? "**" : "") << cell_text(cell) << (mark ? "**" : "") << " |";
      }
      md << "\n";
    }
    md << "\n";
    for (const auto& note : table.notes) md << note << "\n\n";
  }
  return md.str();
}

namespace {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_value(const json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  return value.dump();
}

// Known columns first, in schema order; anything newer appended so no metric is dropped.
std::vector<std::string> union_of_keys(const std::vector<LoadedResults>& files, const char* section,
                                       std::vector<std::string> ordered) {
  std::set<std::string> extra;
  for (const auto& file : files)
    for (const json& row : file.doc["rows"])
      if (row.contains(section) && row[section].is_object())
        for (const auto& item : row[section].items())
          if (std::find(ordered.begin(), ordered.end(), item.key()) == ordered.end()) extra.insert(item.key());
  ordered.insert(ordered.end(), extra.begin(), extra.end());
  return ordered;
}

}  // namespace

std::string render_csv(const std::vector<LoadedResults>& files) {
  const auto summary_keys = union_of_keys(
      files, "summary", {"count", "median_ms", "min_ms", "max_ms", "mean_ms", "q1_ms", "q3_ms", "iqr_ms"});
  const auto metric_keys = union_of_keys(
      files, "metrics",
      {"gops", "effective_gbps", "pct_fp32_theoretical", "pct_fp32_measured", "pct_dram_theoretical",
       "pct_dram_measured", "arithmetic_intensity", "roofline_bound_ms", "roofline_limit"});
  std::vector<std::string> header = {"file", "suite", "created", "device_name", "device_slug",
                                     "git_sha", "build_type", "name", "variant", "params", "n",
                                     "k_min", "k_max", "sum_k", "m", "dataset", "status", "reason",
                                     "clock", "warmup", "l2_flushed", "samples"};
  for (const auto& key : summary_keys) header.push_back(key);
  for (const auto& key : metric_keys) header.push_back(key);
  header.push_back("verify");

  std::ostringstream csv;
  for (size_t i = 0; i < header.size(); ++i) csv << (i ? "," : "") << csv_field(header[i]);
  csv << "\n";
  for (const auto& file : files) {
    const json& doc = file.doc;
    const json build = doc.contains("build") && doc["build"].is_object() ? doc["build"] : json::object();
    for (const json& row : doc["rows"]) {
      auto section = [&](const char* key) {
        return row.contains(key) && row[key].is_object() ? row[key] : json::object();
      };
      const json problem = section("problem"), timing = section("timing");
      const json summary = section("summary"), metrics = section("metrics");
      auto field = [](const json& object, const std::string& key) {
        return object.contains(key) ? csv_value(object[key]) : std::string();
      };
      std::vector<std::string> cells = {
          file.path, csv_value(doc.value("suite", json())), field(doc, "created"),
          device_label(doc), device_slug(doc), field(build, "git_sha"), field(build, "build_type"),
          row_name(row), field(row, "variant"), params_text(params_of(row)), field(problem, "n"),
          field(problem, "k_min"), field(problem, "k_max"), field(problem, "sum_k"), field(problem, "m"),
          row.contains("dataset") ? row["dataset"].dump() : "", row_status(row), field(row, "reason"),
          field(timing, "clock"), field(timing, "warmup"), field(timing, "l2_flushed"),
          std::to_string(row_samples_ms(row).size())};
      for (const auto& key : summary_keys) cells.push_back(field(summary, key));
      for (const auto& key : metric_keys) cells.push_back(field(metrics, key));
      std::string verify;
      if (row.contains("verify") && !row["verify"].is_null()) verify = row["verify"].dump();
      cells.push_back(verify);
      for (size_t i = 0; i < cells.size(); ++i) csv << (i ? "," : "") << csv_field(cells[i]);
      csv << "\n";
    }
  }
  return csv.str();
}

}  // namespace mk::reports

namespace mk::reports {

int run_report(const std::vector<std::string>& paths, ReportOptions options,
               const std::string& out_path, std::ostream& out, std::ostream& err) {
  try {
    if (options.format != "md" && options.format != "csv" && options.format != "html")
      throw InputError("--format must be md, csv or html (got \"" + options.format + "\")");
    if (!out_path.empty()) mk::check_writable(out_path);  // before rendering (plots take seconds)
    std::vector<LoadedResults> files;
    for (const auto& path : paths) files.push_back({path, load_results_file(path)});
    std::string text;
    if (options.format == "csv") {
      for (const auto& file : files)
        if (file.doc.at("rows").empty()) throw InputError(file.path + ": has no rows to report");
      text = render_csv(files);
    } else if (options.format == "md") {
      text = render_markdown(build_report_tables(files, options));
    } else {
      options.all_rows = true;
      const auto tables = build_report_tables(files, options);
      const std::string published =
          options.published_table1.empty() ? default_published_table1_path() : options.published_table1;
      const PlotOutcome plots = render_plots(files, published);
      if (plots.plots.empty()) {
        if (options.require_plots) {
          err << "mkbench report: plots unavailable and --require-plots was given: "
              << plots.unavailable << "\n";
          return kExitBadInput;
        }
        err << "mkbench report: note: the html has tables only; plots unavailable: "
            << plots.unavailable << "\n";
      }
      text = render_html(tables, plots, files);
    }
    if (out_path.empty())
      out << text;
    else
      mk::write_text_atomically(out_path, text);
    return kExitOk;
  } catch (const Error& error) {
    err << "mkbench report: " << error.what() << "\n";
    return error.exit_code;
  } catch (const std::exception& error) {
    err << "mkbench report: " << error.what() << "\n";
    return kExitBadInput;
  }
}

}  // namespace mk::reports
