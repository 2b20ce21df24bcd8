#include "tuner/search_space.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/errors.hpp"

namespace mk::tuner {

std::string candidate_key(const std::string& variant, const Params& params) {
  // nlohmann::json objects are key-sorted, so dump() is canonical; integers parsed back
  // from a file (unsigned) print like the ones a ParamSpace holds (signed).
  return variant + "|" + params.dump();
}

std::string Candidate::key() const { return candidate_key(variant ? variant->name() : "", params); }

std::string Candidate::label() const {
  return (variant ? variant->name() : std::string("?")) + " " + params_label(params);
}

namespace {

bool same_value(const nlohmann::json& declared, const nlohmann::json& wanted) {
  if (declared.is_number() && wanted.is_number()) return declared.get<double>() == wanted.get<double>();
  return declared == wanted;
}

}  // namespace

ParamSpace pin_axes(ParamSpace space, const Params& pinned, const std::string& variant) {
  for (Axis& axis : space.axes) {
    if (!pinned.contains(axis.name)) continue;
    const nlohmann::json& wanted = pinned.at(axis.name);
    auto found = std::find_if(axis.values.begin(), axis.values.end(),
                              [&](const nlohmann::json& value) { return same_value(value, wanted); });
    if (found == axis.values.end()) {
      std::string values;
      for (const auto& value : axis.values) values += (values.empty() ? "" : ", ") + value.dump();
      throw InputError("--fix " + axis.name + "=" + wanted.dump() + ": not a value of " + variant + "'s axis " +
                       axis.name + " (" + values + ")");
    }
    // The declared value, not the typed one, so keys match what the variant enumerates.
    axis.values = {*found};
    // A pinned value is measured even where it repeats another point: --fix arbitrate=deferred
    // would otherwise leave gemm-window no point at all (a review at 04dfbaa).
    space.repeats.clear();
  }
  return space;
}

SearchSpace SearchSpace::build(const std::vector<const Variant*>& variants, const Problem& problem,
                               const DeviceInfo& device, const Params& pinned) {
  SearchSpace space;
  std::vector<std::string> unused_pins;
  for (auto it = pinned.begin(); it != pinned.end(); ++it) unused_pins.push_back(it.key());
  for (const Variant* variant : variants) {
    if (auto reason = variant->can_implement(problem, device)) {
      space.refused_.emplace_back(variant->name(), *reason);
      continue;
    }
    ParamSpace declared = variant->param_space(problem, device);
    for (const Axis& axis : declared.axes)
      unused_pins.erase(std::remove(unused_pins.begin(), unused_pins.end(), axis.name), unused_pins.end());
    space.add(*variant, pin_axes(std::move(declared), pinned, variant->name()));
    try {
      const Params defaults = variant->default_params(problem, device);
      if (!space.set_default(*variant, defaults))
        space.default_notes_.push_back(variant->name() + ": default " + params_label(defaults) +
                                       " is not a point of the search space");
    } catch (const UnsupportedError& unknown) {
      // Replay stand-ins cannot always tell (see replay.cpp); the tune goes on without.
      space.default_notes_.push_back(variant->name() + ": no default point: " + unknown.what());
    }
  }
  // A pin that names no axis would silently tune the whole space; only meaningful when some
  // variant could run (a refused shape says so on its own).
  if (!unused_pins.empty() && !space.parts_.empty())
    throw InputError("--fix " + unused_pins.front() + ": no variant in the search space has an axis named '" +
                     unused_pins.front() + "'");
  return space;
}

bool SearchSpace::set_default(const Variant& variant, const Params& params) {
  auto part = std::find_if(parts_.begin(), parts_.end(), [&](const Part& p) { return p.variant == &variant; });
  const auto index = index_of_key(candidate_key(variant.name(), params));
  if (part == parts_.end() || !index || points_[*index].variant != &variant) return false;
  part->default_index = index;
  // Kept in variant order whatever order defaults are set in.
  default_indices_.clear();
  for (const auto& each : parts_)
    if (each.default_index) default_indices_.push_back(*each.default_index);
  return true;
}

void SearchSpace::add(const Variant& variant, ParamSpace space) {
  if (part_of(&variant)) throw std::logic_error("variant added twice to a search space: " + variant.name());
  for (Params& params : space.enumerate()) {
    Candidate candidate{&variant, std::move(params)};
    index_.emplace(candidate.key(), points_.size());
    points_.push_back(std::move(candidate));
  }
  // Declared orders are for sweeps and may list a special value last (e.g. grid=1 after
  // 300·SM); a walk should step between numerically close values.
  std::vector<std::vector<nlohmann::json>> walk_order;
  for (const Axis& axis : space.axes) {
    std::vector<nlohmann::json> values = axis.values;
    if (std::all_of(values.begin(), values.end(), [](const nlohmann::json& v) { return v.is_number(); }))
      std::stable_sort(values.begin(), values.end(),
                       [](const nlohmann::json& a, const nlohmann::json& b) { return a.get<double>() < b.get<double>(); });
    walk_order.push_back(std::move(values));
  }
  parts_.push_back({&variant, std::move(space), std::move(walk_order)});
}

const SearchSpace::Part* SearchSpace::part_of(const Variant* variant) const {
  for (const auto& part : parts_)
    if (part.variant == variant) return &part;
  return nullptr;
}

std::optional<size_t> SearchSpace::index_of_key(const std::string& key) const {
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::optional<size_t> SearchSpace::index_of(const Candidate& candidate) const {
  return index_of_key(candidate.key());
}

const Candidate& SearchSpace::random_point(Rng& rng) const {
  if (points_.empty()) throw std::logic_error("random_point of an empty search space");
  return points_[uniform_index(rng, points_.size())];
}

std::vector<size_t> SearchSpace::neighbour_indices(size_t index) const {
  const Candidate& point = points_.at(index);
  const Part* part = part_of(point.variant);
  std::vector<size_t> out;
  if (!part) return out;
  for (size_t a = 0; a < part->space.axes.size(); ++a) {
    const Axis& axis = part->space.axes[a];
    const auto& values = part->walk_order[a];
    if (!point.params.contains(axis.name)) continue;
    const auto here = std::find(values.begin(), values.end(), point.params.at(axis.name));
    if (here == values.end()) continue;
    const long position = long(here - values.begin());
    for (long direction : {-1L, 1L}) {
      for (long next = position + direction; next >= 0 && next < long(values.size()); next += direction) {
        Params moved = point.params;
        moved[axis.name] = values[size_t(next)];
        if (auto found = index_of_key(candidate_key(point.variant->name(), moved))) {
          if (std::find(out.begin(), out.end(), *found) == out.end()) out.push_back(*found);
          break;
        }
      }
    }
  }
  return out;
}

std::vector<Candidate> SearchSpace::neighbours(const Candidate& point) const {
  std::vector<Candidate> out;
  if (auto index = index_of(point))
    for (size_t neighbour : neighbour_indices(*index)) out.push_back(points_[neighbour]);
  return out;
}

std::vector<std::string> SearchSpace::variant_names() const {
  std::vector<std::string> names;
  for (const auto& part : parts_) names.push_back(part.variant->name());
  return names;
}

}  // namespace mk::tuner
