// IDX reader (the format MNIST and Fashion-MNIST ship in), plain or gzipped. The layout:
// two zero bytes, an element-type byte, a dimension-count byte, one big-endian uint32 per
// dimension, then the elements, big-endian, row-major. A file of D >= 2 dimensions is a
// point set of M = dim0 points with N = dim1 * ... * dim(D-1) features (an R x C image
// flattens to R*C); a 1-D file is a label vector. Every malformed input is an InputError
// that names what is wrong, because a misread file still "runs" and times garbage.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "datasets/byte_source.hpp"
#include "datasets/dataset.hpp"
#include "core/errors.hpp"

namespace mk {
namespace {

enum class IdxType : unsigned char { UByte = 0x08, SByte = 0x09, Short = 0x0B, Int = 0x0C, Float = 0x0D, Double = 0x0E };

struct IdxHeader {
  IdxType type = IdxType::UByte;
  std::vector<uint32_t> dims;
  uint64_t elements = 0;  // product of dims
  int element_bytes = 1;
};

const char* type_name(IdxType type) {
  switch (type) {
    case IdxType::UByte: return "unsigned byte";
    case IdxType::SByte: return "signed byte";
    case IdxType::Short: return "short";
    case IdxType::Int: return "int";
    case IdxType::Float: return "float";
    case IdxType::Double: return "double";
  }
  return "?";
}

std::string shape_text(const std::vector<uint32_t>& dims) {
  std::string text;
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? " x " : "") + std::to_string(dims[i]);
  return text;
}

std::string hex_byte(unsigned char byte) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", byte);
  return text;
}

IdxHeader read_header(ByteSource& source) {
  unsigned char magic[4] = {};
  size_t got = 0;
  while (got < 4) {
    const size_t more = source.read(magic + got, 4 - got);
    if (more == 0) break;
    got += more;
  }
  if (got < 4)
    throw InputError(source.origin() + ": too short to be an IDX file (" + std::to_string(got) +
                     " bytes; an IDX file starts with a 4-byte magic number)");
  if (magic[0] != 0 || magic[1] != 0)
    throw InputError(source.origin() + ": not an IDX file: its magic number starts with " + hex_byte(magic[0]) + " " +
                     hex_byte(magic[1]) + ", not 0x00 0x00");
  IdxHeader header;
  switch (magic[2]) {
    case 0x08: header.type = IdxType::UByte; header.element_bytes = 1; break;
    case 0x09: header.type = IdxType::SByte; header.element_bytes = 1; break;
    case 0x0B: header.type = IdxType::Short; header.element_bytes = 2; break;
    case 0x0C: header.type = IdxType::Int; header.element_bytes = 4; break;
    case 0x0D: header.type = IdxType::Float; header.element_bytes = 4; break;
    case 0x0E: header.type = IdxType::Double; header.element_bytes = 8; break;
    default:
      throw InputError(source.origin() + ": not an IDX file: element type " + hex_byte(magic[2]) +
                       " is not one of 0x08 (unsigned byte), 0x09 (signed byte), 0x0b (short), 0x0c (int), "
                       "0x0d (float), 0x0e (double)");
  }
  const int count = magic[3];
  if (count == 0) throw InputError(source.origin() + ": the IDX header declares 0 dimensions");
  std::vector<unsigned char> raw(size_t(count) * 4);
  source.read_exact(raw.data(), raw.size(), "the IDX header's " + std::to_string(count) + " dimension sizes");
  header.elements = 1;
  for (int i = 0; i < count; ++i) {
    const unsigned char* b = raw.data() + 4 * i;
    const uint32_t size = uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | uint32_t(b[3]);
    header.dims.push_back(size);
  }
  for (uint32_t size : header.dims) {
    if (size == 0) throw InputError(source.origin() + ": the IDX array " + shape_text(header.dims) + " is empty");
    if (__builtin_mul_overflow(header.elements, uint64_t(size), &header.elements))
      throw InputError(source.origin() + ": the IDX sizes " + shape_text(header.dims) + " overflow 64 bits");
  }
  uint64_t payload = 0;
  if (__builtin_mul_overflow(header.elements, uint64_t(header.element_bytes), &payload) ||
      payload > std::numeric_limits<size_t>::max() / 8)
    throw InputError(source.origin() + ": the IDX sizes " + shape_text(header.dims) + " are too large");
  // Checked before anything is allocated: a short file cannot claim a huge array.
  if (payload > source.most_remaining())
    throw InputError(source.origin() + ": truncated: the IDX header describes " + shape_text(header.dims) + " " +
                     type_name(header.type) + " elements (" + std::to_string(payload) + " bytes), but " +
                     (source.size_is_exact() ? "only " + std::to_string(source.most_remaining()) + " bytes follow"
                                             : "the compressed stream is too short to hold them"));
  return header;
}

