#include "variants/variant.hpp"

#include <algorithm>

#include "core/byte_size.hpp"
#include "core/errors.hpp"

namespace mk {

DeviceFootprint& DeviceFootprint::add(const std::string& what, double bytes) {
  if (bytes > 0) parts.push_back({what, int64_t(bytes)});
  return *this;
}

int64_t DeviceFootprint::total() const {
  int64_t sum = 0;
  for (const auto& part : parts) sum += part.bytes;
  return sum;
}

std::string DeviceFootprint::describe() const {
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : " + ") + part.what + " " + format_bytes(double(part.bytes));
  return out.empty() ? "nothing" : out;
}

DeviceFootprint lloyd_state_footprint(const Problem& problem, Layout layout, bool with_labels) {
  const double m = double(problem.m), n = problem.n, slots = problem.k.sum();
  const double padded_m =
      layout == Layout::AoS ? double((problem.m + kAosPointPadding - 1) / kAosPointPadding * kAosPointPadding) : m;
  DeviceFootprint footprint;
  footprint.add("points", padded_m * n * 4.0);
  if (layout == Layout::SoA) footprint.add("points staging (SoA transpose)", m * n * 4.0);
  footprint.add("centroids", slots * n * 4.0);
  footprint.add("accumulators", slots * n * 8.0 + slots * 8.0 + problem.k.count() * 8.0);
  if (with_labels) footprint.add("labels", double(problem.k.count()) * m * 4.0);
  return footprint;
}

DeviceFootprint Variant::device_footprint(const Problem& problem, const Params& params, const DeviceInfo&,
                                          bool with_labels) const {
  if (!runs_on_gpu()) {
    DeviceFootprint footprint;
    footprint.add("points (copy)", problem.data_bytes());
    if (with_labels) footprint.add("labels", double(problem.k.count()) * double(problem.m) * 4.0);
    return footprint;
  }
  Layout layout = Layout::AoS;
  if (params.is_object() && params.contains("layout") && params.at("layout").is_string())
    layout = parse_layout(params.at("layout").get<std::string>());
  return lloyd_state_footprint(problem, layout, with_labels);
}

const Axis* ParamSpace::find(const std::string& name) const {
  for (const auto& axis : axes)
    if (axis.name == name) return &axis;
  return nullptr;
}

std::optional<std::string> ParamSpace::check(const Params& params) const {
  for (const auto& axis : axes) {
    if (!params.contains(axis.name)) return "missing parameter '" + axis.name + "'";
    const auto& value = params.at(axis.name);
    if (std::find(axis.values.begin(), axis.values.end(), value) == axis.values.end()) {
      std::string allowed;
      for (const auto& v : axis.values) allowed += (allowed.empty() ? "" : ", ") + v.dump();
      return "parameter " + axis.name + "=" + value.dump() + " is not one of {" + allowed + "}";
    }
  }
  for (auto it = params.begin(); it != params.end(); ++it)
    if (!find(it.key())) return "unknown parameter '" + it.key() + "' for this variant";
  for (const auto& restriction : restrictions)
    if (!restriction.allows(params)) return "violates restriction: " + restriction.description;
  return std::nullopt;
}

std::vector<Params> ParamSpace::enumerate() const {
  std::vector<Params> points{Params::object()};
  for (const auto& axis : axes) {
    std::vector<Params> next;
    next.reserve(points.size() * axis.values.size());
    for (const auto& point : points)
      for (const auto& value : axis.values) {
        Params extended = point;
        extended[axis.name] = value;
        next.push_back(std::move(extended));
      }
    points.swap(next);
  }
  std::vector<Params> legal;
  for (auto& point : points) {
    if (check(point)) continue;
    const bool repeat = std::any_of(repeats.begin(), repeats.end(), [&](const Restriction& r) { return !r.allows(point); });
    if (!repeat) legal.push_back(std::move(point));
  }
  return legal;
}

size_t ParamSpace::size_unrestricted() const {
  size_t total = 1;
  for (const auto& axis : axes) total *= axis.values.size();
  return total;
}

nlohmann::json ParamSpace::to_json() const {
  nlohmann::json out = {{"axes", nlohmann::json::array()}, {"restrictions", nlohmann::json::array()}};
  for (const auto& axis : axes) out["axes"].push_back({{"name", axis.name}, {"values", axis.values}, {"help", axis.help}});
  for (const auto& r : restrictions) out["restrictions"].push_back(r.description);
  if (!repeats.empty()) {
    out["repeats"] = nlohmann::json::array();
    for (const auto& r : repeats) out["repeats"].push_back(r.description);
  }
  return out;
}

Registry& Registry::instance() {
  static Registry registry;
  return registry;
}

void Registry::add(std::unique_ptr<Variant> variant) {
  if (find(variant->name())) throw std::logic_error("variant registered twice: " + variant->name());
  variants_.push_back(std::move(variant));
  std::sort(variants_.begin(), variants_.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
}

const Variant* Registry::find(const std::string& name) const {
  for (const auto& v : variants_)
    if (v->name() == name) return v.get();
  return nullptr;
}

const Variant& Registry::get(const std::string& name) const {
  if (const Variant* v = find(name)) return *v;
  std::string known;
  for (const auto& v : variants_) known += (known.empty() ? "" : ", ") + v->name();
  throw InputError("unknown variant '" + name + "' (known: " + known + ")");
}

std::vector<const Variant*> Registry::all() const {
  std::vector<const Variant*> out;
  for (const auto& v : variants_) out.push_back(v.get());
  return out;
}

Params resolve_params(const Variant& variant, const Problem& problem, const DeviceInfo& device,
                      const Params& overrides) {
  Params params = variant.default_params(problem, device);
  const ParamSpace space = variant.param_space(problem, device);
  for (auto it = overrides.begin(); it != overrides.end(); ++it) {
    if (!space.find(it.key()))
      throw UnsupportedError(variant.name() + " has no parameter '" + it.key() + "'");
    params[it.key()] = it.value();
  }
  if (auto reason = space.check(params))
    throw UnsupportedError(variant.name() + " cannot run with " + params_label(params) + ": " + *reason);
  return params;
}

std::string params_label(const Params& params) {
  std::string out;
  for (auto it = params.begin(); it != params.end(); ++it) {
    if (!out.empty()) out += ",";
    out += it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  }
  return out;
}

}  // namespace mk
