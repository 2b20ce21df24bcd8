// NumPy .npy reader/writer for the one point-array type mkbench consumes, 2-D float32
// little-endian, and for label vectors (1-D integers). Anything else is refused with the
// conversion the user needs, because a silently reinterpreted dtype or byte order would
// still "run" and produce garbage timings.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>

#include "datasets/byte_source.hpp"
#include "datasets/dataset.hpp"
#include "core/errors.hpp"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .npy loader copies '<f4' bytes straight into floats and needs a little-endian host"
#endif

namespace mk {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  bool has_descr = false, has_fortran_order = false, has_shape = false;
  std::vector<int64_t> shape;
};

// The header is a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (1000, 8), }
// Only the three keys NumPy writes are interpreted; others are skipped if simple.
class HeaderParser {
 public:
  HeaderParser(const std::string& path, const std::string& text) : path_(path), text_(text) {}

  NpyHeader parse() {
    NpyHeader header;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') { ++pos_; break; }
      std::string key = parse_string();
      expect(':');
      skip_space();
      if (key == "descr") {
        header.descr = parse_string();
        header.has_descr = true;
      } else if (key == "fortran_order") {
        header.fortran_order = parse_bool();
        header.has_fortran_order = true;
      } else if (key == "shape") {
        header.shape = parse_tuple();
        header.has_shape = true;
      } else {
        skip_value();
      }
      skip_space();
      if (peek() == ',') { ++pos_; continue; }
      if (peek() == '}') { ++pos_; break; }
      fail("expected ',' or '}' after the value of '" + key + "'");
    }
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the closing '}'");
    if (!header.has_descr) fail("the header has no 'descr' entry");
    if (!header.has_fortran_order) fail("the header has no 'fortran_order' entry");
    if (!header.has_shape) fail("the header has no 'shape' entry");
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw InputError(path_ + ": cannot parse the .npy header (" + problem + ") in: " + text_);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  void expect(char wanted) {
    skip_space();
    if (peek() != wanted) fail(std::string("expected '") + wanted + "'");
    ++pos_;
  }
  std::string parse_string() {
    skip_space();
    char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    size_t close = text_.find(quote, pos_ + 1);
    if (close == std::string::npos) fail("unterminated string");
    std::string value = text_.substr(pos_ + 1, close - pos_ - 1);
    pos_ = close + 1;
    return value;
  }
  bool parse_bool() {
    if (text_.compare(pos_, 4, "True") == 0) { pos_ += 4; return true; }
    if (text_.compare(pos_, 5, "False") == 0) { pos_ += 5; return false; }
    fail("expected True or False for 'fortran_order'");
  }
  int64_t parse_integer() {
    skip_space();
    size_t start = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      if (value > (std::numeric_limits<int64_t>::max() - 9) / 10) fail("dimension too large");
      value = value * 10 + (text_[pos_++] - '0');
    }
    if (pos_ == start) fail("expected a non-negative integer in 'shape'");
    if (peek() == 'L') ++pos_;  // Python 2 long suffix in old files
    return value;
  }
  std::vector<int64_t> parse_tuple() {
    expect('(');
    std::vector<int64_t> values;
    while (true) {
      skip_space();
      if (peek() == ')') { ++pos_; return values; }
      values.push_back(parse_integer());
      skip_space();
      if (peek() == ',') { ++pos_; continue; }
      if (peek() == ')') { ++pos_; return values; }
      fail("expected ',' or ')' in 'shape'");
    }
  }
  void skip_value() {
    char c = peek();
    if (c == '\'' || c == '"') { parse_string(); return; }
    if (c == '(') { parse_tuple(); return; }
    while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '}') ++pos_;
  }

  const std::string& path_;
  const std::string& text_;
  size_t pos_ = 0;
};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

uint32_t little_endian(const unsigned char* bytes, int count) {
  uint32_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = value << 8 | bytes[i];
  return value;
}

