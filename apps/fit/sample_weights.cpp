#include "apps/fit/sample_weights.hpp"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "core/errors.hpp"
#include "core/input_file.hpp"

namespace mk {

namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& why) {
  throw InputError("--weights " + origin + ": " + why);
}

// The value of 'key' in a .npy header dictionary, as written (quotes and brackets kept).
std::string header_value(const std::string& header, const std::string& key, const std::string& origin) {
  const std::string quoted = "'" + key + "'";
  const size_t at = header.find(quoted);
  if (at == std::string::npos) fail(origin, "the .npy header has no '" + key + "' entry");
  size_t start = header.find(':', at + quoted.size());
  if (start == std::string::npos) fail(origin, "malformed .npy header");
  ++start;
  while (start < header.size() && header[start] == ' ') ++start;
  size_t end = start;
  if (start < header.size() && header[start] == '(') {
    end = header.find(')', start);
    if (end == std::string::npos) fail(origin, "malformed shape in the .npy header");
    ++end;
  } else {
    while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  }
  std::string value = header.substr(start, end - start);
  while (!value.empty() && value.back() == ' ') value.pop_back();
  return value;
}

// "(3000,)" or "(3000, 1)" -> the extents.
std::vector<int64_t> parse_shape(const std::string& text, const std::string& origin) {
  std::vector<int64_t> extents;
  std::string inner = text.substr(1, text.size() - 2);
  std::stringstream parts(inner);
  std::string part;
  while (std::getline(parts, part, ',')) {
    const size_t first = part.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    part = part.substr(first);
    char* end = nullptr;
    const long long value = std::strtoll(part.c_str(), &end, 10);
    if (end == part.c_str() || value < 0) fail(origin, "malformed shape " + text + " in the .npy header");
    extents.push_back(value);
  }
  return extents;
}

}  // namespace

std::vector<float> parse_sample_weights(std::string_view bytes, const std::string& origin, int64_t m) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) fail(origin, "not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_length = 0, preamble = 0;
  if (major == 1) {
    header_length = size_t(static_cast<unsigned char>(bytes[8])) | size_t(static_cast<unsigned char>(bytes[9])) << 8;
    preamble = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(origin, "the .npy preamble is cut short");
    for (int b = 0; b < 4; ++b) header_length |= size_t(static_cast<unsigned char>(bytes[8 + b])) << (8 * b);
    preamble = 12;
  } else {
    fail(origin, "unsupported .npy version " + std::to_string(major));
  }
  if (bytes.size() < preamble + header_length) fail(origin, "the .npy header is cut short");
  const std::string header(bytes.substr(preamble, header_length));
  const std::string descr = header_value(header, "descr", origin);
  const std::string order = header_value(header, "fortran_order", origin);
  const std::vector<int64_t> shape = parse_shape(header_value(header, "shape", origin), origin);
  const bool f4 = descr == "'<f4'", f8 = descr == "'<f8'";
  if (!f4 && !f8) fail(origin, "dtype " + descr + ": weights are little-endian float32 or float64 ('<f4', '<f8')");
  const bool vector = shape.size() == 1 || (shape.size() == 2 && shape[1] == 1);
  if (!vector) fail(origin, "weights are a 1-D (M,) or (M, 1) array, the file's shape has " + std::to_string(shape.size()) + " dimension(s)");
  (void)order;  // one column: C and Fortran order are the same bytes
  const int64_t count = shape[0];
  if (count != m)
    fail(origin, std::to_string(count) + " weights for " + std::to_string(m) + " points (one weight per point)");
  const size_t width = f4 ? 4 : 8;
  const size_t data_bytes = size_t(count) * width;
  if (bytes.size() - preamble - header_length != data_bytes)
    fail(origin, "holds " + std::to_string(bytes.size() - preamble - header_length) + " data bytes, its header promises " +
                     std::to_string(data_bytes));
  const char* data = bytes.data() + preamble + header_length;
  std::vector<float> weights(static_cast<size_t>(count));
  double total = 0;
  for (int64_t i = 0; i < count; ++i) {
    double value;
    if (f4) {
      float single;
      std::memcpy(&single, data + size_t(i) * 4, 4);
      value = single;
    } else {
      std::memcpy(&value, data + size_t(i) * 8, 8);
    }
    if (!std::isfinite(value) || value < 0)
      fail(origin, "weight " + std::to_string(i) + " is " + std::to_string(value) +
                       " (weights must be finite and non-negative)");
    const float rounded = float(value);
    if (!std::isfinite(rounded)) fail(origin, "weight " + std::to_string(i) + " overflows float32");
    weights[size_t(i)] = rounded;
    total += rounded;
  }
  if (!(total > 0)) fail(origin, "every weight is 0 (at least one point must weigh something)");
  return weights;
}

std::vector<float> load_sample_weights(const std::string& spec, int64_t m) {
  if (spec.rfind("npy:", 0) != 0 || spec.size() == 4)
    throw InputError("--weights must be npy:PATH (a 1-D float32 or float64 array, one weight per point), got '" +
                     spec + "'");
  const std::string path = spec.substr(4);
  require_regular_file(path, "--weights");
  std::ifstream file(path, std::ios::binary);
  if (!file) throw InputError("--weights " + path + ": cannot open the file");
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return parse_sample_weights(bytes, path, m);
}

}  // namespace mk
