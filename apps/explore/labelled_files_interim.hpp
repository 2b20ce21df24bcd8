#pragma once
// SEAM (loaders-fuzz): interim readers of labelled files for `mkbench explore`, until the
// datasets layer's labelled-table API lands on main (branch loaders-fuzz: LabelledDataset,
// load_labelled_dataset(data_spec, labels_spec, m, n, seed), load_idx with gzip). When it
// does, load_labelled_files() becomes one call of load_labelled_dataset and this file and its
// .cpp go; nothing else in apps/explore reads files. What the interim covers:
//   csv:PATH[:header][:label=COL][:delim=D][:cols=...]  the label column's cells (whole numbers)
//   npy:PATH                                             data: float32 2-D (datasets/npy.cpp)
//   idx:PATH                                             data: plain IDX (gzip: gunzip it first)
//   --labels npy:PATH | idx:PATH | csv:PATH[:header][:label=COL][:delim=D]
//                                                        1-D integer or whole-valued labels
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/dataset.hpp"

namespace mk::explore {

struct LabelledFiles {
  Dataset data;
  std::vector<int64_t> labels;  // one per row, as written in the file
  nlohmann::json labels_identity;
};

// InputError (exit 2) for a missing or unreadable file, a label column that does not exist
// or holds a cell that is not a whole number, no labels at all, or a label count that differs
// from the number of rows.
LabelledFiles load_labelled_files(const std::string& data_spec, const std::string& labels_spec, uint64_t seed);

}  // namespace mk::explore
