// --dataset spec parsing: one string names either a generator with its parameters or a
// file with its loader options.
#include <cerrno>
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "core/errors.hpp"

namespace mk {
namespace {

const char kAcceptedForms[] =
    "accepted forms: uniform[:zeros=F] | blobs[:centers=C,spread=S,box=B,zeros=F] | "
    "csv:PATH[:header][:label=COL][:cols=I,J,...][:delim=D] | npy:PATH | idx:PATH";

std::vector<std::string> split(const std::string& text, const std::string& separators) {
  std::vector<std::string> parts;
  std::string current;
  for (char c : text) {
    if (separators.find(c) != std::string::npos) {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  parts.push_back(current);
  return parts;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// A whole number in [low, high]: the callers store ints, and a cast of a wider value wrapped
// (centers=4294967297 ran one centre; a bad-input audit at 04dfbaa).
int parse_whole(const std::string& text, const std::string& what, const std::string& spec, long low, long high) {
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    throw InputError("dataset '" + spec + "': " + what + " must be a whole number, got '" + text + "'");
  if (value < low || value > high)
    throw InputError("dataset '" + spec + "': " + what + " must be in " + std::to_string(low) + ".." +
                     std::to_string(high) + ", got " + text);
  return static_cast<int>(value);
}

// The blobs' centre table is held whole wherever points are generated, outside the memory plan:
// it is kept to what no plan needs to count.
constexpr int64_t kMaxCentreTableBytes = int64_t(256) << 20;

double parse_real(const std::string& text, const std::string& what, const std::string& spec) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value))
    throw InputError("dataset '" + spec + "': " + what + " must be a finite number, got '" + text + "'");
  return value;
}

GeneratorSpec generator_from_spec(const std::string& spec, const std::string& kind, const std::string& settings,
                                  int64_t m, int n, uint64_t seed) {
  GeneratorSpec generator;
  generator.kind = kind;
  generator.m = m;
  generator.n = n;
  generator.seed = seed;
  if (!settings.empty()) {
    for (const std::string& setting : split(settings, ",:")) {
      auto equals = setting.find('=');
      const std::string key = setting.substr(0, equals);
      const std::string value = equals == std::string::npos ? "" : setting.substr(equals + 1);
      if (equals == std::string::npos)
        throw InputError("dataset '" + spec + "': expected key=value, got '" + setting + "'");
      if (key == "zeros") {
        generator.zero_fraction = parse_real(value, "zeros", spec);
      } else if (kind == "blobs" && key == "centers") {
        generator.centers = parse_whole(value, "centers", spec, 1, INT32_MAX);
      } else if (kind == "blobs" && key == "spread") {
        generator.spread = parse_real(value, "spread", spec);
      } else if (kind == "blobs" && key == "box") {
        generator.box = parse_real(value, "box", spec);
      } else {
        throw InputError("dataset '" + spec + "': unknown " + kind + " setting '" + key + "' (" +
                         (kind == "blobs" ? "expected centers, spread, box or zeros" : "expected zeros") + ")");
      }
    }
  }
  if (m < 1 || n < 1)
    throw InputError("dataset '" + spec + "' is generated and needs M >= 1 points and N >= 1 dimensions (got M=" +
                     std::to_string(m) + ", N=" + std::to_string(n) + ")");
  if (kind == "blobs" && int64_t(generator.centers) * n * 4 > kMaxCentreTableBytes)
    throw InputError("dataset '" + spec + "': " + std::to_string(generator.centers) + " centers of N=" +
                     std::to_string(n) + " take more than " + std::to_string(kMaxCentreTableBytes >> 20) +
                     " MiB (N x 4 bytes each)");
  return generator;
}

char parse_delimiter(const std::string& value, const std::string& spec) {
  if (value == "tab" || value == "\\t") return '\t';
  if (value == "space") return ' ';
  if (value == "colon") return ':';
  if (value == "semicolon") return ';';
  if (value == "comma") return ',';
  if (value.size() == 1 && value != "\"") return value[0];
  throw InputError("dataset '" + spec + "': delimiter must be one character or tab/space/colon/semicolon/comma, got '" +
                   value + "'");
}

struct CsvSpec {
  std::string path;
  CsvOptions options;
};

CsvSpec parse_csv_spec(const std::string& spec, const std::string& rest) {
  // Options are peeled off the end so a path that itself contains ':' still works.
  std::vector<std::string> parts = split(rest, ":");
  CsvSpec parsed;
  CsvOptions& options = parsed.options;
  bool seen_header = false, seen_label = false, seen_cols = false, seen_delim = false;
  while (parts.size() > 1) {
    const std::string& part = parts.back();
    if (part == "header" && !seen_header) {
      options.header = seen_header = true;
    } else if (starts_with(part, "label=") && !seen_label) {
      options.label_column = parse_whole(part.substr(6), "label column", spec, 0, INT32_MAX);
      seen_label = true;
    } else if (starts_with(part, "cols=") && !seen_cols) {
      for (const std::string& column : split(part.substr(5), ","))
        options.columns.push_back(parse_whole(column, "column index", spec, 0, INT32_MAX));
      seen_cols = true;
    } else if (starts_with(part, "delim=") && !seen_delim) {
      options.delimiter = parse_delimiter(part.substr(6), spec);
      seen_delim = true;
    } else {
      break;
    }
    parts.pop_back();
  }
  parsed.path = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) parsed.path += ":" + parts[i];
  if (parsed.path.empty()) throw InputError("dataset '" + spec + "': missing file path (" + kAcceptedForms + ")");
  return parsed;
}

struct SpecParts {
  std::string kind, rest;
};

SpecParts split_spec(const std::string& spec) {
  const auto colon = spec.find(':');
  return {spec.substr(0, colon), colon == std::string::npos ? "" : spec.substr(colon + 1)};
}

const std::string& file_path(const std::string& spec, const std::string& rest) {
  if (rest.empty()) throw InputError("dataset '" + spec + "': missing file path (" + kAcceptedForms + ")");
  return rest;
}

}  // namespace

