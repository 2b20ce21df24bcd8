#pragma once
// What the report's table builders share (reports/report_tables.cpp, table1_work_per_thread.cpp,
// table2_multik_speedups.cpp, table3_cross_gpu.cpp, render_markdown_csv.cpp): number formatting,
// views of one result row (its problem, Gops/s, role in table 2) and the provenance line under
// each table title. Internal to reports/: the public interface is reports/report.hpp.
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace mk::reports::detail {

// The cell of a value that is missing or not finite.
inline const std::string kMissing = "—";

std::string fixed(double value, int decimals);
std::string ms_text(double ms);
std::string speedup_text(double speedup);
std::string lower(std::string text);
std::string short_device(const nlohmann::json& doc);  // "H100 80GB HBM3" without "NVIDIA "
double mean_of(const std::vector<double>& values);     // of the finite values; NaN if none

struct ProblemKey {
  int64_t n = 0, k_min = 0, k_max = 0, m = 0;
  int64_t batch = 1;  // problem.batch: B problems of m points each (docs/batched.md)
  bool operator<(const ProblemKey& o) const {
    return std::tie(n, k_min, k_max, m, batch) < std::tie(o.n, o.k_min, o.k_max, o.m, o.batch);
  }
  bool operator==(const ProblemKey& o) const {
    return n == o.n && k_min == o.k_min && k_max == o.k_max && m == o.m && batch == o.batch;
  }
  int64_t sum_k() const { return (k_min + k_max) * (k_max - k_min + 1) / 2; }
  std::string k_text() const {
    return k_min == k_max ? std::to_string(k_min) : std::to_string(k_min) + "..." + std::to_string(k_max);
  }
};

ProblemKey problem_of(const nlohmann::json& row);
double row_gops(const nlohmann::json& row);
const nlohmann::json& params_of(const nlohmann::json& row);
// The suite runner may tag a row with its role in table 2; older files do not.
std::string role_tag(const nlohmann::json& row);
bool is_cpu_row(const nlohmann::json& row);
std::vector<const nlohmann::json*> ok_rows(const nlohmann::json& doc);  // ok and timed
std::string provenance_line(const LoadedResults& file, const std::vector<const nlohmann::json*>& rows);

// "3..7" / "3...7" / "5" -> (kmin, kmax); nullopt when unreadable.
std::optional<std::pair<int64_t, int64_t>> parse_k_text(const nlohmann::json& value);
std::string load_text_or_empty(const std::string& path);

}  // namespace mk::reports::detail
