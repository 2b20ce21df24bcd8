#include "apps/fit/weighted_lloyd.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include "core/errors.hpp"
#include "variants/common/host_update.hpp"

namespace mk {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The points are split into at most this many fixed parts, each summed on its own and the
// parts added in order: the same bits for any thread count.
constexpr int64_t kMaxParts = 64;
constexpr int64_t kMinPartPoints = 4096;

struct Pass {
  IterationResult result;
  std::vector<const int32_t*> labels;  // per K
  std::vector<float> centroids;        // packed per slot
};

// One assignment by the variant, with labels, against its current centroids.
Pass assign(PreparedRun& run, const KRange& k, int n) {
  run.accumulate(AccumulateOptions{true});
  run.synchronize();
  Pass pass;
  pass.result = run.read_back();
  pass.centroids.assign(size_t(k.sum()) * size_t(n), 0.0f);
  for (const KResult& r : pass.result.per_k) {
    if (r.labels.empty()) throw DeviceError("a weighted fit needs labels, and K=" + std::to_string(r.k) +
                                            " read back none");
    std::copy(r.centroids.begin(), r.centroids.end(), pass.centroids.begin() + ptrdiff_t(size_t(k.slot_offset(r.k)) * n));
    pass.labels.push_back(r.labels.data());
  }
  return pass;
}

}  // namespace

WeightedSums weighted_sums(const Dataset& data, const std::vector<float>& weights, const KRange& k,
                           const std::vector<const int32_t*>& labels, const std::vector<float>& centroids) {
  const int n = data.n;
  const int64_t m = data.m;
  const int slots = k.sum();
  const int count = k.count();
  const int64_t parts = std::max<int64_t>(1, std::min(kMaxParts, m / kMinPartPoints));
  const size_t stride = size_t(slots) * size_t(2 * n + 2) + size_t(2 * count);  // one part's doubles
  std::vector<double> partial(size_t(parts) * stride, 0.0);
  std::vector<int64_t> part_counts(size_t(parts) * size_t(slots), 0);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t part = 0; part < parts; ++part) {
    double* sums = partial.data() + size_t(part) * stride;
    double* plain = sums + size_t(slots) * n;
    double* weight = plain + size_t(slots) * n;
    double* inertia = weight + slots;
    double* point_inertia = inertia + count;
    int64_t* counts = part_counts.data() + size_t(part) * slots;
    const int64_t begin = m * part / parts, end = m * (part + 1) / parts;
    for (int index = 0; index < count; ++index) {
      const int kk = k.kmin + index;
      const int base = k.slot_offset(kk);
      const int32_t* label = labels[size_t(index)];
      for (int64_t i = begin; i < end; ++i) {
        const int c = label[i];
        if (c < 0 || c >= kk) continue;  // checked after the loop
        const size_t slot = size_t(base + c);
        const double w = double(weights[size_t(i)]);
        const float* x = data.row(i);
        const float* centre = centroids.data() + slot * n;
        double d2 = 0;
        for (int d = 0; d < n; ++d) {
          const double diff = double(x[d]) - double(centre[d]);
          d2 += diff * diff;
          sums[slot * n + d] += w * double(x[d]);
          plain[slot * n + d] += double(x[d]);
        }
        weight[slot] += w;
        counts[slot] += 1;
        inertia[index] += w * d2;
        point_inertia[index] += d2;
      }
    }
  }
  for (int index = 0; index < count; ++index)
    for (int64_t i = 0; i < m; ++i) {
      const int c = labels[size_t(index)][i];
      if (c < 0 || c >= k.kmin + index)
        throw DeviceError("label " + std::to_string(c) + " of point " + std::to_string(i) + " is outside K=" +
                          std::to_string(k.kmin + index));
    }
  WeightedSums out;
  out.sums.assign(size_t(slots) * n, 0.0);
  out.plain_sums.assign(size_t(slots) * n, 0.0);
  out.weight.assign(size_t(slots), 0.0);
  out.counts.assign(size_t(slots), 0);
  out.inertia.assign(size_t(count), 0.0);
  out.point_inertia.assign(size_t(count), 0.0);
  for (int64_t part = 0; part < parts; ++part) {
    const double* p = partial.data() + size_t(part) * stride;
    for (size_t e = 0; e < size_t(slots) * n; ++e) out.sums[e] += p[e];
    p += size_t(slots) * n;
    for (size_t e = 0; e < size_t(slots) * n; ++e) out.plain_sums[e] += p[e];
    p += size_t(slots) * n;
    for (int s = 0; s < slots; ++s) out.weight[size_t(s)] += p[s];
    p += slots;
    for (int index = 0; index < count; ++index) out.inertia[size_t(index)] += p[index];
    p += count;
    for (int index = 0; index < count; ++index) out.point_inertia[size_t(index)] += p[index];
    for (int s = 0; s < slots; ++s) out.counts[size_t(s)] += part_counts[size_t(part) * slots + size_t(s)];
  }
  return out;
}