// The preamble and the header dict; the source is left at the first data byte.
NpyHeader read_header(ByteSource& source) {
  unsigned char preamble[12] = {};
  size_t got = 0;
  while (got < 10) {
    const size_t more = source.read(preamble + got, 10 - got);
    if (more == 0) break;
    got += more;
  }
  if (got < 10) throw InputError(source.origin() + ": too short to be a .npy file (" + std::to_string(got) + " bytes)");
  if (std::memcmp(preamble, kMagic, kMagicBytes) != 0)
    throw InputError(source.origin() + ": not a .npy file (the magic bytes \\x93NUMPY are missing)");
  const int major = preamble[6], minor = preamble[7];
  uint32_t header_bytes;
  if (major == 1) {
    header_bytes = little_endian(preamble + 8, 2);
  } else if (major == 2 || major == 3) {
    source.read_exact(preamble + 10, 2, "the .npy preamble");
    header_bytes = little_endian(preamble + 8, 4);
  } else {
    throw InputError(source.origin() + ": unsupported .npy format version " + std::to_string(major) + "." +
                     std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  }
  if (header_bytes > source.most_remaining())
    throw InputError(source.origin() + ": truncated: the .npy header claims " + std::to_string(header_bytes) +
                     " bytes but only " + std::to_string(source.most_remaining()) + " follow");
  std::string header_text(header_bytes, '\0');
  source.read_exact(header_text.data(), header_bytes, "the .npy header");
  while (!header_text.empty() && (header_text.back() == '\n' || header_text.back() == ' ' || header_text.back() == '\0'))
    header_text.pop_back();
  return HeaderParser(source.origin(), header_text).parse();
}

// Refuses shapes whose byte count cannot be addressed, and data the source cannot hold.
uintmax_t checked_data_bytes(ByteSource& source, const NpyHeader& header, size_t item_bytes) {
  uint64_t elements = 1;
  for (int64_t size : header.shape)
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(size), &elements) ||
        elements > std::numeric_limits<size_t>::max() / 8)
      throw InputError(source.origin() + ": shape " + shape_text(header.shape) + " is too large");
  const uintmax_t data_bytes = elements * item_bytes;
  if (source.most_remaining() < data_bytes)
    throw InputError(source.origin() + ": truncated: shape " + shape_text(header.shape) + " needs " +
                     std::to_string(data_bytes) + " bytes of " + header.descr +
                     " data but the file holds only " + std::to_string(source.most_remaining()));
  return data_bytes;
}

// A point set is a non-empty 2-D little-endian float32 array.
DataShape points_shape(const ByteSource& source, const NpyHeader& header) {
  if (header.descr != "<f4") {
    std::string hint = header.descr == ">f4" ? " (big-endian float32: convert with arr.astype('<f4'))"
                                             : " (convert with arr.astype(np.float32))";
    throw InputError(source.origin() + ": unsupported dtype '" + header.descr +
                     "': mkbench reads little-endian float32 ('<f4') only" + hint);
  }
  if (header.shape.size() != 2)
    throw InputError(source.origin() + ": the array has shape " + shape_text(header.shape) + " with " +
                     std::to_string(header.shape.size()) + " dimension(s); expected a 2-D (points, dims) array");
  const int64_t m = header.shape[0], n = header.shape[1];
  if (m < 1 || n < 1) throw InputError(source.origin() + ": the array " + shape_text(header.shape) + " is empty");
  if (n > std::numeric_limits<int>::max())
    throw InputError(source.origin() + ": shape " + shape_text(header.shape) + " is too large");
  return {m, static_cast<int>(n)};
}

Dataset read_points(ByteSource& source) {
  const NpyHeader header = read_header(source);
  const DataShape shape = points_shape(source, header);
  const int64_t m = shape.m, n = shape.n;
  const uintmax_t data_bytes = checked_data_bytes(source, header, sizeof(float));

  Dataset data;
  data.m = m;
  data.n = static_cast<int>(n);
  data.values.resize(static_cast<size_t>(m) * n);
  const std::string what = "the " + shape_text(header.shape) + " float32 array";
  if (!header.fortran_order) {
    source.read_exact(data.values.data(), data_bytes, what);
  } else {
    std::vector<float> column_major(data.values.size());
    source.read_exact(column_major.data(), data_bytes, what);
    float* values = data.values.data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t d = 0; d < n; ++d) values[i * n + d] = column_major[d * m + i];
  }
  source.expect_end("the " + shape_text(header.shape) + " array");
  check_finite(data);
  data.sparsity = measure_sparsity(data.values);
  data.identity = {{"kind", "file"}, {"format", "npy"}};
  return data;
}

// Label dtypes: NumPy's integer codes (any byte-order mark that means little-endian here),
// and float32/float64 whose values are whole numbers (a float column of class ids).
struct LabelType {
  char kind = 0;  // 'i', 'u', 'f'
  size_t bytes = 0;
};

std::optional<LabelType> label_type(const std::string& descr) {
  if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '=')) return std::nullopt;
  const char kind = descr[1];
  const std::string width = descr.substr(2);
  if ((kind == 'i' || kind == 'u') && (width == "1" || width == "2" || width == "4" || width == "8"))
    return LabelType{kind, static_cast<size_t>(std::stoi(width))};
  if (kind == 'f' && (width == "4" || width == "8")) return LabelType{kind, static_cast<size_t>(std::stoi(width))};
  return std::nullopt;
}

