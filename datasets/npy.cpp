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
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>

#include "datasets/byte_source.hpp"
#include "datasets/dataset.hpp"
#include "datasets/digest.hpp"
#include "datasets/mapped_file.hpp"
#include "core/errors.hpp"
#include "core/special_output.hpp"

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

// What the one pass over a point file found.
struct PointScan {
  std::string digest;                                        // the whole file's identity
  int64_t first_bad = std::numeric_limits<int64_t>::max();  // first NaN/Inf, in file order
  int64_t zeros = 0;
};

// Bytes hashed, checked and copied at a time: small enough that the check and the copy read
// them from cache after the hash has brought them in, so the file is read from memory once.
constexpr size_t kScanPiece = size_t(64) << 10;

// One pass over a whole .npy file's bytes on all cores: every digest block (datasets/digest.hpp)
// is hashed piece by piece, and the float32 elements starting in each piece are checked for
// NaN/Inf, counted when zero and, when `destination` is given, copied into it row-major (a
// Fortran-order file is transposed on the way). `offset` is where the m × n elements start.
PointScan scan_points(std::string_view bytes, size_t offset, int64_t m, int n, bool fortran_order,
                      float* destination) {
  const size_t size = bytes.size();
  const size_t elements = size_t(m) * size_t(n);
  const auto* base = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t blocks = (size + kDigestBlockBytes - 1) / kDigestBlockBytes;
  std::vector<Digest128> digests(blocks);
  int64_t first_bad = std::numeric_limits<int64_t>::max();
  int64_t zeros = 0;
#pragma omp parallel reduction(min : first_bad) reduction(+ : zeros)
  {
    BlockHasher hasher;
#pragma omp for schedule(dynamic, 1)
    for (int64_t b = 0; b < int64_t(blocks); ++b) {
      hasher.reset();
      const size_t block_end = std::min(size, (size_t(b) + 1) * kDigestBlockBytes);
      for (size_t piece = size_t(b) * kDigestBlockBytes; piece < block_end; piece += kScanPiece) {
        const size_t piece_end = std::min(block_end, piece + kScanPiece);
        hasher.update(base + piece, piece_end - piece);
        if (piece_end <= offset) continue;
        // The elements that start in this piece (one may end in the next: it is mapped too).
        const size_t first = piece <= offset ? 0 : (piece - offset + 3) / 4;
        const size_t last = std::min(elements, (piece_end - offset + 3) / 4);
        if (first >= last) continue;
        const unsigned char* source = base + offset + 4 * first;
        const size_t count = last - first;
        int64_t piece_zeros = 0;
        bool any_bad = false;
        for (size_t i = 0; i < count; ++i) {
          uint32_t bits;
          std::memcpy(&bits, source + 4 * i, 4);
          piece_zeros += (bits << 1) == 0;                        // +0 and -0
          any_bad |= (bits & 0x7f800000u) == 0x7f800000u;         // exponent all ones: Inf or NaN
        }
        zeros += piece_zeros;
        if (any_bad)
          for (size_t i = 0; i < count; ++i) {
            uint32_t bits;
            std::memcpy(&bits, source + 4 * i, 4);
            if ((bits & 0x7f800000u) == 0x7f800000u) {
              first_bad = std::min(first_bad, int64_t(first + i));
              break;
            }
          }
        if (!destination) continue;
        if (!fortran_order) {
          std::memcpy(destination + first, source, 4 * count);
        } else {
          // Element e of a Fortran-order file is column e / m, row e % m.
          size_t column = first / size_t(m), row = first % size_t(m);
          for (size_t i = 0; i < count; ++i) {
            std::memcpy(destination + row * size_t(n) + column, source + 4 * i, 4);
            if (++row == size_t(m)) row = 0, ++column;
          }
        }
      }
      digests[size_t(b)] = hasher.digest();
    }
  }
  return {combine_block_digests(digests), first_bad, zeros};
}