namespace {

// The update of one step on the host (host_update.cpp's, with weights): frozen Ks untouched,
// the empty policy applied to the weighted sums, then Σ w·x / Σ w.
StepSummary weighted_update(const Dataset& data, const std::vector<float>& weights, const KRange& k,
                            WeightedSums& acc, std::vector<float>& centroids, const UpdateOptions& options,
                            uint64_t step) {
  const int n = data.n;
  StepSummary summary;
  for (int kk = k.kmin; kk <= k.kmax; ++kk) {
    const int index = kk - k.kmin;
    const int base = k.slot_offset(kk);
    KStepSummary ks;
    ks.k = kk;
    ks.inertia = acc.inertia[size_t(index)];
    ks.active = options.active.empty() || options.active[size_t(index)] != 0;
    if (!ks.active) {
      summary.per_k.push_back(ks);
      continue;
    }
    std::vector<int> empty;
    for (int c = 0; c < kk; ++c)
      if (acc.weight[size_t(base + c)] == 0) empty.push_back(base + c);
    ks.empty = int(empty.size());
    // A relocated cluster's centroid is its point itself (Σ w·x / Σ w with one point, and
    // defined when that point weighs 0).
    std::vector<int> moved_to;
    if (!empty.empty() && options.empty == EmptyPolicy::Farthest) {
      // scikit-learn's _relocate_empty_clusters: the farthest points by unweighted distance to
      // their centroid before this update take their weight with them.
      const auto far = farthest_points(data.points(), data.m, n, centroids.data() + size_t(base) * n, kk,
                                       int(empty.size()));
      for (size_t j = 0; j < far.size(); ++j) {
        const float* x = data.row(far[j].index);
        const double w = double(weights[size_t(far[j].index)]);
        const int from = base + far[j].label, to = empty[j];
        for (int d = 0; d < n; ++d) {
          acc.sums[size_t(from) * n + d] -= w * double(x[d]);
          acc.sums[size_t(to) * n + d] = w * double(x[d]);
        }
        acc.weight[size_t(from)] -= w;
        acc.weight[size_t(to)] = w;
        for (int d = 0; d < n; ++d) {
          const double diff = double(x[d]) - double(centroids[size_t(to) * n + d]);
          ks.shift += diff * diff;
          centroids[size_t(to) * n + d] = x[d];
        }
        moved_to.push_back(to);
        ++ks.relocated;
      }
    } else if (!empty.empty() && options.empty == EmptyPolicy::Random) {
      for (int slot : empty) {
        const float* x = data.row(random_relocation_point(options.seed, step, slot, data.m));
        for (int d = 0; d < n; ++d) {
          const double diff = double(x[d]) - double(centroids[size_t(slot) * n + d]);
          ks.shift += diff * diff;
          centroids[size_t(slot) * n + d] = x[d];
        }
        moved_to.push_back(slot);
        ++ks.relocated;
      }
    }
    for (int c = 0; c < kk; ++c) {
      const int slot = base + c;
      const double w = acc.weight[size_t(slot)];
      if (!(w > 0) || std::find(moved_to.begin(), moved_to.end(), slot) != moved_to.end()) continue;
      for (int d = 0; d < n; ++d) {
        const float updated = float(acc.sums[size_t(slot) * n + d] / w);
        const double diff = double(updated) - double(centroids[size_t(slot) * n + d]);
        ks.shift += diff * diff;
        centroids[size_t(slot) * n + d] = updated;
      }
    }
    summary.per_k.push_back(ks);
  }
  return summary;
}

}  // namespace

