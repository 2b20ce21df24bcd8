#include "apps/fit/lloyd_loop.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "core/errors.hpp"

namespace mk {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <typename T>
void copy_out(std::vector<T>& to, const T* from, size_t count, bool on_device, cudaStream_t stream) {
  to.resize(count);
  if (count == 0) return;
  if (!on_device) {
    std::copy(from, from + count, to.begin());
    return;
  }
  const cudaError_t status = cudaMemcpyAsync(to.data(), from, count * sizeof(T), cudaMemcpyDeviceToHost, stream);
  if (status != cudaSuccess)
    throw DeviceError(std::string("copying the accumulators to the host: ") + cudaGetErrorString(status));
}

}  // namespace

HostAccumulators copy_accumulators(PreparedRun& run) {
  const AccumulatorRefs refs = run.accumulators();
  auto stream = static_cast<cudaStream_t>(refs.stream);
  HostAccumulators host;
  copy_out(host.sums, refs.sums, size_t(refs.slots) * size_t(refs.n), refs.on_device, stream);
  copy_out(host.counts, refs.counts, size_t(refs.slots), refs.on_device, stream);
  copy_out(host.inertia, refs.inertia, size_t(refs.k_count), refs.on_device, stream);
  if (refs.on_device) {
    const cudaError_t status = cudaStreamSynchronize(stream);
    if (status != cudaSuccess)
      throw DeviceError(std::string("copying the accumulators to the host: ") + cudaGetErrorString(status));
  }
  return host;
}

LoopOutcome run_to_convergence(PreparedRun& run, const KRange& k, int n, const std::vector<float>& initial,
                               const LoopSettings& settings) {
  LoopOutcome outcome;
  const int count = k.count();
  outcome.per_k.resize(size_t(count));
  for (int index = 0; index < count; ++index) outcome.per_k[size_t(index)].k = k.kmin + index;

  run.set_centroids(initial);
  UpdateOptions update;
  update.active.assign(size_t(count), 1);
  update.empty = settings.empty;
  update.seed = settings.seed;
  int moving = count;
  std::vector<double> last_inertia(size_t(count), 0.0);

  // A split step's one-time build (tensor-multik's sums kernels: 24.5 ms a step over a
  // 30-step fit at 325a8bc, against 0.55 ms for run's iteration) is not an iteration's cost.
  const auto prepare_start = std::chrono::steady_clock::now();
  run.prepare_split();
  outcome.prepare_seconds = seconds_since(prepare_start);
  run.expect_labels_read_back();  // the final pass reads labels back: its host memory readies meanwhile
  const auto iterations_start = std::chrono::steady_clock::now();
  for (int iteration = 1; iteration <= settings.max_iter && moving > 0; ++iteration) {
    const auto step_start = std::chrono::steady_clock::now();
    run.accumulate(AccumulateOptions{false, update.active});
    StepSummary step = run.update(update);
    ++outcome.steps;
    const std::vector<uint8_t> active_during_step = update.active;
    for (KStepSummary& ks : step.per_k) {
      const size_t index = size_t(ks.k - k.kmin);
      // A frozen K may have been left out of the pass: its inertia is the one it froze with.
      if (!update.active[index]) {
        ks.inertia = last_inertia[index];
        continue;
      }
      last_inertia[index] = ks.inertia;
      KFit& fit = outcome.per_k[index];
      ++fit.iterations;
      fit.last_shift = ks.shift;
      // scikit-learn: converged when the squared norm of the centre shift is <= tol's
      // threshold (with tol 0, when the centres stop moving: the step after the labels stop
      // changing, which is where its "strict convergence" stops too).
      // The rounding floor: with unchanged labels, atomics still move a centroid by an ULP or so.
      if (ks.shift <= std::max(settings.shift_threshold, settings.rounding_floor * double(ks.k) * double(n))) {
        fit.converged = true;
        update.active[index] = 0;
        --moving;
      }
    }
    outcome.step_seconds.push_back(seconds_since(step_start));
    if (settings.on_step) settings.on_step(iteration, step, active_during_step);
  }
  outcome.iteration_seconds = seconds_since(iterations_start);

  // The labels of the final centroids, and the sums the metrics need, in one more pass.
  const auto labels_start = std::chrono::steady_clock::now();
  run.accumulate(AccumulateOptions{true});
  run.synchronize();
  IterationResult final_pass = run.read_back();
  const HostAccumulators accumulators = copy_accumulators(run);
  outcome.labels_seconds = seconds_since(labels_start);

  for (int index = 0; index < count; ++index) {
    KFit& fit = outcome.per_k[size_t(index)];
    KResult& result = final_pass.per_k[size_t(index)];
    if (result.k != fit.k) throw DeviceError("read_back returned K=" + std::to_string(result.k) + " where " +
                                             std::to_string(fit.k) + " was expected");
    fit.inertia = accumulators.inertia[size_t(index)];
    fit.centroids = std::move(result.centroids);
    fit.labels = std::move(result.labels);
    const size_t offset = size_t(k.slot_offset(fit.k));
    fit.counts.assign(size_t(fit.k), 0);
    for (int c = 0; c < fit.k; ++c) fit.counts[size_t(c)] = int64_t(accumulators.counts[offset + size_t(c)]);
    fit.sums.assign(accumulators.sums.begin() + ptrdiff_t(offset * size_t(n)),
                    accumulators.sums.begin() + ptrdiff_t((offset + size_t(fit.k)) * size_t(n)));
  }
  return outcome;
}

}  // namespace mk
