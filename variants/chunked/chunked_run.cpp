#include "variants/chunked/chunked_run.hpp"

#include <algorithm>


#include "core/errors.hpp"
#include "variants/chunked/chunked_base.hpp"
#include "variants/common/pinned_staging.hpp"

namespace mk {

ChunkSource chunk_source_of(const Dataset& data) {
  if (data.is_on_demand()) {
    ChunkSource source;
    source.m = data.m;
    source.n = data.n;
    source.description = "generator";
    source.generator = data.on_demand;
    return source;
  }
  if (data.is_mapped()) {
    ChunkSource source;
    source.m = data.m;
    source.n = data.n;
    source.rows = data.mapped_rows;
    source.description = "memory-mapped file";
    source.mapped_file = true;
    return source;
  }
  if (!data.holds_rows())
    throw InputError("the data set holds " + std::to_string(data.values.size()) + " values, not " +
                     std::to_string(data.m) + " × " + std::to_string(data.n));
  ChunkSource source;
  source.m = data.m;
  source.n = data.n;
  source.rows = data.points();
  source.description = "host array";
  return source;
}

nlohmann::json ChunkedRunInfo::to_json() const {
  return {{"chunk_points", chunk_points}, {"chunks", chunks}, {"slots", slots},
          {"transfer", transfer},         {"source", source}};
}

Problem chunk_problem(const Problem& problem, int64_t chunk_points) {
  Problem chunk = problem;
  chunk.m = std::min(chunk_points, problem.m);
  chunk.streamed = true;
  return chunk;
}

namespace chunked {

void copy_floats_parallel(float* destination, const float* source, size_t count) {
  gpu::copy_bytes_parallel(destination, source, count * sizeof(float));
}

ChunkedRunBase::ChunkedRunBase(const Problem& problem, const ChunkSource& source, int64_t chunk_points)
    : problem_(problem), source_(source), chunk_points_(std::min(chunk_points, problem.m)) {
  if (chunk_points < 1) throw InputError("--chunk-points must be at least 1, got " + std::to_string(chunk_points));
  if (source.m != problem.m || source.n != problem.n || (!source.rows && !source.generator))
    throw InputError("the out-of-core source is " + std::to_string(source.m) + " × " + std::to_string(source.n) +
                     " but the problem is " + problem.str());
  chunks_ = (problem.m + chunk_points_ - 1) / chunk_points_;
  const int slots = problem.k.sum();
  centroids_.assign(size_t(slots) * problem.n, 0.0f);
  sums_.assign(size_t(slots) * problem.n, 0.0);
  counts_.assign(size_t(slots), 0);
  inertia_.assign(size_t(problem.k.count()), 0.0);
}

int64_t ChunkedRunBase::chunk_rows(int64_t chunk) const {
  return std::min(chunk_points_, problem_.m - chunk_first(chunk));
}

void ChunkedRunBase::chunk_on_host(int64_t chunk, float* out) const {
  const int64_t first = chunk_first(chunk), rows = chunk_rows(chunk);
  if (source_.generator) return generate_rows(*source_.generator, first, first + rows, out);
  copy_floats_parallel(out, chunk_rows_at(chunk), size_t(rows) * size_t(source_.n));
}

void ChunkedRunBase::set_centroids(const std::vector<float>& packed) {
  if (packed.size() != centroids_.size())
    throw InputError("set_centroids: " + std::to_string(packed.size()) + " values, expected " +
                     std::to_string(centroids_.size()));
  centroids_ = packed;
  push_centroids();
}

void ChunkedRunBase::iterate(bool store_labels) {
  AccumulateOptions options;
  options.store_labels = store_labels;
  accumulate(options);
  update(UpdateOptions{});
}

AccumulatorRefs ChunkedRunBase::accumulators() {
  AccumulatorRefs refs;
  refs.sums = sums_.data();
  refs.counts = counts_.data();
  refs.inertia = inertia_.data();
  refs.slots = problem_.k.sum();
  refs.n = problem_.n;
  refs.k_count = problem_.k.count();
  refs.on_device = false;
  return refs;
}

void ChunkedRunBase::begin_step(bool with_labels) {
  std::fill(sums_.begin(), sums_.end(), 0.0);
  std::fill(counts_.begin(), counts_.end(), 0ull);
  std::fill(inertia_.begin(), inertia_.end(), 0.0);
  labels_valid_ = with_labels;
  if (with_labels) labels_.assign(size_t(problem_.k.count()), LabelValues(size_t(problem_.m), -1));
  accumulated_ = false;
}

void ChunkedRunBase::add_chunk_labels(int64_t first, const IterationResult& chunk) {
  if (chunk.per_k.size() != labels_.size())
    throw DeviceError("a chunk's run returned " + std::to_string(chunk.per_k.size()) + " K results, expected " +
                      std::to_string(labels_.size()));
  for (size_t index = 0; index < labels_.size(); ++index) {
    const auto& got = chunk.per_k[index].labels;
    if (first + int64_t(got.size()) > problem_.m)
      throw DeviceError("a chunk's run returned labels past the last point");
    std::copy(got.begin(), got.end(), labels_[index].begin() + first);
  }
}

StepSummary ChunkedRunBase::update(const UpdateOptions& options) {
  if (!accumulated_) throw UnsupportedError("update() of an out-of-core run before its accumulate()");
  if (options.empty != EmptyPolicy::Keep)
    throw UnsupportedError(std::string("--empty ") + to_string(options.empty) +
                           ": an out-of-core run keeps empty clusters' centroids (relocating one needs every point "
                           "at hand); use --empty keep");
  const KRange& ks = problem_.k;
  const int n = problem_.n;
  if (!options.active.empty() && options.active.size() != size_t(ks.count()))
    throw InputError("update: " + std::to_string(options.active.size()) + " active flags for " +
                     std::to_string(ks.count()) + " values of K");
  StepSummary summary;
  for (int k = ks.kmin; k <= ks.kmax; ++k) {
    const int index = k - ks.kmin;
    KStepSummary s;
    s.k = k;
    s.active = options.active.empty() || options.active[size_t(index)] != 0;
    s.inertia = inertia_[size_t(index)];
    const int offset = ks.slot_offset(k);
    for (int c = 0; c < k; ++c) {
      const size_t slot = size_t(offset + c);
      if (counts_[slot] == 0) {
        ++s.empty;
        continue;
      }
      if (!s.active) continue;
      // As every in-core update: the reciprocal of the count, then one product per value.
      const double inv = 1.0 / double(counts_[slot]);
      for (int d = 0; d < n; ++d) {
        const float updated = float(sums_[slot * n + d] * inv);
        const double diff = double(updated) - double(centroids_[slot * n + d]);
        s.shift += diff * diff;
        centroids_[slot * n + d] = updated;
      }
    }
    summary.per_k.push_back(s);
  }
  accumulated_ = false;
  push_centroids();
  return summary;
}

IterationResult ChunkedRunBase::read_back() {
  synchronize();
  const KRange& ks = problem_.k;
  const int n = problem_.n;
  IterationResult result;
  for (int k = ks.kmin; k <= ks.kmax; ++k) {
    const int index = k - ks.kmin;
    const int offset = ks.slot_offset(k);
    KResult r;
    r.k = k;
    r.centroids.assign(centroids_.begin() + size_t(offset) * n, centroids_.begin() + size_t(offset + k) * n);
    r.counts.assign(counts_.begin() + offset, counts_.begin() + offset + k);
    r.inertia = inertia_[size_t(index)];
    if (labels_valid_) r.labels = labels_[size_t(index)];
    result.per_k.push_back(std::move(r));
  }
  return result;
}

namespace {

// A CPU variant (its "device" is the host): one slot run; each chunk is copied into its
// buffer on all cores, accumulated, and its totals added on the host.
class HostChunkedRun : public ChunkedRunBase {
 public:
  HostChunkedRun(const Variant& variant, const Problem& problem, const ChunkSource& source, int64_t chunk_points,
                 const Params& params, const DeviceInfo& device)
      : ChunkedRunBase(problem, source, chunk_points) {
    Dataset none;
    none.m = chunk_points_;
    none.n = problem.n;
    run_ = variant.prepare(chunk_problem(problem, chunk_points_), none, params, device);
    if (!run_) throw DeviceError("variant " + variant.name() + " returned no prepared run");
  }

