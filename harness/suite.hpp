#pragma once
// Suites are data (harness/suites/*.json, embedded at build time; format in
// harness/suites/README.md). This is the runner: parse, expand the cartesian product of
// axes per case, measure every row, rewrite the results file after each row.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device_info.hpp"
#include "harness/format.hpp"
#include "core/problem.hpp"
#include "harness/results.hpp"
#include "variants/variant.hpp"

namespace CLI {
class App;
}

namespace mk {

// Generated from harness/suites/*.json by CMake (build/generated/embedded_suites.cpp).
const std::map<std::string, std::string>& embedded_suites();

struct SuiteCase {
  std::vector<int> dims;             // empty: N from the case's file dataset
  std::vector<std::string> k;        // "3..7" or "16"
  std::vector<std::string> points;   // "32M", "1000", "1e6"; empty: M from the file
  std::vector<std::string> variants; // "all" = every registered variant
  // Axis name -> list of values (ints, strings, expressions, "all", "default"), or the
  // string "all" for every legal point of each variant's space. Declared order is kept.
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  std::optional<std::string> dataset;
  std::optional<int> iters, warmup;
  std::optional<bool> verify;
  int batch = 1;  // B independent problems of each "points" a row (run --batch; docs/batched.md)
};

struct SuiteDefinition {
  std::string name;
  std::string description;
  std::string dataset = "uniform";  // any --dataset spec
  uint64_t seed = 42;
  std::string init = "first";       // first | random
  int iters = 20;                   // timed samples per row
  int warmup = 3;
  bool verify = false;
  std::vector<SuiteCase> cases;
  // --quick overrides: {"points": [...], "iters": N, "warmup": N}; null = defaults
  // (points capped at 1M, iters ≤ 10, warmup ≤ 1).
  nlohmann::ordered_json quick;
  std::vector<std::string> fallback_points = {"1M"};
  std::vector<std::string> fallback_variants = {"cpu-openmp"};
  std::string report_kind = "generic";  // generic | table1
  std::string published;                // table1: data file relative to the source dir
};

// InputError with "suite <name>: <where>: ..." on malformed suites.
SuiteDefinition parse_suite(const nlohmann::ordered_json& json, const std::string& name);
// The same from the suite file's text (InputError for invalid JSON too).
SuiteDefinition parse_suite_text(const std::string& text, const std::string& label);
// An embedded suite name, or a path to a suite JSON file. InputError listing the known
// suites when neither.
SuiteDefinition load_suite(const std::string& name_or_path);
std::vector<std::string> known_suite_names();

// Parameter expressions over the device and problem: "sm*2.5", "cdiv(m, block)",
// "one-point-per-thread" (= cdiv(m, block)), min(a,b), max(a,b), + - * / and parentheses.
// Names: sm, m, n, ksum, kmin, kmax, kcount, l2_bytes, threads_per_sm, plus parameter
// names (values of the same combination, else the variant's defaults).
using NameLookup = std::function<std::optional<double>(const std::string&)>;
struct ExpressionResult {
  enum Kind { Value, NotExpression, UnknownName } kind = NotExpression;
  double value = 0;
  std::string unknown_name;
};
ExpressionResult evaluate_expression(const std::string& text, const NameLookup& lookup);
// The integer a parameter expression stands for: nearest integer, at least 1.
int64_t round_parameter(double value);

struct PlannedRow {
  const Variant* variant = nullptr;  // null when the suite names an unknown variant
  std::string variant_name;
  Problem problem;
  Params overrides = Params::object();
};

struct PlannedGroup {
  std::string dataset_spec;
  int dims = 0;
  int64_t points = 0;  // each problem's M; the data holds points × batch rows
  int batch = 1;
  uint64_t seed = 42;
  std::string init = "first";
  int iters = 20, warmup = 3;
  bool verify = false;
  bool cpu_fallback = false;
  SuiteCase source;          // the case this group came from (variants already filtered)
  std::vector<PlannedRow> rows;
};

struct SuitePlan {
  std::vector<PlannedGroup> groups;
  bool used_cpu_fallback = false;
  size_t row_count() const;
};

// Expands a suite for `device`. `variant_filter` (empty = all) keeps only those variants.
SuitePlan plan_suite(const SuiteDefinition& suite, const DeviceInfo& device,
                     const std::vector<std::string>& variant_filter, bool quick);
// The rows of one group for a concrete data shape (re-run when a file dataset's shape
// differs from the nominal one).
std::vector<PlannedRow> expand_group_rows(const PlannedGroup& group, int n, int64_t m, const DeviceInfo& device);

struct SuiteOptions {
  std::string name;
  std::vector<std::string> variants;  // filter
  std::string out;
  std::string format = "table";
  bool quick = false;
  std::string device = "0";  // --device, as `run` takes it (harness/parallel/placement.hpp)
  bool benchmark_console = false;
  bool hide_launch_latency = false;
  bool measure_peaks = true;
  bool dry_run = false;  // print the planned rows, measure nothing
  // Rows whose case names no params run the tuned config of this GPU when one applies.
  bool use_tuned = true;
  // Check every row against the FP64 CPU reference, whatever the suite file says.
  bool verify_all = false;
  // Keep the rows the --out file already holds for this suite and measure only the rest
  // (after kill -9; the suite also restarts itself with it after a sticky CUDA error).
  bool resume = false;
};

void add_suite_options(CLI::App& app, SuiteOptions& options);
// Suite variant lists: "all", "all-gpu" and "all-cpu" expand to the registered variants.
std::vector<std::string> expand_variant_names(const std::vector<std::string>& names);
// Exit code: 0, 5 when a verification failed, 4 when a row failed on the device (resumed
// rows included), 2 when a group's data cannot fit the host's memory (before any row).
int run_suite(const SuiteOptions& options);

// Table 1 of seed 000: Grid, Points/thread, Time, Gops/s, % of peak, best marked '*',
// beside the published T4 numbers when `published` is an object with "rows".
TextTable table1_view(const std::vector<ResultRow>& rows, const nlohmann::json& published);
// The suite's rows as its report kind asks (Table 1 beside the published T4 figures, or the
// generic results table); the CPU fallback always prints the generic table.
void print_suite_output(std::ostream& out, const SuiteDefinition& suite, const ResultFile& file, OutputFormat format,
                        bool cpu_fallback);

}  // namespace mk
