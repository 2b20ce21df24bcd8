// The engine-independent parts of the subset batch (variants/subset_batch/subset_batch.hpp).
#include "variants/subset_batch/subset_batch.hpp"

#include <cmath>

#include "core/errors.hpp"
#include "variants/subset_batch/engines.hpp"

namespace mk::batch {

int64_t SubsetOutcome::cluster_size(int64_t b, int j) const {
  const int c_count = classes > 0 ? classes : 1;
  int64_t total = 0;
  for (int c = 0; c < c_count; ++c) total += class_counts[size_t((b * k + j) * c_count + c)];
  return total;
}

std::vector<std::string> subset_engine_names() { return {"cpu-openmp", "cuda"}; }

const SubsetBatchEngine& subset_engine(const std::string& name) {
  if (name == "cpu-openmp") return cpu_subset_engine();
  if (name == "cuda") return cuda_subset_engine();
  throw InputError("unknown subset engine '" + name + "' (known: cpu-openmp, cuda)");
}

void check_subset_input(const SharedTable& table, const SubsetProblems& problems) {
  if (!table.data) throw InputError("subset batch: no table");
  const Dataset& data = *table.data;
  if (data.m < 1 || data.n < 1) throw InputError("subset batch: the table is empty");
  if (data.values.size() != size_t(data.m) * size_t(data.n))
    throw InputError("subset batch: the table holds " + std::to_string(data.values.size()) + " values, not M x N");
  if (problems.s < 1 || problems.s > data.n)
    throw InputError("subset batch: " + std::to_string(problems.s) + " columns per problem, the table has " +
                     std::to_string(data.n));
  if (problems.k < 1) throw InputError("subset batch: K must be at least 1");
  if (problems.k > data.m)
    throw InputError("subset batch: K=" + std::to_string(problems.k) + " exceeds the " + std::to_string(data.m) +
                     " rows of the table");
  if (problems.count < 1) throw InputError("subset batch: no problems");
  const size_t b = size_t(problems.count);
  if (problems.columns.size() != b * problems.s)
    throw InputError("subset batch: columns hold " + std::to_string(problems.columns.size()) + " values, expected B x s");
  if (problems.centroids.size() != b * problems.k * problems.s)
    throw InputError("subset batch: centroids hold " + std::to_string(problems.centroids.size()) +
                     " values, expected B x k x s");
  if (problems.thresholds.size() != b) throw InputError("subset batch: one threshold per problem expected");
  for (int32_t column : problems.columns)
    if (column < 0 || column >= data.n)
      throw InputError("subset batch: column " + std::to_string(column) + " is outside the table's " +
                       std::to_string(data.n) + " attributes");
  for (float value : problems.centroids)
    if (!std::isfinite(value)) throw InputError("subset batch: an initial centroid is not finite");
  for (double threshold : problems.thresholds)
    if (!(threshold >= 0)) throw InputError("subset batch: a threshold is negative or not a number");
  if (table.classes < 0) throw InputError("subset batch: negative class count");
  if (table.classes > 0) {
    if (!table.labels || int64_t(table.labels->size()) != data.m)
      throw InputError("subset batch: one label per row expected");
    for (int32_t label : *table.labels)
      if (label < 0 || label >= table.classes)
        throw InputError("subset batch: label " + std::to_string(label) + " is outside 0.." +
                         std::to_string(table.classes - 1));
  }
}

SubsetOutcome solve_subsets(SubsetBatchRun& run, int max_iter) {
  if (max_iter < 1) throw InputError("subset batch: max_iter must be at least 1, got " + std::to_string(max_iter));
  for (int step = 0; step < max_iter; ++step)
    if (run.step() == 0) break;
  run.score();
  return run.read_back();
}

}  // namespace mk::batch
