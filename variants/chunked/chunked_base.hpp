#pragma once
// What the CPU and GPU chunked runs share (variants/chunked/chunked_run.hpp): the host
// totals of one out-of-core step, the division that turns them into centroids exactly as an
// in-core run divides (float(sum · (1/count)), an empty cluster keeps its centroid), the
// per-K summary, and the labels gathered chunk by chunk when asked for (verification).
#include <cstdint>
#include <vector>

#include "variants/chunked/chunked_run.hpp"

namespace mk::chunked {

class ChunkedRunBase : public ChunkedRun {
 public:
  ChunkedRunBase(const Problem& problem, const ChunkSource& source, int64_t chunk_points);

  void set_centroids(const std::vector<float>& packed) override;
  void iterate(bool store_labels) override;
  AccumulatorRefs accumulators() override;
  // Frozen Ks (UpdateOptions::active) and the keep policy; the other empty-cluster policies
  // need random access to every point, which an out-of-core run does not have
  // (UnsupportedError).
  StepSummary update(const UpdateOptions& options) override;
  IterationResult read_back() override;

 protected:
  virtual void push_centroids() = 0;  // centroids_ to every slot run
  int64_t chunk_first(int64_t chunk) const { return chunk * chunk_points_; }
  int64_t chunk_rows(int64_t chunk) const;
  const float* chunk_rows_at(int64_t chunk) const { return source_.rows + chunk_first(chunk) * source_.n; }
  // The chunk's rows into host `out`: copied on all cores, or generated (a generator source).
  void chunk_on_host(int64_t chunk, float* out) const;
  // Start of an accumulate(): host totals zeroed, label arrays sized when asked for.
  void begin_step(bool with_labels);
  // A slot run's labels for the chunk starting at `first` (its read_back after accumulate).
  void add_chunk_labels(int64_t first, const IterationResult& chunk);
  void end_step() { accumulated_ = true; }

  Problem problem_;  // all M points
  ChunkSource source_;
  int64_t chunk_points_ = 0;
  int64_t chunks_ = 0;
  std::vector<float> centroids_;  // packed per KRange::slot_offset
  std::vector<double> sums_;      // slots × n: the step's totals over every chunk
  std::vector<unsigned long long> counts_;
  std::vector<double> inertia_;  // one per K
  std::vector<LabelValues> labels_;  // per K, M each, when the step stored them
  bool labels_valid_ = false;
  bool accumulated_ = false;
};

// Copies `count` floats on all cores (the staging copy of a chunk; the CPU runs' chunk copy).
void copy_floats_parallel(float* destination, const float* source, size_t count);

// The GPU chunked run (chunked_gpu.cu).
std::unique_ptr<ChunkedRun> prepare_gpu_chunked(const Variant& variant, const Problem& problem,
                                                const ChunkSource& source, int64_t chunk_points, const Params& params,
                                                const DeviceInfo& device);

}  // namespace mk::chunked
