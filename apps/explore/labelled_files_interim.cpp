// SEAM (loaders-fuzz): interim readers of labelled files (labelled_files_interim.hpp says what
// replaces them).
#include "apps/explore/labelled_files_interim.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"
#include "datasets/digest.hpp"

namespace mk::explore {
namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError("cannot read '" + path + "'");
  return text.str();
}

nlohmann::json file_identity(const std::string& format, const std::string& path, const std::string& bytes) {
  return {{"kind", "file"}, {"format", format}, {"path", path}, {"bytes", bytes.size()},
          {kIdentityDigestKey, data_digest(bytes.data(), bytes.size())}};
}

int64_t whole_label(double value, const std::string& where) {
  if (!std::isfinite(value) || value != std::floor(value) || std::fabs(value) > 9007199254740992.0)
    throw InputError(where + ": label " + std::to_string(value) + " is not a whole number");
  return static_cast<int64_t>(value);
}

struct CsvSpec {
  std::string path;
  CsvOptions options;
};

// csv:PATH[:header][:label=COL][:cols=...][:delim=D], options peeled off the end as
// datasets/spec.cpp does (a path may contain ':').
CsvSpec parse_csv_spec(const std::string& spec) {
  std::vector<std::string> parts;
  std::string current;
  for (char c : spec.substr(4)) {
    if (c == ':') parts.push_back(current), current.clear();
    else current += c;
  }
  parts.push_back(current);
  CsvSpec out;
  while (parts.size() > 1) {
    const std::string& part = parts.back();
    if (part == "header") {
      out.options.header = true;
    } else if (part.rfind("label=", 0) == 0) {
      char* end = nullptr;
      errno = 0;
      const long column = std::strtol(part.c_str() + 6, &end, 10);
      if (part.size() == 6 || *end != '\0' || errno == ERANGE || column < 0)
        throw InputError("'" + spec + "': label column must be a whole number >= 0, got '" + part.substr(6) + "'");
      out.options.label_column = int(column);
    } else if (part.rfind("delim=", 0) == 0) {
      const std::string d = part.substr(6);
      out.options.delimiter = d == "tab" || d == "\\t" ? '\t' : d == "space" ? ' ' : d == "semicolon" ? ';'
                            : d == "colon" ? ':' : d == "comma" ? ',' : d.size() == 1 ? d[0] : '\0';
      if (out.options.delimiter == '\0') throw InputError("'" + spec + "': bad delimiter '" + d + "'");
    } else if (part.rfind("cols=", 0) == 0) {
      // Feature selection: datasets/spec.cpp reads it for the features; nothing to do here.
    } else {
      break;
    }
    parts.pop_back();
  }
  for (size_t i = 0; i < parts.size(); ++i) out.path += (i ? ":" : "") + parts[i];
  if (out.path.empty()) throw InputError("'" + spec + "': missing file path");
  return out;
}

// The cells of one CSV column as labels, through the CSV reader (its messages name the line).
std::vector<int64_t> csv_column_labels(const CsvSpec& csv, const std::string& spec) {
  CsvOptions options = csv.options;
  options.columns = {options.label_column};
  options.label_column = -1;
  Dataset column;
  try {
    column = load_csv(csv.path, options);
  } catch (const InputError& error) {
    std::string what = error.what();
    const std::string selected = "selected column";
    if (auto at = what.find(selected); at != std::string::npos) what.replace(at, selected.size(), "label column");
    throw InputError("labels of '" + spec + "': " + what);
  }
  std::vector<int64_t> labels(static_cast<size_t>(column.m));
  for (int64_t i = 0; i < column.m; ++i)
    labels[size_t(i)] = whole_label(column.values[size_t(i)], "'" + csv.path + "' row " + std::to_string(i));
  return labels;
}