Labels read_label_vector(ByteSource& source) {
  const NpyHeader header = read_header(source);
  const auto type = label_type(header.descr);
  if (!type)
    throw InputError(source.origin() + ": unsupported labels dtype '" + header.descr +
                     "': labels must be little-endian integers (or whole-valued floats); convert with "
                     "arr.astype(np.int32)");
  const bool column = header.shape.size() == 2 && header.shape[1] == 1;
  if (header.shape.size() != 1 && !column)
    throw InputError(source.origin() + ": a labels array must be 1-D (or one column), but its shape is " +
                     shape_text(header.shape));
  const uintmax_t data_bytes = checked_data_bytes(source, header, type->bytes);
  const size_t count = static_cast<size_t>(header.shape[0]);
  std::vector<unsigned char> raw(static_cast<size_t>(data_bytes));
  source.read_exact(raw.data(), raw.size(), "the " + shape_text(header.shape) + " labels array");
  source.expect_end("the " + shape_text(header.shape) + " labels array");

  Labels labels;
  labels.values.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const unsigned char* b = raw.data() + i * type->bytes;
    std::string text;  // the value as read, for the message
    bool fits = false;
    int64_t whole = 0;
    if (type->kind == 'f') {
      double value;
      if (type->bytes == 4) {
        float f;
        std::memcpy(&f, b, 4);
        value = f;
      } else {
        std::memcpy(&value, b, 8);
      }
      fits = value >= std::numeric_limits<int32_t>::min() && value <= std::numeric_limits<int32_t>::max() &&
             value == std::floor(value);
      if (fits) whole = static_cast<int64_t>(value);
      std::ostringstream shown;
      shown << value;
      text = shown.str();
    } else {
      uint64_t bits = 0;
      for (size_t k = type->bytes; k-- > 0;) bits = bits << 8 | b[k];
      if (type->kind == 'i' && type->bytes < 8 && (bits >> (8 * type->bytes - 1)) & 1)
        bits |= ~uint64_t(0) << (8 * type->bytes);  // sign-extend
      if (type->kind == 'u') {
        fits = bits <= uint64_t(std::numeric_limits<int32_t>::max());
        text = std::to_string(bits);
      } else {
        whole = static_cast<int64_t>(bits);
        fits = whole >= std::numeric_limits<int32_t>::min() && whole <= std::numeric_limits<int32_t>::max();
        text = std::to_string(whole);
      }
      if (fits && type->kind == 'u') whole = static_cast<int64_t>(bits);
    }
    if (!fits)
      throw InputError(source.origin() + ": label " + std::to_string(i) + " is " + text +
                       ": labels must be whole numbers that fit in 32 bits");
    labels.values[i] = static_cast<int32_t>(whole);
  }
  labels.identity = {{"kind", "file"}, {"format", "npy"}, {"dtype", header.descr}};
  return labels;
}

template <typename Result, typename Read>
Result read_file(const std::string& path, Read read) {
  FileSource file(path);
  Result result = read(file);
  result.identity["path"] = path;
  result.identity["bytes"] = file.size();
  result.identity[kIdentityDigestKey] = file.digest_of_whole_file();
  return result;
}

}  // namespace

Dataset load_npy(const std::string& path) { return read_file<Dataset>(path, read_points); }
Labels load_npy_labels(const std::string& path) { return read_file<Labels>(path, read_label_vector); }

Dataset parse_npy(std::string_view bytes, const std::string& origin) {
  MemorySource source(bytes, origin);
  return read_points(source);
}

Labels parse_npy_labels(std::string_view bytes, const std::string& origin) {
  MemorySource source(bytes, origin);
  return read_label_vector(source);
}

DataShape npy_shape(const std::string& path) {
  FileSource file(path);
  return points_shape(file, read_header(file));
}

void save_npy(const std::string& path, const Dataset& data) {
  if (data.m < 1 || data.n < 1 || data.values.size() != static_cast<size_t>(data.m) * data.n)
    throw InputError("cannot save '" + path + "': dataset is empty or its size does not match " +
                     std::to_string(data.m) + " x " + std::to_string(data.n));
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(data.m) +
                       ", " + std::to_string(data.n) + "), }";
  // NumPy aligns the data start to 64 bytes; the header ends with '\n'.
  const size_t preamble_bytes = 10;
  while ((preamble_bytes + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  unsigned char preamble[preamble_bytes] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                            static_cast<unsigned char>(header.size() & 0xff),
                                            static_cast<unsigned char>(header.size() >> 8)};

  // Written beside the target and renamed, so a reader never sees half a file.
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError("cannot write '" + temporary + "': " + std::strerror(errno));
    out.write(reinterpret_cast<const char*>(preamble), preamble_bytes);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(reinterpret_cast<const char*>(data.values.data()),
              static_cast<std::streamsize>(data.values.size() * sizeof(float)));
    out.close();
    if (!out) {
      std::remove(temporary.c_str());
      throw InputError("error while writing '" + temporary + "'");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    int saved = errno;
    std::remove(temporary.c_str());
    throw InputError("cannot rename '" + temporary + "' to '" + path + "': " + std::strerror(saved));
  }
}

}  // namespace mk
