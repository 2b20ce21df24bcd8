// The susy: generator (datasets/susy.hpp): a SUSY-shaped labelled table with planted
// informative attributes.
#include "datasets/susy.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>

#include "core/errors.hpp"
#include "datasets/counter_rng.hpp"

namespace mk {
namespace {

constexpr int kNoise = -1;
constexpr int kInformative = -2;

std::vector<std::string> split_any(const std::string& text, const std::string& separators) {
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

[[noreturn]] void bad(const std::string& spec, const std::string& problem) {
  throw InputError("dataset '" + spec + "': " + problem +
                   " (form: susy[:informative=A,B,C][:correlated=C][:rho=R][:shift=D][:signal=P])");
}

long whole(const std::string& text, const std::string& what, const std::string& spec) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) bad(spec, what + " must be a whole number, got '" + text + "'");
  return value;
}

double real(const std::string& text, const std::string& what, const std::string& spec) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value))
    bad(spec, what + " must be a finite number, got '" + text + "'");
  return value;
}

// role[d]: kInformative, kNoise, or the informative attribute a correlated one follows.
std::vector<int> roles_of(const SusySpec& spec) {
  std::vector<int> role(spec.n, kNoise);
  for (int a : spec.informative) role[a] = kInformative;
  int placed = 0;
  for (int d = 0; d < spec.n && placed < spec.correlated; ++d)
    if (role[d] == kNoise) role[d] = spec.informative[placed++ % spec.informative.size()];
  return role;
}

void validate(const SusySpec& spec, const std::string& text) {
  if (spec.m < 1 || spec.n < 1)
    bad(text, "needs M >= 1 rows and N >= 1 attributes (got M=" + std::to_string(spec.m) + ", N=" +
                  std::to_string(spec.n) + ")");
  if (static_cast<uint64_t>(spec.m) > std::numeric_limits<size_t>::max() / sizeof(float) / spec.n)
    bad(text, "M x N does not fit in memory addresses");
  if (spec.informative.empty()) bad(text, "informative needs at least one attribute");
  std::vector<int> seen;
  for (int a : spec.informative) {
    if (a < 0 || a >= spec.n)
      bad(text, "informative attribute " + std::to_string(a) + " is outside 0.." + std::to_string(spec.n - 1));
    if (std::find(seen.begin(), seen.end(), a) != seen.end())
      bad(text, "informative attribute " + std::to_string(a) + " is listed twice");
    seen.push_back(a);
  }
  const int others = spec.n - static_cast<int>(spec.informative.size());
  if (spec.correlated < 0 || spec.correlated > others)
    bad(text, "correlated must be in 0.." + std::to_string(others) + " (the non-informative attributes), got " +
                  std::to_string(spec.correlated));
  if (!(spec.rho >= 0 && spec.rho <= 1)) bad(text, "rho must be in [0, 1]");
  if (!(spec.signal > 0 && spec.signal < 1)) bad(text, "signal must be in (0, 1)");
  if (!(spec.shift >= 0 && std::isfinite(spec.shift))) bad(text, "shift must be finite and >= 0");
}

}  // namespace

bool is_susy_spec(const std::string& spec) { return spec == "susy" || spec.rfind("susy:", 0) == 0; }

SusySpec parse_susy_spec(const std::string& text, int64_t m, int n, uint64_t seed) {
  if (!is_susy_spec(text)) bad(text, "not a susy spec");
  SusySpec spec;
  spec.m = m;
  spec.n = n;
  spec.seed = seed;
  const std::string settings = text.size() > 5 ? text.substr(5) : "";
  bool in_informative = false, informative_given = false, correlated_given = false;
  for (const std::string& part : split_any(settings, ":,")) {
    if (part.empty()) {
      if (settings.empty()) break;
      bad(text, "empty setting");
    }
    const auto equals = part.find('=');
    if (equals == std::string::npos) {
      // A bare number continues the informative list ("informative=0,4,7").
      if (!in_informative) bad(text, "expected key=value, got '" + part + "'");
      spec.informative.push_back(static_cast<int>(whole(part, "informative attribute", text)));
      continue;
    }
    const std::string key = part.substr(0, equals), value = part.substr(equals + 1);
    in_informative = false;
    if (key == "informative") {
      if (informative_given) bad(text, "informative given twice");
      informative_given = in_informative = true;
      spec.informative = {static_cast<int>(whole(value, "informative attribute", text))};
    } else if (key == "correlated") {
      correlated_given = true;
      spec.correlated = static_cast<int>(whole(value, "correlated", text));
    } else if (key == "rho") {
      spec.rho = real(value, "rho", text);
    } else if (key == "shift") {
      spec.shift = real(value, "shift", text);
    } else if (key == "signal") {
      spec.signal = real(value, "signal", text);
    } else {
      bad(text, "unknown setting '" + key + "'");
    }
  }
  // The default informative set names attributes of the default 18; a narrower table keeps
  // the ones it has (and at least attribute 0).
  if (!informative_given) {
    std::vector<int> kept;
    for (int a : spec.informative)
      if (a < spec.n) kept.push_back(a);
    spec.informative = kept.empty() ? std::vector<int>{0} : kept;
  }
  // The default count of correlated attributes, likewise, shrinks to what a narrow table has.
  if (!correlated_given)
    spec.correlated = std::min(spec.correlated, std::max(0, spec.n - static_cast<int>(spec.informative.size())));
  validate(spec, text);
  return spec;
}