  ChunkedRunInfo info() const override {
    return {chunk_points_, chunks_, 1, "host", source_.description};
  }

  void accumulate(const AccumulateOptions& options) override {
    begin_step(options.store_labels);
    for (int64_t c = 0; c < chunks_; ++c) {
      const PointsSlot slot = run_->points_slot();
      if (slot.on_device) throw DeviceError("a CPU run's chunk buffer is on a device");
      const int64_t rows = chunk_rows(c);
      chunk_on_host(c, slot.points);
      run_->set_point_count(rows);
      run_->accumulate(options);
      const AccumulatorRefs refs = run_->accumulators();
      for (size_t j = 0; j < sums_.size(); ++j) sums_[j] += refs.sums[j];
      for (size_t s = 0; s < counts_.size(); ++s) counts_[s] += refs.counts[s];
      for (size_t k = 0; k < inertia_.size(); ++k) inertia_[k] += refs.inertia[k];
      if (options.store_labels) add_chunk_labels(chunk_first(c), run_->read_back());
    }
    end_step();
  }

  void synchronize() override { run_->synchronize(); }

 protected:
  void push_centroids() override { run_->set_centroids(centroids_); }

 private:
  std::unique_ptr<PreparedRun> run_;
};

}  // namespace
}  // namespace chunked

std::unique_ptr<ChunkedRun> prepare_chunked(const Variant& variant, const Problem& problem, const ChunkSource& source,
                                            int64_t chunk_points, const Params& params, const DeviceInfo& device) {
  if (chunk_points < 1) throw InputError("--chunk-points must be at least 1, got " + std::to_string(chunk_points));
  const Problem chunk = chunk_problem(problem, chunk_points);
  if (auto why = variant.can_implement(chunk, device))
    throw UnsupportedError(variant.name() + " cannot run out of core: " + *why);
  if (variant.runs_on_gpu())
    return chunked::prepare_gpu_chunked(variant, problem, source, chunk_points, params, device);
  return std::make_unique<chunked::HostChunkedRun>(variant, problem, source, chunk_points, params, device);
}

}  // namespace mk
