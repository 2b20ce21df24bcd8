// The labelled input of `mkbench explore` (labelled_table.hpp).
#include "apps/explore/labelled_table.hpp"

#include <algorithm>

#include "apps/explore/labelled_files_interim.hpp"
#include "core/errors.hpp"
#include "datasets/susy.hpp"

namespace mk::explore {

// SUSY's shape (seed 000 §5.4), for a susy: spec given without --points or --dims.
constexpr int64_t kSusyRows = 5000000;
constexpr int kSusyAttributes = 18;

void assign_class_ids(LabelledTable& table, const std::vector<int64_t>& raw_labels) {
  std::vector<int64_t> values(raw_labels);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  table.class_values = values;
  table.class_sizes.assign(values.size(), 0);
  table.labels.resize(raw_labels.size());
  for (size_t i = 0; i < raw_labels.size(); ++i) {
    const int32_t id = int32_t(std::lower_bound(values.begin(), values.end(), raw_labels[i]) - values.begin());
    table.labels[i] = id;
    ++table.class_sizes[size_t(id)];
  }
}

LabelledTable load_labelled_table(const std::string& data_spec, const std::string& labels_spec, int64_t points,
                                  int dims, uint64_t seed) {
  LabelledTable table;
  if (is_susy_spec(data_spec)) {
    if (!labels_spec.empty()) throw InputError("susy: generates its own labels; --labels does not apply");
    const SusySpec spec = parse_susy_spec(data_spec, points > 0 ? points : kSusyRows, dims > 0 ? dims : kSusyAttributes, seed);
    SusyTable generated = generate_susy(spec);
    table.data = std::move(generated.data);
    table.attribute_roles = susy_attribute_roles(spec);
    table.labels_identity = table.data.identity;
    assign_class_ids(table, std::vector<int64_t>(generated.labels.begin(), generated.labels.end()));
  } else {
    if (data_spec.rfind("uniform", 0) == 0 || data_spec.rfind("blobs", 0) == 0)
      throw InputError("dataset '" + data_spec + "' has no classes: explore needs a labelled table (susy:..., "
                       "csv:PATH:label=COL, npy:PATH or idx:PATH with --labels)");
    LabelledFiles files = load_labelled_files(data_spec, labels_spec, seed);
    if (points > 0 && points != files.data.m)
      throw InputError("--points " + std::to_string(points) + " disagrees with the " + std::to_string(files.data.m) +
                       " rows of '" + data_spec + "'");
    if (dims > 0 && dims != files.data.n)
      throw InputError("--dims " + std::to_string(dims) + " disagrees with the " + std::to_string(files.data.n) +
                       " attributes of '" + data_spec + "'");
    table.data = std::move(files.data);
    table.labels_identity = files.labels_identity;
    assign_class_ids(table, files.labels);
  }
  check_finite(table.data);
  if (table.classes() < 2)
    throw InputError("the labels hold a single class (" + std::to_string(table.class_values.front()) +
                     "): every clustering would score 1");
  return table;
}

}  // namespace mk::explore