std::optional<GeneratorSpec> generator_spec_of(const std::string& spec, int64_t m, int n, uint64_t seed) {
  const auto [kind, rest] = split_spec(spec);
  if (kind == "uniform" || kind == "blobs") return generator_from_spec(spec, kind, rest, m, n, seed);
  return std::nullopt;
}

Dataset load_dataset_spec_unheld(const std::string& spec, int64_t m, int n, uint64_t seed) {
  const auto [kind, rest] = split_spec(spec);
  if (kind == "npy") return load_npy_mapped(file_path(spec, rest));
  if (auto generator = generator_spec_of(spec, m, n, seed)) return generate_on_demand(*generator);
  throw InputError("dataset '" + spec + "' cannot be left unheld: only a .npy file (memory-mapped) or a generator "
                   "(made chunk by chunk) can");
}

bool is_file_dataset_spec(const std::string& spec) {
  const std::string kind = split_spec(spec).kind;
  return kind == "csv" || kind == "npy" || kind == "idx";
}

Dataset load_dataset_spec(const std::string& spec, int64_t m, int n, uint64_t seed) {
  const auto [kind, rest] = split_spec(spec);
  if (kind == "uniform" || kind == "blobs") return generate(generator_from_spec(spec, kind, rest, m, n, seed));
  if (kind == "csv") {
    const CsvSpec csv = parse_csv_spec(spec, rest);
    return load_csv(csv.path, csv.options);
  }
  if (kind == "npy") return load_npy(file_path(spec, rest));
  if (kind == "idx") return load_idx(file_path(spec, rest));
  throw InputError("unknown dataset '" + spec + "'; " + kAcceptedForms);
}

DataShape file_dataset_shape(const std::string& spec) {
  const auto [kind, rest] = split_spec(spec);
  if (kind == "npy") return npy_shape(file_path(spec, rest));
  if (kind == "idx") return idx_shape(file_path(spec, rest));
  if (kind != "csv") throw InputError("dataset '" + spec + "' is not a file (csv:, npy: or idx:)");
  const Dataset data = load_dataset_spec(spec, 0, 0, 0);
  return {data.m, data.n};
}

Labels load_labels_spec(const std::string& spec) {
  const auto [kind, rest] = split_spec(spec);
  if (kind == "npy") return load_npy_labels(file_path(spec, rest));
  if (kind == "idx") return load_idx_labels(file_path(spec, rest));
  if (kind == "csv") {
    const CsvSpec csv = parse_csv_spec(spec, rest);
    if (!csv.options.columns.empty())
      throw InputError("labels '" + spec + "': cols= selects features; name the label column with label=COL");
    return load_csv_labels(csv.path, csv.options);
  }
  throw InputError("unknown labels '" + spec + "'; accepted forms: idx:PATH | npy:PATH | "
                   "csv:PATH[:header][:label=COL][:delim=D]");
}

LabelledDataset load_labelled_dataset(const std::string& data_spec, const std::string& labels_spec, int64_t m, int n,
                                      uint64_t seed) {
  LabelledDataset result;
  const auto [kind, rest] = split_spec(data_spec);
  if (labels_spec.empty()) {
    const bool csv_with_label = kind == "csv" && parse_csv_spec(data_spec, rest).options.label_column >= 0;
    if (!csv_with_label)
      throw InputError("dataset '" + data_spec + "' has no labels: give a labels file (idx:PATH, npy:PATH or "
                       "csv:PATH), or a csv dataset with label=COL");
    const CsvSpec csv = parse_csv_spec(data_spec, rest);
    return load_labelled_csv(csv.path, csv.options);
  }
  result.data = load_dataset_spec(data_spec, m, n, seed);
  result.labels = load_labels_spec(labels_spec);
  if (static_cast<int64_t>(result.labels.values.size()) != result.data.m)
    throw InputError("labels '" + labels_spec + "' hold " + std::to_string(result.labels.values.size()) +
                     " labels, but dataset '" + data_spec + "' has " + std::to_string(result.data.m) + " points");
  return result;
}

}  // namespace mk