// .npy labels: 1-D or one column, integer, bool or float (whole-valued) little-endian.
std::vector<int64_t> npy_labels(const std::string& path, const std::string& bytes) {
  const std::string where = "'" + path + "'";
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw InputError(where + " is not a .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  const size_t length_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + length_bytes) throw InputError(where + ": truncated header");
  size_t header_length = 0;
  for (size_t i = 0; i < length_bytes; ++i) header_length |= size_t(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  const size_t data_start = 8 + length_bytes + header_length;
  if (data_start > bytes.size()) throw InputError(where + ": truncated header");
  const std::string header = bytes.substr(8 + length_bytes, header_length);
  auto value_of = [&](const std::string& key) {
    const size_t at = header.find("'" + key + "'");
    if (at == std::string::npos) throw InputError(where + ": header has no '" + key + "'");
    size_t start = header.find(':', at) + 1;
    while (start < header.size() && header[start] == ' ') ++start;
    const char open = header[start];
    const char close = open == '\'' ? '\'' : open == '(' ? ')' : ',';
    const size_t end = header.find(close, start + 1);
    return header.substr(start, end == std::string::npos ? std::string::npos : end - start + (close == ',' ? 0 : 1));
  };
  const std::string descr = value_of("descr"), shape = value_of("shape");
  // A 1-D array or one column has the same bytes in C and Fortran order.
  std::vector<int64_t> dims;
  for (size_t i = 1; i < shape.size();) {
    if (std::isdigit(static_cast<unsigned char>(shape[i]))) {
      size_t end = i;
      dims.push_back(std::stoll(shape.substr(i), &end));
      i += end;
    } else {
      ++i;
    }
  }
  if (dims.empty() || dims.size() > 2 || (dims.size() == 2 && dims[1] != 1))
    throw InputError(where + ": labels must be 1-D (or one column), shape is " + shape);
  const std::string type = descr.size() >= 4 ? descr.substr(1, descr.size() - 2) : descr;  // strip quotes
  const char order = type.empty() ? '?' : type[0];
  const char kind = type.size() > 1 ? type[1] : '?';
  const int width = type.size() > 2 ? std::atoi(type.c_str() + 2) : 0;
  if (order == '>' || (kind != 'i' && kind != 'u' && kind != 'f' && kind != 'b') ||
      (width != 1 && width != 2 && width != 4 && width != 8) || (kind == 'f' && width < 4))
    throw InputError(where + ": labels of dtype " + descr + " are not supported (integers, bool, float32/64)");
  const int64_t m = dims[0];
  if (bytes.size() - data_start < size_t(m) * width) throw InputError(where + ": truncated data");
  std::vector<int64_t> labels(static_cast<size_t>(m));
  const char* p = bytes.data() + data_start;
  for (int64_t i = 0; i < m; ++i, p += width) {
    uint64_t raw = 0;
    std::memcpy(&raw, p, width);  // little-endian host
    if (kind == 'f') {
      double value;
      if (width == 4) {
        float f;
        std::memcpy(&f, p, 4);
        value = f;
      } else {
        std::memcpy(&value, p, 8);
      }
      labels[size_t(i)] = whole_label(value, where + " element " + std::to_string(i));
    } else if (kind == 'i') {
      const int shift = 64 - 8 * width;
      labels[size_t(i)] = int64_t(raw << shift) >> shift;
    } else {
      labels[size_t(i)] = int64_t(raw);
    }
  }
  return labels;
}

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<double> values;
};

IdxArray read_idx(const std::string& path, const std::string& bytes) {
  const std::string where = "'" + path + "'";
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b)
    throw InputError(where + " is gzipped: gunzip it first (gzip support comes with the datasets layer's IDX loader)");
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0) throw InputError(where + " is not an IDX file");
  const int type = static_cast<unsigned char>(bytes[2]), rank = static_cast<unsigned char>(bytes[3]);
  const int width = type == 0x08 || type == 0x09 ? 1 : type == 0x0B ? 2 : type == 0x0C || type == 0x0D ? 4
                  : type == 0x0E ? 8 : 0;
  if (width == 0) throw InputError(where + ": unknown IDX element type " + std::to_string(type));
  if (rank < 1 || bytes.size() < 4 + 4 * size_t(rank)) throw InputError(where + ": truncated IDX header");
  IdxArray out;
  int64_t total = 1;
  for (int r = 0; r < rank; ++r) {
    uint32_t dim = 0;
    for (int b = 0; b < 4; ++b) dim = (dim << 8) | static_cast<unsigned char>(bytes[4 + 4 * r + b]);
    out.dims.push_back(dim);
    total *= dim;
  }
  const size_t start = 4 + 4 * size_t(rank);
  if (bytes.size() - start < size_t(total) * width) throw InputError(where + ": truncated IDX data");
  out.values.resize(size_t(total));
  for (int64_t i = 0; i < total; ++i) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data()) + start + size_t(i) * width;
    uint64_t raw = 0;
    for (int b = 0; b < width; ++b) raw = (raw << 8) | p[b];  // big-endian
    double value;
    if (type == 0x08) value = double(raw);
    else if (type == 0x09) value = double(int8_t(raw));
    else if (type == 0x0B) value = double(int16_t(raw));
    else if (type == 0x0C) value = double(int32_t(raw));
    else if (type == 0x0D) {
      const uint32_t bits = uint32_t(raw);
      float f;
      std::memcpy(&f, &bits, 4);
      value = f;
    } else {
      std::memcpy(&value, &raw, 8);
    }
    out.values[size_t(i)] = value;
  }
  return out;
}

