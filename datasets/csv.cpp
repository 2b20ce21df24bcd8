// Numeric CSV loader. Every malformed input is reported with file, line (1-based) and
// column (0-based, like --dataset csv:...:cols=) because a benchmark input that silently
// loses or shifts a column produces plausible but wrong timings.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>

#include "datasets/dataset.hpp"
#include "datasets/digest.hpp"
#include "core/errors.hpp"
#include "core/input_file.hpp"

namespace mk {
namespace {

std::string read_whole_file(const std::string& path) {
  require_regular_file(path, "CSV file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  std::error_code error;
  const uintmax_t bytes = std::filesystem::file_size(path, error);
  if (error) throw InputError("cannot read '" + path + "': " + error.message());
  std::string text(static_cast<size_t>(bytes), '\0');
  in.read(text.data(), static_cast<std::streamsize>(bytes));
  if (static_cast<uintmax_t>(in.gcount()) != bytes) throw InputError("error while reading '" + path + "'");
  return text;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

bool is_blank(std::string_view line) { return trim(line).empty(); }

size_t count_fields(std::string_view line, char delimiter) {
  size_t fields = 1;
  for (char c : line) fields += (c == delimiter);
  return fields;
}

std::string describe_delimiter(char delimiter) {
  if (delimiter == '\t') return "tab";
  if (delimiter == ' ') return "space";
  return std::string("'") + delimiter + "'";
}

class CsvParser {
 public:
  // With `labels`, the label column's cells are parsed into it; without, they are skipped
  // unread (a text class name does not stop the points from loading).
  // `labels_only`: a file of labels (no features); without a label column, a one-column file
  // is its own label column.
  CsvParser(const std::string& path, const CsvOptions& options, std::vector<int32_t>* labels = nullptr,
            bool labels_only = false)
      : path_(path), options_(options), labels_(labels), labels_only_(labels_only),
        label_column_(options.label_column) {}

  [[noreturn]] void fail(int64_t line, const std::string& problem) const {
    throw InputError(path_ + ": line " + std::to_string(line) + ": " + problem);
  }
  [[noreturn]] void fail(int64_t line, size_t column, const std::string& problem) const {
    throw InputError(path_ + ": line " + std::to_string(line) + ", column " + std::to_string(column) +
                     ": " + problem);
  }

  // Decides which file columns become which features once the field count is known.
  void plan_columns(size_t fields, int64_t line) {
    field_count_ = fields;
    feature_of_field_.assign(fields, -1);
    if (labels_only_) {
      if (label_column_ < 0 && fields != 1)
        fail(line, "a labels file of " + std::to_string(fields) +
                       " columns needs the label column named: label=COL (numbered from 0)");
      if (label_column_ < 0) label_column_ = 0;
    }
    if (label_column_ >= 0 && static_cast<size_t>(label_column_) >= fields)
      fail(line, "label column " + std::to_string(label_column_) + " does not exist (the file has " +
                     std::to_string(fields) + " columns, numbered from 0)");
    if (labels_only_) return;
    if (options_.columns.empty()) {
      for (size_t f = 0; f < fields; ++f)
        if (static_cast<int>(f) != label_column_) feature_of_field_[f] = feature_count_++;
    } else {
      for (int column : options_.columns) {
        if (column < 0 || static_cast<size_t>(column) >= fields)
          fail(line, "selected column " + std::to_string(column) + " does not exist (the file has " +
                         std::to_string(fields) + " columns, numbered from 0)");
        if (column == label_column_)
          fail(line, "column " + std::to_string(column) + " is selected as a feature and as the label");
        if (feature_of_field_[column] >= 0)
          fail(line, "column " + std::to_string(column) + " is selected twice");
        feature_of_field_[column] = feature_count_++;
      }
    }
    if (feature_count_ == 0) fail(line, "no feature columns are left after dropping the label");
  }

  float parse_cell(std::string_view cell, int64_t line, size_t column) const {
    std::string_view text = trim(cell);
    if (text.size() >= 2 && text.front() == '"' && text.back() == '"')
      text = trim(text.substr(1, text.size() - 2));
    if (text.empty()) fail(line, column, "empty cell");
    std::string_view digits = text;
    if (digits.size() > 1 && digits.front() == '+' && digits[1] != '-') digits.remove_prefix(1);
    float value = 0;
    auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (result.ec == std::errc::result_out_of_range) {
      // from_chars refuses underflow as well as overflow; tiny values should just round.
      double wide = std::strtod(std::string(digits).c_str(), nullptr);
      if (std::fabs(wide) > std::numeric_limits<float>::max())
        fail(line, column, "'" + std::string(text) + "' is outside the float32 range");
      value = static_cast<float>(wide);
    } else if (result.ec != std::errc() || result.ptr != digits.data() + digits.size()) {
      fail(line, column, "'" + std::string(text) + "' is not a number");
    }
    if (!std::isfinite(value))
      fail(line, column, "'" + std::string(text) + "' is not finite (dataset contains " +
                             (std::isnan(value) ? "NaN" : "Inf") + " at row " + std::to_string(rows_) +
                             ", column " + std::to_string(feature_of_field_[column]) + ")");
    return value;
  }

  int32_t parse_label(std::string_view cell, int64_t line, size_t column) const {
    std::string_view text = trim(cell);
    if (text.size() >= 2 && text.front() == '"' && text.back() == '"')
      text = trim(text.substr(1, text.size() - 2));
    if (text.empty()) fail(line, column, "empty label");
    std::string_view digits = text;
    if (digits.size() > 1 && digits.front() == '+' && digits[1] != '-') digits.remove_prefix(1);
    double value = 0;
    const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (result.ec != std::errc() || result.ptr != digits.data() + digits.size())
      fail(line, column, "label '" + std::string(text) + "' is not a number (labels must be whole numbers)");
    if (!(value >= std::numeric_limits<int32_t>::min() && value <= std::numeric_limits<int32_t>::max()) ||
        value != std::floor(value))
      fail(line, column, "label '" + std::string(text) + "' is not a whole number that fits in 32 bits");
    return static_cast<int32_t>(value);
  }

  Dataset parse(std::string_view text) {
    if (text.empty()) throw InputError(path_ + ": file is empty");
    // Reserving from the line count keeps peak memory near text + values instead of
    // the doubling that growth by push_back would cause for large files.
    size_t line_estimate = 1;
    for (char c : text) line_estimate += (c == '\n');

    Dataset data;
    bool header_pending = options_.header;
    int64_t line_number = 0;
    size_t position = 0;
    while (position < text.size()) {
      size_t end = text.find('\n', position);
      const bool has_newline = end != std::string_view::npos;
      if (!has_newline) end = text.size();
      std::string_view line(text.data() + position, end - position);
      position = end + 1;
      ++line_number;
      if (is_blank(line)) continue;

      const size_t fields = count_fields(line, options_.delimiter);
      if (field_count_ == 0) {
        plan_columns(fields, line_number);
        // Every cell takes at least one character and one separator, which bounds the
        // reservation by the text's size whatever the line count.
        data.values.reserve(std::min(line_estimate * feature_count_, text.size() / 2 + 1));
      }
      if (fields != field_count_) {
        std::string problem = "expected " + std::to_string(field_count_) + " fields separated by " +
                              describe_delimiter(options_.delimiter) + " but found " + std::to_string(fields);
        if (!has_newline) problem += " (the last line has no line break: was the file truncated?)";
        fail(line_number, problem);
      }
      if (header_pending) {
        header_pending = false;
        continue;
      }

      const size_t row_start = data.values.size();
      data.values.resize(row_start + feature_count_);
      size_t field_start = 0;
      for (size_t f = 0; f < fields; ++f) {
        size_t field_end = line.find(options_.delimiter, field_start);
        if (field_end == std::string_view::npos) field_end = line.size();
        if (feature_of_field_[f] >= 0)
          data.values[row_start + feature_of_field_[f]] =
              parse_cell(line.substr(field_start, field_end - field_start), line_number, f);
        else if (labels_ && static_cast<int>(f) == label_column_)
          labels_->push_back(parse_label(line.substr(field_start, field_end - field_start), line_number, f));
        field_start = field_end + 1;
      }
      ++rows_;
    }
    if (rows_ == 0) throw InputError(path_ + ": no data rows" + (options_.header ? " after the header" : ""));
    if (labels_only_) {
      data.m = rows_;
      return data;
    }
    data.m = rows_;
    data.n = feature_count_;
    data.values.shrink_to_fit();
    return data;
  }

 private:
  const std::string& path_;
  const CsvOptions& options_;
  std::vector<int32_t>* labels_;
  bool labels_only_;
  int label_column_;
  size_t field_count_ = 0;
  std::vector<int> feature_of_field_;  // -1: column not used as a feature
  int feature_count_ = 0;
  int64_t rows_ = 0;
};

nlohmann::json identity_of(std::string_view text, const CsvOptions& options) {
  return {{"kind", "file"},
          {"format", "csv"},
          {"bytes", text.size()},
          {kIdentityDigestKey, data_digest(text.data(), text.size())},
          {"options",
           {{"header", options.header},
            {"label_column", options.label_column},
            {"columns", options.columns},
            {"delimiter", std::string(1, options.delimiter)}}}};
}

void check_delimiter(const std::string& origin, const CsvOptions& options) {
  if (options.delimiter == '\n' || options.delimiter == '"' || options.delimiter == '\0')
    throw InputError("invalid CSV delimiter for '" + origin + "'");
}

}  // namespace

Dataset parse_csv(std::string_view text, const std::string& origin, const CsvOptions& options) {
  check_delimiter(origin, options);
  Dataset data = CsvParser(origin, options).parse(text);
  check_values_finite(data);  // the scale check is the command's (check_finite)
  data.sparsity = measure_sparsity(data.values);
  data.identity = identity_of(text, options);
  return data;
}

Labels parse_csv_labels(std::string_view text, const std::string& origin, const CsvOptions& options) {
  check_delimiter(origin, options);
  Labels labels;
  CsvParser(origin, options, &labels.values, true).parse(text);
  labels.identity = identity_of(text, options);
  return labels;
}

Labels load_csv_labels(const std::string& path, const CsvOptions& options) {
  check_delimiter(path, options);
  Labels labels = parse_csv_labels(read_whole_file(path), path, options);
  labels.identity["path"] = path;
  return labels;
}

LabelledDataset parse_labelled_csv(std::string_view text, const std::string& origin, const CsvOptions& options) {
  check_delimiter(origin, options);
  if (options.label_column < 0)
    throw InputError(origin + ": no label column: name it with label=COL (numbered from 0)");
  LabelledDataset result;
  result.data = CsvParser(origin, options, &result.labels.values).parse(text);
  check_values_finite(result.data);
  result.data.sparsity = measure_sparsity(result.data.values);
  result.data.identity = identity_of(text, options);
  result.labels.identity = result.data.identity;
  return result;
}

Dataset load_csv(const std::string& path, const CsvOptions& options) {
  check_delimiter(path, options);
  const std::string text = read_whole_file(path);
  Dataset data = parse_csv(text, path, options);
  data.identity["path"] = path;
  return data;
}

LabelledDataset load_labelled_csv(const std::string& path, const CsvOptions& options) {
  check_delimiter(path, options);
  const std::string text = read_whole_file(path);
  LabelledDataset result = parse_labelled_csv(text, path, options);
  result.data.identity["path"] = path;
  result.labels.identity["path"] = path;
  return result;
}

}  // namespace mk
