#pragma once
// The results file (reports/SCHEMA.md, "mkbench.results/2") as C++ structs, its JSON
// mapping in both directions, and atomic writing. Every measuring command goes through
// here so report/compare/baseline read exactly what run/suite wrote.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/build_info.hpp"
#include "core/device_info.hpp"
#include "harness/metrics.hpp"
#include "core/problem.hpp"
#include "variants/variant.hpp"

namespace mk {

// Version 2 names file data by XXH3-128 (datasets/digest.hpp) where version 1 used SHA-256;
// nothing else differs, so the readers take both (a file's rows keep the identity they were
// measured with, and `compare` says when two files name the same data differently).
inline constexpr const char* kResultsSchema = "mkbench.results/2";
inline constexpr const char* kResultsSchemaV1 = "mkbench.results/1";
// The schemas this mkbench reads: kResultsSchema and kResultsSchemaV1.
bool is_readable_results_schema(const std::string& schema);

struct Timing {
  std::string clock = "cuda-event";  // cuda-event | steady-clock
  int warmup = 0;
  bool l2_flushed = false;
  // The stream was held busy before each start event (MeasureOptions::hide_launch_latency);
  // false in files written before the field existed.
  bool launch_latency_hidden = false;
  std::vector<double> samples_ms;
  std::vector<double> sm_clock_mhz;  // one per sample when readable, else empty
  // A one-time conversion of the points that the run made before timing (tensor-multik operands=prepared),
  // in ms; absent when the variant converts nothing. A fit pays it once, not per iteration.
  std::optional<double> conversion_ms;
};

// A row measured over several shards (`--device 0,1`, `cpu:N` or mpirun; docs/multi-gpu.md).
struct ShardRecord {
  int rank = 0;
  std::string host;    // the host name (ranks of a multi-host launch differ)
  std::string device;  // "GPU 1: NVIDIA H100 80GB HBM3" | "host CPU: ..."
  int64_t rows = 0;    // the shard's points
  // Medians over the timed steps: the shard's accumulate (assignment and sums on its rows),
  // and its time in the all-reduce, which includes waiting for slower shards.
  double step_median_ms = 0;
  double allreduce_median_ms = 0;
};

struct ParallelInfo {
  std::string communicator;  // nccl | mpi | in-process
  std::string launch;        // one-process | mpirun
  int ranks = 0;
  int64_t allreduce_bytes = 0;  // reduced per step: ΣK·N sums and ΣK counts and one inertia per K, 8 bytes each
  // Per step, the least of the shards' all-reduce times (the last shard to arrive waits only
  // for the transfer), median over the timed steps.
  double allreduce_median_ms = 0;
  std::vector<ShardRecord> shards;
};

struct ResultRow {
  std::string name;  // == NVTX range, see row_name()
  std::string variant;
  Params params = Params::object();
  Problem problem;
  nlohmann::json dataset = nlohmann::json::object();  // Dataset::identity
  std::string status = "ok";                           // ok | refused | failed
  std::string reason;
  Timing timing;
  Summary summary;
  Metrics metrics;
  // null when not verified; otherwise VerifyReport::to_json of the first step, with
  // "passed" covering both checks and "final_step" holding the post-timing check.
  nlohmann::json verify;
  // Which tuned configuration chose `params` ("" when the defaults or the user's values ran).
  std::string tuned_config;
  // null when the row ran in core; out of core, ChunkedRunInfo::to_json
  // (variants/chunked/chunked_run.hpp) and the measured host→device bandwidth.
  nlohmann::json out_of_core;
  // Present when the row ran over several shards; the metrics then use the sum of the
  // shards' device peaks.
  std::optional<ParallelInfo> parallel;

  bool ok() const { return status == "ok"; }
  bool verified() const { return verify.is_object(); }
  bool verify_passed() const;  // true when not verified
};

struct ResultFile {
  std::string schema = kResultsSchema;
  std::string created;  // UTC ISO-8601
  std::string command;
  std::optional<std::string> suite;
  nlohmann::json device = nlohmann::json::object();  // DeviceInfo::to_json
  BuildInfo build;
  std::vector<ResultRow> rows;
};

// "variant/N/K/M/params", e.g. "registers-multik/8/3..7/32M/block=256,grid=264".
std::string row_name(const std::string& variant, const Problem& problem, const Params& params);

nlohmann::json row_to_json(const ResultRow& row);
// A row's "parallel" object (fit.json records a sharded fit's the same way).
nlohmann::json parallel_info_to_json(const ParallelInfo& info);
// Throws InputError naming `where` and the offending key.
ResultRow row_from_json(const nlohmann::json& json, const std::string& where = "row");
nlohmann::json results_to_json(const ResultFile& file);
ResultFile results_from_json(const nlohmann::json& json, const std::string& source = "results");

// Temp file in the same folder + fsync + rename, so readers never see a half-written file.
void write_text_atomically(const std::string& path, const std::string& text);
// Throws InputError naming `path` and the reason when write_text_atomically could not write
// there: creates the folder as the writer would, then creates and removes a temporary file
// beside the target. Every command with an output path calls it before its work, so a bad
// --out costs nothing instead of losing a measurement. The target itself is not touched.
void check_writable(const std::string& path);
void write_results_atomically(const std::string& path, const nlohmann::json& document);
void write_results_atomically(const std::string& path, const ResultFile& file);  // refreshes nothing
// Throws InputError for a missing file, bad JSON or a schema mismatch.
ResultFile load_results(const std::string& path);

// A file header for `device`, stamped now, with the current build and command line.
ResultFile new_result_file(const DeviceInfo& device, std::optional<std::string> suite = std::nullopt);

// Inverse of DeviceInfo::to_json for the fields it writes (reports compare devices).
DeviceInfo device_from_json(const nlohmann::json& json);

std::string utc_now_iso();   // "2026-11-22T03:04:05Z"
std::string utc_today();     // "2026-11-22"

// The command line recorded in result files; main() sets it once.
void set_invocation(int argc, const char* const* argv);
const std::string& invocation();

}  // namespace mk
