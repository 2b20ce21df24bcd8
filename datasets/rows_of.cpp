// A view of some rows of a Dataset (datasets/dataset.hpp).
#include <string>

#include "core/errors.hpp"
#include "datasets/dataset.hpp"

namespace mk {

Dataset rows_of(const Dataset& data, int64_t begin, int64_t end) {
  if (begin < 0 || end < begin || end > data.m)
    throw InputError("rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") of a data set of " +
                     std::to_string(data.m) + " rows");
  if (!data.holds_rows())
    throw InputError("the data set holds " + std::to_string(data.values.size()) + " values, not " +
                     std::to_string(data.m) + " × " + std::to_string(data.n));
  Dataset view;
  view.m = end - begin;
  view.n = data.n;
  view.identity = data.identity;
  view.sparsity = data.sparsity;
  view.finite_checked = data.finite_checked;
  const float* first = data.points() + static_cast<size_t>(begin) * static_cast<size_t>(data.n);
  if (data.is_mapped()) {
    view.mapped_rows = first;
    view.mapping = data.mapping;
  } else {
    view.borrowed_rows = first;
  }
  return view;
}

}  // namespace mk
