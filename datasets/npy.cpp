// NumPy .npy reader/writer for the one array type mkbench consumes: 2-D float32
// little-endian. Anything else is refused with the conversion the user needs, because a
// silently reinterpreted dtype or byte order would still "run" and produce garbage timings.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <unistd.h>

#include "datasets/dataset.hpp"
#include "datasets/sha256.hpp"
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

// Reads into `destination` in slices so the hash is computed during the one pass over disk.
void read_hashed(std::ifstream& in, char* destination, size_t bytes, Sha256& hash, const std::string& path) {
  constexpr size_t kSlice = size_t(64) << 20;
  for (size_t done = 0; done < bytes;) {
    size_t take = std::min(kSlice, bytes - done);
    in.read(destination + done, static_cast<std::streamsize>(take));
    if (static_cast<size_t>(in.gcount()) != take)
      throw InputError(path + ": read failed after " + std::to_string(done + in.gcount()) + " data bytes");
    hash.update(destination + done, take);
    done += take;
  }
}

}  // namespace

Dataset load_npy(const std::string& path) {
  std::error_code error;
  const uintmax_t file_bytes = std::filesystem::file_size(path, error);
  std::ifstream in(path, std::ios::binary);
  if (error || !in) throw InputError("cannot open '" + path + "': " + (error ? error.message() : std::strerror(errno)));

  unsigned char preamble[12] = {};
  if (file_bytes < 10) throw InputError(path + ": too short to be a .npy file (" + std::to_string(file_bytes) + " bytes)");
  in.read(reinterpret_cast<char*>(preamble), 10);
  if (std::memcmp(preamble, kMagic, kMagicBytes) != 0)
    throw InputError(path + ": not a .npy file (the magic bytes \\x93NUMPY are missing)");
  const int major = preamble[6], minor = preamble[7];
  size_t preamble_bytes;
  uint32_t header_bytes;
  if (major == 1) {
    preamble_bytes = 10;
    header_bytes = little_endian(preamble + 8, 2);
  } else if (major == 2 || major == 3) {
    preamble_bytes = 12;
    if (file_bytes < 12) throw InputError(path + ": truncated .npy preamble");
    in.read(reinterpret_cast<char*>(preamble + 10), 2);
    header_bytes = little_endian(preamble + 8, 4);
  } else {
    throw InputError(path + ": unsupported .npy format version " + std::to_string(major) + "." +
                     std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  }
  if (preamble_bytes + header_bytes > file_bytes)
    throw InputError(path + ": truncated: the .npy header claims " + std::to_string(header_bytes) +
                     " bytes but the file has only " + std::to_string(file_bytes));
  std::string header_text(header_bytes, '\0');
  in.read(header_text.data(), header_bytes);
  Sha256 hash;
  hash.update(preamble, preamble_bytes);
  hash.update(header_text.data(), header_text.size());
  while (!header_text.empty() && (header_text.back() == '\n' || header_text.back() == ' ' || header_text.back() == '\0'))
    header_text.pop_back();

  NpyHeader header = HeaderParser(path, header_text).parse();
  if (header.descr != "<f4") {
    std::string hint = header.descr == ">f4" ? " (big-endian float32: convert with arr.astype('<f4'))"
                                             : " (convert with arr.astype(np.float32))";
    throw InputError(path + ": unsupported dtype '" + header.descr +
                     "': mkbench reads little-endian float32 ('<f4') only" + hint);
  }
  if (header.shape.size() != 2)
    throw InputError(path + ": the array has shape " + shape_text(header.shape) + " with " +
                     std::to_string(header.shape.size()) + " dimension(s); expected a 2-D (points, dims) array");
  const int64_t m = header.shape[0], n = header.shape[1];
  if (m < 1 || n < 1) throw InputError(path + ": the array " + shape_text(header.shape) + " is empty");
  if (n > std::numeric_limits<int>::max() ||
      static_cast<uint64_t>(m) > std::numeric_limits<size_t>::max() / sizeof(float) / static_cast<uint64_t>(n))
    throw InputError(path + ": shape " + shape_text(header.shape) + " is too large");
  const uintmax_t data_offset = preamble_bytes + header_bytes;
  const uintmax_t data_bytes = static_cast<uintmax_t>(m) * n * sizeof(float);
  if (file_bytes < data_offset + data_bytes)
    throw InputError(path + ": truncated: shape " + shape_text(header.shape) + " needs " +
                     std::to_string(data_bytes) + " bytes of float32 data but the file holds only " +
                     std::to_string(file_bytes - data_offset));
  if (file_bytes > data_offset + data_bytes)
    throw InputError(path + ": " + std::to_string(file_bytes - data_offset - data_bytes) +
                     " unexpected bytes after the " + shape_text(header.shape) + " array");

  Dataset data;
  data.m = m;
  data.n = static_cast<int>(n);
  data.values.resize(static_cast<size_t>(m) * n);
  if (!header.fortran_order) {
    read_hashed(in, reinterpret_cast<char*>(data.values.data()), data_bytes, hash, path);
  } else {
    std::vector<float> column_major(data.values.size());
    read_hashed(in, reinterpret_cast<char*>(column_major.data()), data_bytes, hash, path);
    float* values = data.values.data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t d = 0; d < n; ++d) values[i * n + d] = column_major[d * m + i];
  }
  check_finite(data);
  data.sparsity = measure_sparsity(data.values);
  data.identity = {{"kind", "file"},
                   {"format", "npy"},
                   {"path", path},
                   {"bytes", file_bytes},
                   {"sha256", hash.hex_digest()}};
  return data;
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