// A whole .npy point file in memory (a mapping or a buffer), checked in one pass. Copied into
// `values` unless `keep_in_place`: then the points stay where they are (row-major in place,
// which needs C order and 4-byte alignment) and the caller keeps the bytes alive.
Dataset points_from_bytes(std::string_view bytes, const std::string& origin, bool keep_in_place) {
  MemorySource source(bytes, origin);
  const NpyHeader header = read_header(source);
  const DataShape shape = points_shape(source, header);
  const uintmax_t data_bytes = checked_data_bytes(source, header, sizeof(float));
  const size_t offset = bytes.size() - size_t(source.most_remaining());
  MemorySource tail(bytes.substr(offset + size_t(data_bytes)), origin);
  tail.expect_end("the " + shape_text(header.shape) + " array");
  if (keep_in_place && header.fortran_order)
    throw InputError(origin + ": the array is in Fortran order; streaming it from the file needs C order "
                              "(rewrite it with np.save(path, np.ascontiguousarray(arr)))");
  if (keep_in_place && (offset % alignof(float) != 0 || reinterpret_cast<uintptr_t>(bytes.data()) % alignof(float) != 0))
    throw InputError(origin + ": its data starts at byte " + std::to_string(offset) +
                     ", not a multiple of 4, so it cannot be read in place (np.save writes aligned files)");

  Dataset data;
  data.m = shape.m;
  data.n = shape.n;
  if (!keep_in_place) {
    try {
      data.values.resize(size_t(shape.m) * size_t(shape.n));
    } catch (const std::bad_alloc&) {
      throw InputError(origin + ": cannot allocate " + std::to_string(double(data_bytes) / double(1 << 30)) +
                       " GiB of host memory for its " + shape_text(header.shape) + " array");
    }
  }
  const PointScan scan = scan_points(bytes, offset, shape.m, shape.n, header.fortran_order,
                                     keep_in_place ? nullptr : data.values.data());
  if (keep_in_place) data.mapped_rows = reinterpret_cast<const float*>(bytes.data() + offset);
  if (scan.first_bad != std::numeric_limits<int64_t>::max()) {
    const int64_t e = scan.first_bad;
    const int64_t row = header.fortran_order ? e % shape.m : e / shape.n;
    const int64_t column = header.fortran_order ? e / shape.m : e % shape.n;
    float bad;
    std::memcpy(&bad, bytes.data() + offset + 4 * size_t(e), 4);
    const char* what = std::isnan(bad) ? "NaN" : (bad > 0 ? "Inf" : "-Inf");
    throw InputError(origin + ": dataset contains " + what + " at row " + std::to_string(row) + ", column " +
                     std::to_string(column));
  }
  data.finite_checked = true;
  data.sparsity = double(scan.zeros) / double(size_t(shape.m) * size_t(shape.n));
  data.identity = {{"kind", "file"}, {"format", "npy"}, {"bytes", bytes.size()}, {kIdentityDigestKey, scan.digest}};
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

// Points from the mapped file: copied (in_place false) or left there.
Dataset load_npy_points(const std::string& path, bool in_place) {
  auto file = std::make_shared<const MappedFile>(path);
  const std::string_view bytes(reinterpret_cast<const char*>(file->data()), file->size());
  Dataset data = points_from_bytes(bytes, path, in_place);
  data.identity["path"] = path;
  if (in_place) data.mapping = file;
  return data;
}

}  // namespace

Dataset load_npy(const std::string& path) { return load_npy_points(path, /*in_place=*/false); }
Dataset load_npy_mapped(const std::string& path) { return load_npy_points(path, /*in_place=*/true); }
Labels load_npy_labels(const std::string& path) { return read_file<Labels>(path, read_label_vector); }

Dataset parse_npy(std::string_view bytes, const std::string& origin) {
  return points_from_bytes(bytes, origin, /*in_place=*/false);
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

  if (is_special_output(path)) {  // /dev/null, a FIFO: in place (core/special_output.hpp)
    std::string bytes(reinterpret_cast<const char*>(preamble), preamble_bytes);
    bytes += header;
    bytes.append(reinterpret_cast<const char*>(data.values.data()), data.values.size() * sizeof(float));
    return write_special_output(path, bytes.data(), bytes.size());
  }
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