// Big-endian element `i` of `bytes` as a double (exact for every IDX type).
double element_at(IdxType type, const unsigned char* b) {
  switch (type) {
    case IdxType::UByte: return b[0];
    case IdxType::SByte: return static_cast<signed char>(b[0]);
    case IdxType::Short: return static_cast<int16_t>(uint16_t(b[0]) << 8 | b[1]);
    case IdxType::Int:
      return static_cast<int32_t>(uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | b[3]);
    case IdxType::Float: {
      const uint32_t bits = uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | b[3];
      float value;
      std::memcpy(&value, &bits, 4);
      return value;
    }
    case IdxType::Double: {
      uint64_t bits = 0;
      for (int k = 0; k < 8; ++k) bits = bits << 8 | b[k];
      double value;
      std::memcpy(&value, &bits, 8);
      return value;
    }
  }
  return 0;
}

// Streams the elements in slices, handing each (index, value) to `store`.
template <typename Store>
void read_elements(ByteSource& source, const IdxHeader& header, Store store) {
  constexpr uint64_t kSliceBytes = uint64_t(4) << 20;
  const size_t per_slice = static_cast<size_t>(std::min(kSliceBytes / header.element_bytes, header.elements));
  std::vector<unsigned char> slice(per_slice * header.element_bytes);
  for (uint64_t done = 0; done < header.elements;) {
    const size_t take = static_cast<size_t>(std::min<uint64_t>(per_slice, header.elements - done));
    source.read_exact(slice.data(), take * header.element_bytes,
                      "the IDX array " + shape_text(header.dims) + " (element " + std::to_string(done) + " on)");
    for (size_t i = 0; i < take; ++i) store(done + i, element_at(header.type, slice.data() + i * header.element_bytes));
    done += take;
  }
}

PointValues allocate_values(const std::string& origin, uint64_t count) {
  try {
    return PointValues(static_cast<size_t>(count));
  } catch (const std::bad_alloc&) {
    throw InputError(origin + ": not enough host memory for " + std::to_string(count) + " float32 values");
  }
}

// A point set's shape: dim0 points of dim1 * ... * dim(D-1) features.
DataShape points_shape(const IdxHeader& header, const std::string& origin) {
  if (header.dims.size() == 1)
    throw InputError(origin + ": this IDX file is 1-D (" + std::to_string(header.dims[0]) +
                     " values): a label vector, not points; give it as a labels file (idx:PATH)");
  const uint64_t n = header.elements / header.dims[0];
  if (n > uint64_t(std::numeric_limits<int>::max()))
    throw InputError(origin + ": " + std::to_string(n) + " features per point (" + shape_text(header.dims) +
                     ") is more than mkbench's limit of " + std::to_string(std::numeric_limits<int>::max()));
  return {static_cast<int64_t>(header.dims[0]), static_cast<int>(n)};
}

