// CPU paths of the K-choice passes (metric_passes.hpp): OpenMP over points, FP64 throughout.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "apps/fit/metric_passes.hpp"
#include "core/errors.hpp"
#include "datasets/counter_rng.hpp"
#include "datasets/generated_rows.hpp"
#include "datasets/row_cursor.hpp"

namespace mk {

std::vector<double> cluster_distance_sums_cpu(const Dataset& data, const KRange& k,
                                              const std::vector<const int32_t*>& labels,
                                              const std::vector<double>& means) {
  const int n = data.n;
  const int slots = k.sum();
  std::vector<std::vector<double>> partial(static_cast<size_t>(omp_get_max_threads()),
                                           std::vector<double>(size_t(slots), 0.0));
#pragma omp parallel
  {
    std::vector<double>& mine = partial[size_t(omp_get_thread_num())];
    RowCursor rows(data);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < data.m; ++i) {
      const float* x = rows.row(i);
      for (int kk = k.kmin; kk <= k.kmax; ++kk) {
        const int label = labels[size_t(kk - k.kmin)][i];
        const int slot = k.slot_offset(kk) + label;
        const double* mean = means.data() + size_t(slot) * n;
        double d2 = 0;
        for (int d = 0; d < n; ++d) {
          const double diff = double(x[d]) - mean[d];
          d2 += diff * diff;
        }
        mine[size_t(slot)] += std::sqrt(d2);
      }
    }
  }
  std::vector<double> total(static_cast<size_t>(slots), 0.0);
  for (const auto& p : partial)
    for (int s = 0; s < slots; ++s) total[size_t(s)] += p[size_t(s)];
  return total;
}

std::vector<int64_t> silhouette_sample(int64_t m, int64_t size, uint64_t seed) {
  std::vector<int64_t> sample;
  if (size >= m) {
    sample.resize(size_t(m));
    for (int64_t i = 0; i < m; ++i) sample[size_t(i)] = i;
    return sample;
  }
  // Floyd's algorithm: `size` distinct indices in `size` draws, whatever m is. Its own
  // seed mix keeps the sample independent of the seeding's draws from the same --seed.
  const CounterRng rng(mix64(seed ^ 0x73696c686f756574ULL), RandomStream::InitialSample);
  std::unordered_set<int64_t> chosen;
  chosen.reserve(size_t(size) * 2);
  for (int64_t j = m - size; j < m; ++j) {
    const int64_t t = int64_t(rng.below(uint64_t(j), uint64_t(j) + 1));
    chosen.insert(chosen.count(t) ? j : t);
  }
  sample.assign(chosen.begin(), chosen.end());
  std::sort(sample.begin(), sample.end());
  return sample;
}

SampleLabels gather_sample(const Dataset& data, const std::vector<int64_t>& sample, const KRange& k,
                           const std::vector<const int32_t*>& labels) {
  SampleLabels out;
  out.s = int64_t(sample.size());
  out.n = data.n;
  out.k = k;
  out.points.resize(sample.size() * size_t(data.n));
  out.labels.resize(size_t(k.count()) * sample.size());
  copy_rows_at(data, sample, out.points.data());
  for (size_t j = 0; j < sample.size(); ++j) {
    for (int index = 0; index < k.count(); ++index)
      out.labels[size_t(index) * sample.size() + j] = labels[size_t(index)][sample[j]];
  }
  return out;
}

std::vector<std::optional<double>> sample_silhouettes_cpu(const SampleLabels& sample) {
  const int64_t s = sample.s;
  const int n = sample.n;
  const KRange& k = sample.k;
  const int count = k.count();
  // Cluster sizes within the sample, per K.
  std::vector<std::vector<int64_t>> sizes(static_cast<size_t>(count));
  std::vector<std::optional<double>> result(static_cast<size_t>(count));
  std::vector<uint8_t> defined(static_cast<size_t>(count), 0);
  for (int index = 0; index < count; ++index) {
    const int kk = k.kmin + index;
    sizes[size_t(index)].assign(size_t(kk), 0);
    for (int64_t j = 0; j < s; ++j) ++sizes[size_t(index)][size_t(sample.labels[size_t(index) * s + j])];
    const int64_t present = std::count_if(sizes[size_t(index)].begin(), sizes[size_t(index)].end(),
                                          [](int64_t size) { return size > 0; });
    defined[size_t(index)] = present >= 2 && present <= s - 1;
  }
  std::vector<std::vector<double>> partial(static_cast<size_t>(omp_get_max_threads()),
                                           std::vector<double>(size_t(count), 0.0));
#pragma omp parallel
  {
    std::vector<double>& mine = partial[size_t(omp_get_thread_num())];
    std::vector<double> distance(static_cast<size_t>(s));
    std::vector<double> sums;
#pragma omp for schedule(dynamic, 16)
    for (int64_t i = 0; i < s; ++i) {
      const float* xi = sample.points.data() + size_t(i) * n;
      for (int64_t j = 0; j < s; ++j) {
        const float* xj = sample.points.data() + size_t(j) * n;
        double d2 = 0;
        for (int d = 0; d < n; ++d) {
          const double diff = double(xi[d]) - double(xj[d]);
          d2 += diff * diff;
        }
        distance[size_t(j)] = std::sqrt(d2);
      }
      for (int index = 0; index < count; ++index) {
        if (!defined[size_t(index)]) continue;
        const int kk = k.kmin + index;
        const int32_t* label = sample.labels.data() + size_t(index) * s;
        const std::vector<int64_t>& size = sizes[size_t(index)];
        sums.assign(size_t(kk), 0.0);
        for (int64_t j = 0; j < s; ++j) sums[size_t(label[j])] += distance[size_t(j)];
        const int own = label[i];
        if (size[size_t(own)] < 2) continue;  // alone in its cluster: 0
        const double a = sums[size_t(own)] / double(size[size_t(own)] - 1);
        double b = std::numeric_limits<double>::infinity();
        for (int c = 0; c < kk; ++c)
          if (c != own && size[size_t(c)] > 0) b = std::min(b, sums[size_t(c)] / double(size[size_t(c)]));
        const double larger = std::max(a, b);
        if (larger > 0) mine[size_t(index)] += (b - a) / larger;
      }
    }
  }
  for (int index = 0; index < count; ++index) {
    if (!defined[size_t(index)]) continue;
    double total = 0;
    for (const auto& p : partial) total += p[size_t(index)];
    result[size_t(index)] = total / double(s);
  }
  return result;
}

}  // namespace mk
