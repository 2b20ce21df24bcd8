#pragma once
// Each reader driven the way its fuzz target drives it, shared by the targets and by the
// GoogleTest that replays what fuzzing found (tests/test_fuzz_regressions.cpp), so a
// committed input means the same thing in both. Each throws whatever the reader throws.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "datasets/dataset.hpp"
#include "harness/suite.hpp"
#include "reports/results_io.hpp"
#include "tuner/config.hpp"

namespace mk::fuzz {

// fuzz_csv's first byte picks the options: bit 0 header, bit 1 a label column (bits 2-3
// its index), bits 4-5 the delimiter, bit 6 cols=1,0. The rest is the file.
inline CsvOptions csv_options(std::string_view input) {
  CsvOptions options;
  const uint8_t choice = input.empty() ? 0 : static_cast<uint8_t>(input[0]);
  options.header = choice & 1;
  options.label_column = (choice >> 1) & 1 ? (choice >> 2) & 3 : -1;
  static const char kDelimiters[] = {',', ';', '\t', ' '};
  options.delimiter = kDelimiters[(choice >> 4) & 3];
  if ((choice >> 6) & 1) options.columns = {1, 0};
  return options;
}
inline std::string_view csv_text(std::string_view input) { return input.empty() ? input : input.substr(1); }

inline void read_csv_points(std::string_view input) { parse_csv(csv_text(input), "fuzz.csv", csv_options(input)); }

inline void read_csv_labelled(std::string_view input) {
  const LabelledDataset labelled = parse_labelled_csv(csv_text(input), "fuzz.csv", csv_options(input));
  if (static_cast<int64_t>(labelled.labels.values.size()) != labelled.data.m) __builtin_trap();
}

inline void read_csv_labels(std::string_view input) {
  CsvOptions options = csv_options(input);
  options.columns.clear();
  parse_csv_labels(csv_text(input), "fuzz.csv", options);
}

inline void read_npy_points(std::string_view input) {
  const Dataset points = parse_npy(input, "fuzz.npy");
  if (points.values.size() != static_cast<size_t>(points.m) * points.n) __builtin_trap();
}

inline void read_npy_labels(std::string_view input) { parse_npy_labels(input, "fuzz.npy"); }

inline void read_idx_points(std::string_view input) {
  const Dataset points = parse_idx(input, "fuzz.idx");
  if (points.values.size() != static_cast<size_t>(points.m) * points.n) __builtin_trap();
}

inline void read_idx_labels(std::string_view input) { parse_idx_labels(input, "fuzz.idx"); }

inline void read_suite(std::string_view input) { parse_suite_text(std::string(input), "fuzz"); }

// A config the reader accepts must also survive what `mkbench run` does with it (the
// nearest entries for a shape) and a write-and-read round trip.
inline void read_tuned_config(std::string_view input) {
  const tuner::TunedConfig config = tuner::parse_config_text(std::string(input), "fuzz.json");
  Problem problem;
  problem.m = 1 << 20;
  problem.n = 8;
  problem.k = KRange{3, 7};
  config.nearest(problem);
  tuner::config_from_json(tuner::config_to_json(config), "round trip");
}

// The results reader, then every row helper report/compare/baseline call on its rows.
inline void read_results(std::string_view input) {
  const nlohmann::json doc = reports::parse_results_text(std::string(input), "fuzz.json");
  reports::device_label(doc);
  reports::device_slug(doc);
  for (const nlohmann::json& row : doc.at("rows")) {
    reports::row_name(row);
    reports::row_status(row);
    reports::row_samples_ms(row);
    reports::row_sm_clocks(row);
    reports::row_median_ms(row);
    if (row.contains("dataset")) {
      reports::dataset_identity(row["dataset"]);
      reports::describe_dataset(row["dataset"]);
    }
    if (row.contains("params")) reports::params_text(row["params"], {"grid"});
  }
}

}  // namespace mk::fuzz
