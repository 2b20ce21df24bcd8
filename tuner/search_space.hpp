#pragma once
// The tuner's search space: every legal (variant, params) point of the variants that can
// solve one problem on one device. Axes and restrictions come from each variant's
// ParamSpace; the space only enumerates, samples and walks them.
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "variants/variant.hpp"
#include "tuner/rng.hpp"

namespace mk::tuner {

struct Candidate {
  const Variant* variant = nullptr;
  Params params = Params::object();

  // "variant|{params as canonical JSON}": identity of a point across runs and files.
  std::string key() const;
  // "variant block=256,grid=264" for progress lines.
  std::string label() const;
};

std::string candidate_key(const std::string& variant, const Params& params);

// `space` with each axis named in `pinned` reduced to the pinned value. InputError when the
// value is not among the axis's declared values (the message lists them).
ParamSpace pin_axes(ParamSpace space, const Params& pinned, const std::string& variant);

class SearchSpace {
 public:
  // Every variant whose can_implement accepts the problem on the device contributes its
  // param_space; the others are listed in refused() with their reason. Each variant's
  // default_params on the device becomes its default point when it is a point of the
  // space; default_notes() says why a variant has none.
  // `pinned` (from `mkbench tune --fix axis=value`) narrows every axis of that name to
  // the one value, so a sweep can cover a sub-space (table1's grid x ppt at block 256);
  // InputError when a pinned value is not one of a variant's declared values, or when no
  // variant has an axis of that name.
  static SearchSpace build(const std::vector<const Variant*>& variants, const Problem& problem,
                           const DeviceInfo& device, const Params& pinned = Params::object());

  // Adds one variant's space directly (replay tables, tests); no default point.
  void add(const Variant& variant, ParamSpace space);
  // Makes `params` the default point of `variant` (added before); false, and nothing
  // changes, when they are not a point of the space.
  bool set_default(const Variant& variant, const Params& params);

  size_t size() const { return points_.size(); }
  bool empty() const { return points_.empty(); }
  // All legal points: variants in the order added, each in ParamSpace::enumerate order.
  const std::vector<Candidate>& enumerate() const { return points_; }
  const Candidate& at(size_t index) const { return points_[index]; }
  std::optional<size_t> index_of(const Candidate& candidate) const;
  std::optional<size_t> index_of_key(const std::string& key) const;

  const Candidate& random_point(Rng& rng) const;
  // Points that differ from `point` in exactly one axis, moved to the adjacent value of
  // that axis (numeric order when every value is a number, else declared order). When
  // the adjacent value is illegal the move continues in the same direction to the first
  // legal one, so restrictions do not cut the walk.
  std::vector<Candidate> neighbours(const Candidate& point) const;
  std::vector<size_t> neighbour_indices(size_t index) const;

  // The default points (what `mkbench run` uses without a tuned config), in variant
  // order: the tune measures them before anything its strategy proposes, so a tuned
  // winner can be compared with the default it would replace.
  const std::vector<size_t>& default_indices() const { return default_indices_; }
  // "variant: why it has no default point", for the progress output.
  const std::vector<std::string>& default_notes() const { return default_notes_; }

  // (variant name, reason) for every variant left out by can_implement.
  const std::vector<std::pair<std::string, std::string>>& refused() const { return refused_; }
  // Variant names in the space, in order.
  std::vector<std::string> variant_names() const;

 private:
  struct Part {
    const Variant* variant;
    ParamSpace space;
    std::vector<std::vector<nlohmann::json>> walk_order;  // per axis: values in step order
    std::optional<size_t> default_index;
  };
  const Part* part_of(const Variant* variant) const;

  std::vector<Part> parts_;
  std::vector<Candidate> points_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::pair<std::string, std::string>> refused_;
  std::vector<size_t> default_indices_;
  std::vector<std::string> default_notes_;
};

}  // namespace mk::tuner
