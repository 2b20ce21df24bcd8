#pragma once
// A generator's rows made one at a time (datasets/generate.cpp), and the gather of any rows of any
// data set: what passes and samples over a data set made on demand (Dataset::on_demand) read.
#include <cstdint>
#include <vector>

#include "datasets/counter_rng.hpp"
#include "datasets/dataset.hpp"

namespace mk {

// A generator's rows one at a time, each bit for bit generate()'s: the spec checked and the
// blobs' centres made once, so any thread may then make any row (row() is const).
class GeneratedRows {
 public:
  explicit GeneratedRows(const GeneratorSpec& spec);  // InputError for a bad spec
  void row(int64_t i, float* out) const;               // row i (0 <= i < m) into out[0..n)

 private:
  GeneratorSpec spec_;
  std::vector<float> centres_;
  CounterRng uniform_, radius_, angle_, assignment_, zero_mask_;
};

// The rows `rows` (any order, repeats allowed) of any data set into `out` (rows.size() x n), on
// all cores: a sample's gather. InputError for a row outside [0, m).
void copy_rows_at(const Dataset& data, const std::vector<int64_t>& rows, float* out);

}  // namespace mk
