#pragma once
// The input of `mkbench explore`: a table with a class label per row, from a generator
// (susy:..., datasets/susy.hpp) or from files (labelled_files_interim.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/dataset.hpp"

namespace mk::explore {

struct LabelledTable {
  Dataset data;
  std::vector<int32_t> labels;               // class ids 0..classes-1, one per row
  std::vector<int64_t> class_values;         // the label written in the input for each class id (ascending)
  std::vector<int64_t> class_sizes;          // rows per class id
  nlohmann::json labels_identity;            // the labels' file, or the generator
  std::vector<std::string> attribute_roles;  // susy: what each attribute is; empty for files
  int classes() const { return int(class_values.size()); }
};

// data_spec: susy[:...] (points and dims: the generator's M and N, 0 for its defaults) or a
// file spec; labels_spec: --labels, empty when the data carries them (csv:...:label=COL,
// susy). InputError (exit 2) for anything unreadable or inconsistent, and for labels of a
// single class (a majority vote would score 1 whatever the clustering).
LabelledTable load_labelled_table(const std::string& data_spec, const std::string& labels_spec, int64_t points,
                                  int dims, uint64_t seed);

// Renumbers labels as 0..C-1 in ascending order of their values; fills labels, class_values
// and class_sizes.
void assign_class_ids(LabelledTable& table, const std::vector<int64_t>& raw_labels);

}  // namespace mk::explore
