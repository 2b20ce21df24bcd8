#include "core/byte_size.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/errors.hpp"

namespace mk {

int64_t parse_byte_size(const std::string& text, const std::string& what) {
  const auto bad = [&] {
    return InputError(what + " must be a size like 64G, 512MiB or 1073741824 (bytes), got '" + text + "'");
  };
  const char* begin = text.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(number) || number < 0 || std::isspace(static_cast<unsigned char>(text[0])))
    throw bad();
  std::string unit(end);
  for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  double scale = 1;
  if (!unit.empty() && unit != "B") {
    const std::string prefixes = "KMGT";
    const size_t power = prefixes.find(unit[0]);
    const std::string rest = unit.substr(1);
    if (power == std::string::npos || !(rest.empty() || rest == "B" || rest == "IB")) throw bad();
    scale = std::ldexp(1.0, 10 * int(power + 1));
  }
  const double bytes = std::floor(number * scale);
  if (bytes < 1 || bytes >= std::ldexp(1.0, 62)) throw bad();
  return int64_t(bytes);
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024 && unit < 5) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0) std::snprintf(text, sizeof text, "%.0f B", bytes);
  else std::snprintf(text, sizeof text, "%.1f %s", bytes, units[unit]);
  return text;
}

}  // namespace mk