LoopOutcome run_weighted_to_convergence(PreparedRun& run, const KRange& k, const Dataset& data,
                                        const std::vector<float>& weights, const std::vector<float>& initial,
                                        const LoopSettings& settings) {
  if (weights.size() != size_t(data.m))
    throw InputError(std::to_string(weights.size()) + " sample weights for " + std::to_string(data.m) + " points");
  const int n = data.n;
  LoopOutcome outcome;
  const int count = k.count();
  outcome.per_k.resize(size_t(count));
  for (int index = 0; index < count; ++index) outcome.per_k[size_t(index)].k = k.kmin + index;

  std::vector<float> centroids = initial;
  run.set_centroids(centroids);
  UpdateOptions update;
  update.active.assign(size_t(count), 1);
  update.empty = settings.empty;
  update.seed = settings.seed;
  int moving = count;

  const auto iterations_start = std::chrono::steady_clock::now();
  for (int iteration = 1; iteration <= settings.max_iter && moving > 0; ++iteration) {
    const auto step_start = std::chrono::steady_clock::now();
    const Pass pass = assign(run, k, n);
    WeightedSums acc = weighted_sums(data, weights, k, pass.labels, centroids);
    const StepSummary step = weighted_update(data, weights, k, acc, centroids, update, uint64_t(iteration - 1));
    run.set_centroids(centroids);
    ++outcome.steps;
    const std::vector<uint8_t> active_during_step = update.active;
    for (const KStepSummary& ks : step.per_k) {
      const size_t index = size_t(ks.k - k.kmin);
      if (!update.active[index]) continue;
      KFit& fit = outcome.per_k[index];
      ++fit.iterations;
      fit.last_shift = ks.shift;
      if (ks.shift <= settings.shift_threshold) {  // as run_to_convergence (scikit-learn's test)
        fit.converged = true;
        update.active[index] = 0;
        --moving;
      }
    }
    outcome.step_seconds.push_back(seconds_since(step_start));
    if (settings.on_step) settings.on_step(iteration, step, active_during_step);
  }
  outcome.iteration_seconds = seconds_since(iterations_start);

  const auto labels_start = std::chrono::steady_clock::now();
  Pass final_pass = assign(run, k, n);
  const WeightedSums acc = weighted_sums(data, weights, k, final_pass.labels, centroids);
  outcome.labels_seconds = seconds_since(labels_start);
  for (int index = 0; index < count; ++index) {
    KFit& fit = outcome.per_k[size_t(index)];
    KResult& result = final_pass.result.per_k[size_t(index)];
    const size_t offset = size_t(k.slot_offset(fit.k));
    fit.inertia = acc.inertia[size_t(index)];
    fit.point_inertia = acc.point_inertia[size_t(index)];
    fit.centroids.assign(centroids.begin() + ptrdiff_t(offset * n), centroids.begin() + ptrdiff_t((offset + fit.k) * n));
    fit.labels = std::move(result.labels);
    fit.counts.assign(acc.counts.begin() + ptrdiff_t(offset), acc.counts.begin() + ptrdiff_t(offset + fit.k));
    fit.sums.assign(acc.plain_sums.begin() + ptrdiff_t(offset * n),
                    acc.plain_sums.begin() + ptrdiff_t((offset + fit.k) * n));
  }
  return outcome;
}

}  // namespace mk