std::vector<std::string> susy_attribute_roles(const SusySpec& spec) {
  std::vector<std::string> names;
  const std::vector<int> role = roles_of(spec);
  int noise = 0;
  for (int d = 0; d < spec.n; ++d) {
    if (role[d] == kInformative) names.push_back("informative");
    else if (role[d] >= 0) names.push_back("correlated with " + std::to_string(role[d]));
    else names.push_back(noise++ % 2 == 0 ? "noise (normal)" : "noise (exponential)");
  }
  return names;
}

SusyTable generate_susy(const SusySpec& spec) {
  validate(spec, "susy");
  SusyTable table;
  Dataset& data = table.data;
  data.m = spec.m;
  data.n = spec.n;
  try {
    data.values.resize(static_cast<size_t>(spec.m) * spec.n);
    table.labels.resize(static_cast<size_t>(spec.m));
  } catch (const std::bad_alloc&) {
    throw InputError("cannot allocate host memory for a " + std::to_string(spec.m) + " x " + std::to_string(spec.n) +
                     " susy table");
  }
  const std::vector<int> role = roles_of(spec);
  // Noise attributes alternate between a normal and a centred exponential, in attribute order.
  std::vector<bool> exponential(spec.n, false);
  for (int d = 0, noise = 0; d < spec.n; ++d)
    if (role[d] == kNoise) exponential[d] = (noise++ % 2 == 1);

  const CounterRng klass(spec.seed, RandomStream::SusyClass);
  const CounterRng radius(spec.seed, RandomStream::NormalRadius);
  const CounterRng angle(spec.seed, RandomStream::NormalAngle);
  const CounterRng uniform(spec.seed, RandomStream::UniformValue);
  const double two_pi = 6.283185307179586476925286766559;
  const double half_shift = spec.shift / 2, rho = spec.rho, rest = std::sqrt(1 - spec.rho * spec.rho);
  const int n = spec.n;
  // One normal per entry (the cosine half of its own Box-Muller pair): simpler than sharing
  // pairs across attributes of different roles, and the generator is not on any timed path.
  auto normal = [&](uint64_t entry) {
    const double r = std::sqrt(-2.0 * std::log(1.0 - radius.unit_double(entry)));
    return r * std::cos(two_pi * angle.unit_double(entry));
  };

#pragma omp parallel
  {
    std::vector<double> row(n);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < spec.m; ++i) {
      const int32_t y = klass.unit_double(static_cast<uint64_t>(i)) < spec.signal ? 1 : 0;
      const uint64_t first = static_cast<uint64_t>(i) * n;
      // Informative attributes first: correlated ones read them.
      for (int d = 0; d < n; ++d)
        if (role[d] == kInformative) row[d] = normal(first + d) + (y ? half_shift : -half_shift);
      for (int d = 0; d < n; ++d) {
        if (role[d] >= 0) row[d] = rho * row[role[d]] + rest * normal(first + d);
        else if (role[d] == kNoise)
          row[d] = exponential[d] ? -std::log(1.0 - uniform.unit_double(first + d)) - 1.0 : normal(first + d);
      }
      float* out = data.values.data() + first;
      for (int d = 0; d < n; ++d) out[d] = static_cast<float>(row[d]);
      table.labels[static_cast<size_t>(i)] = y;
    }
  }
  nlohmann::json params = {{"m", spec.m},         {"n", spec.n},         {"informative", spec.informative},
                           {"correlated", spec.correlated}, {"rho", spec.rho}, {"shift", spec.shift},
                           {"signal", spec.signal}};
  data.identity = {{"kind", "generator"}, {"generator", "susy"}, {"params", params}, {"seed", spec.seed}};
  data.sparsity = measure_sparsity(data.values);
  return table;
}

}  // namespace mk