Dataset idx_data(const std::string& path) {
  const std::string bytes = read_bytes(path);
  IdxArray array = read_idx(path, bytes);
  if (array.dims.size() < 2) throw InputError("'" + path + "' is a 1-D IDX file (labels), not data");
  Dataset data;
  data.m = array.dims[0];
  data.n = int(array.values.size() / std::max<int64_t>(1, data.m));
  data.values.assign(array.values.begin(), array.values.end());
  check_finite(data);
  data.sparsity = measure_sparsity(data.values);
  data.identity = file_identity("idx", path, bytes);
  return data;
}

std::vector<int64_t> labels_from_spec(const std::string& spec, nlohmann::json& identity) {
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon), path = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (path.empty()) throw InputError("--labels '" + spec + "': expected npy:PATH, idx:PATH or csv:PATH[:label=COL]");
  if (kind == "npy") {
    const std::string bytes = read_bytes(path);
    identity = file_identity("npy", path, bytes);
    return npy_labels(path, bytes);
  }
  if (kind == "idx") {
    const std::string bytes = read_bytes(path);
    IdxArray array = read_idx(path, bytes);
    if (array.dims.size() != 1) throw InputError("'" + path + "': IDX labels must be 1-D");
    identity = file_identity("idx", path, bytes);
    std::vector<int64_t> labels(array.values.size());
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = whole_label(array.values[i], "'" + path + "'");
    return labels;
  }
  if (kind == "csv") {
    CsvSpec csv = parse_csv_spec(spec);
    if (csv.options.label_column < 0) csv.options.label_column = 0;  // a one-column file
    identity = {{"kind", "file"}, {"format", "csv"}, {"path", csv.path}, {"label_column", csv.options.label_column}};
    return csv_column_labels(csv, spec);
  }
  throw InputError("--labels '" + spec + "': expected npy:PATH, idx:PATH or csv:PATH[:label=COL]");
}

}  // namespace

LabelledFiles load_labelled_files(const std::string& data_spec, const std::string& labels_spec, uint64_t seed) {
  LabelledFiles out;
  const bool csv = data_spec.rfind("csv:", 0) == 0;
  if (data_spec.rfind("idx:", 0) == 0) out.data = idx_data(data_spec.substr(4));
  else out.data = load_dataset_spec(data_spec, 0, 0, seed);
  if (!labels_spec.empty()) {
    out.labels = labels_from_spec(labels_spec, out.labels_identity);
  } else {
    const CsvSpec spec = csv ? parse_csv_spec(data_spec) : CsvSpec{};
    if (!csv || spec.options.label_column < 0)
      throw InputError("dataset '" + data_spec + "' has no labels: give --labels (npy:PATH, idx:PATH or csv:PATH), "
                       "or a csv dataset with :label=COL");
    out.labels = csv_column_labels(spec, data_spec);
    out.labels_identity = {{"kind", "file"}, {"format", "csv"}, {"path", spec.path},
                           {"label_column", spec.options.label_column}};
  }
  if (int64_t(out.labels.size()) != out.data.m)
    throw InputError("labels '" + (labels_spec.empty() ? data_spec : labels_spec) + "' hold " +
                     std::to_string(out.labels.size()) + " labels, but dataset '" + data_spec + "' has " +
                     std::to_string(out.data.m) + " rows");
  return out;
}

}  // namespace mk::explore