Dataset parse_idx_points(ByteSource& source) {
  const IdxHeader header = read_header(source);
  const DataShape shape = points_shape(header, source.origin());
  const uint64_t n = static_cast<uint64_t>(shape.n);
  Dataset data;
  data.m = shape.m;
  data.n = shape.n;
  data.values = allocate_values(source.origin(), header.elements);
  float* values = data.values.data();
  const std::string& origin = source.origin();
  read_elements(source, header, [&](uint64_t i, double value) {
    if (std::isfinite(value) && std::fabs(value) > std::numeric_limits<float>::max())
      throw InputError(origin + ": the value " + std::to_string(value) + " at row " + std::to_string(i / n) +
                       ", column " + std::to_string(i % n) + " is outside the float32 range");
    values[i] = static_cast<float>(value);
  });
  source.expect_end("the IDX array " + shape_text(header.dims));
  check_values_finite(data);  // the scale check is the command's (check_finite): a reader decodes any finite value
  data.sparsity = measure_sparsity(data.values);
  data.identity = {{"kind", "file"}, {"format", "idx"}, {"element", type_name(header.type)},
                   {"shape", header.dims}};
  return data;
}

Labels parse_idx_label_vector(ByteSource& source) {
  const IdxHeader header = read_header(source);
  if (header.dims.size() != 1)
    throw InputError(source.origin() + ": a labels file must be a 1-D IDX vector, but this one is " +
                     shape_text(header.dims) + " (" + std::to_string(header.dims.size()) + " dimensions)");
  if (header.type == IdxType::Float || header.type == IdxType::Double)
    throw InputError(source.origin() + ": labels must be integers, but this IDX vector holds " +
                     type_name(header.type) + " values");
  Labels labels;
  try {
    labels.values.resize(header.dims[0]);
  } catch (const std::bad_alloc&) {
    throw InputError(source.origin() + ": not enough host memory for " + std::to_string(header.dims[0]) + " labels");
  }
  read_elements(source, header, [&](uint64_t i, double value) { labels.values[i] = static_cast<int32_t>(value); });
  source.expect_end("the IDX label vector of " + std::to_string(header.dims[0]));
  labels.identity = {{"kind", "file"}, {"format", "idx"}, {"element", type_name(header.type)},
                     {"shape", header.dims}};
  return labels;
}

// The file's bytes, inflated when they start with the gzip magic.
struct OpenedFile {
  explicit OpenedFile(const std::string& path) : file(path) {
    char first[2] = {};
    std::ifstream peek(path, std::ios::binary);
    peek.read(first, 2);
    if (looks_gzipped(std::string_view(first, static_cast<size_t>(peek.gcount()))))
      inflated = std::make_unique<GzipSource>(file);
  }
  ByteSource& source() { return inflated ? static_cast<ByteSource&>(*inflated) : file; }

  FileSource file;
  std::unique_ptr<GzipSource> inflated;
};

// Runs `parse` over the file and adds its identity (the hash is of the bytes on disk,
// compressed or not).
template <typename Result, typename Parse>
Result parse_file(const std::string& path, Parse parse) {
  OpenedFile opened(path);
  Result result = parse(opened.source());
  result.identity["path"] = path;
  result.identity["bytes"] = opened.file.size();
  result.identity["gzip"] = opened.inflated != nullptr;
  result.identity[kIdentityDigestKey] = opened.file.digest_of_whole_file();
  return result;
}

template <typename Result, typename Parse>
Result parse_memory(std::string_view bytes, const std::string& origin, Parse parse) {
  MemorySource memory(bytes, origin);
  if (!looks_gzipped(bytes)) return parse(memory);
  GzipSource inflated(memory);
  return parse(inflated);
}

}  // namespace

Dataset load_idx(const std::string& path) { return parse_file<Dataset>(path, parse_idx_points); }
Labels load_idx_labels(const std::string& path) { return parse_file<Labels>(path, parse_idx_label_vector); }
Dataset parse_idx(std::string_view bytes, const std::string& origin) {
  return parse_memory<Dataset>(bytes, origin, parse_idx_points);
}
Labels parse_idx_labels(std::string_view bytes, const std::string& origin) {
  return parse_memory<Labels>(bytes, origin, parse_idx_label_vector);
}

DataShape idx_shape(const std::string& path) {
  OpenedFile opened(path);
  return points_shape(read_header(opened.source()), path);
}

}  // namespace mk
