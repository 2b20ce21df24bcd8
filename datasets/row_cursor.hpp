#pragma once
// One thread's walk over the rows of a data set, in ascending order (its share of an OpenMP pass):
// a row where it lies, or, for a data set made on demand (Dataset::on_demand), from a block of
// rows generated ahead into the cursor's own buffer. A pass written with a cursor reads the same
// values in the same order either way, so its sums do not depend on how the data is held.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "datasets/dataset.hpp"
#include "datasets/generated_rows.hpp"

namespace mk {

class RowCursor {
 public:
  // 1024 rows a block: a few hundred KiB of buffer at most for any N a fit takes.
  explicit RowCursor(const Dataset& data, int64_t block_rows = 1024) : data_(data), block_rows_(block_rows) {
    if (data.is_on_demand()) made_.emplace(*data.on_demand);
  }

  // Row i: valid until the next call.
  const float* row(int64_t i) {
    if (!made_) return data_.row(i);
    if (i < first_ || i >= end_) {
      first_ = i;
      end_ = std::min(data_.m, i + block_rows_);
      buffer_.resize(size_t(end_ - first_) * size_t(data_.n));
      for (int64_t r = first_; r < end_; ++r) made_->row(r, buffer_.data() + size_t(r - first_) * size_t(data_.n));
    }
    return buffer_.data() + size_t(i - first_) * size_t(data_.n);
  }

 private:
  const Dataset& data_;
  int64_t block_rows_;
  std::optional<GeneratedRows> made_;  // an on-demand data set's rows, made by this thread
  int64_t first_ = 0, end_ = 0;
  std::vector<float> buffer_;
};

}  // namespace mk
