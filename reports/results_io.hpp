#pragma once
// Reading result files (reports/SCHEMA.md) for report/compare/baseline. These tools work on
// the JSON directly rather than on the harness structs so they can read files written by
// any mkbench version that keeps the schema tag, and so they stay buildable on their own.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mk::reports {

// Parses and checks the top-level shape: schema tag, device object, rows array (each an
// object). Throws InputError naming the file and what is wrong; an empty rows array is
// allowed here (callers that need rows say so).
nlohmann::json load_results_file(const std::string& path);
nlohmann::json parse_results_text(const std::string& text, const std::string& origin);

// Writing goes through harness/results.hpp (mk::write_text_atomically: temp + fsync + rename).

// What makes two datasets "the same data": the whole identity object, except that a file
// known by its digest is identified by that digest (its path may differ between machines).
// A generator's identity is its spec, the same in every schema version.
std::string dataset_identity(const nlohmann::json& dataset);
// How a file's identity names its bytes: "xxh3_128" (results schema 2), "sha256" (schema 1),
// or "" (a generator, or a file without a digest).
std::string dataset_digest_key(const nlohmann::json& dataset);
// Whether two file identities under different digests (one "sha256", one "xxh3_128") could
// be the same file: the same format, size and file name. Only --force pairs rows by this.
bool same_file_across_digests(const nlohmann::json& a, const nlohmann::json& b);
// Short human text: "uniform seed=42 m=33554432 n=8", "file points.npy xxh3_128=0123abcd…".
std::string describe_dataset(const nlohmann::json& dataset);

// Row helpers tolerant of missing optional fields.
std::string row_name(const nlohmann::json& row);
std::string row_status(const nlohmann::json& row);  // "ok" when absent
std::vector<double> row_samples_ms(const nlohmann::json& row);
std::vector<double> row_sm_clocks(const nlohmann::json& row);
// summary.median_ms, else the median of samples_ms, else NaN.
double row_median_ms(const nlohmann::json& row);
double number_or(const nlohmann::json& object, const char* key, double fallback);
std::string string_or(const nlohmann::json& object, const char* key, const std::string& fallback);
// "block=256,grid=264" (keys sorted), optionally leaving some keys out.
std::string params_text(const nlohmann::json& params, const std::vector<std::string>& skip = {});

std::string device_label(const nlohmann::json& results);  // "NVIDIA H100 80GB HBM3"
std::string device_slug(const nlohmann::json& results);

}  // namespace mk::reports
