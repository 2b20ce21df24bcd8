// The streaming k-means on the CPU (OpenMP on all cores): chunks reduced in parallel, one a
// thread; the reduce phase's k-means++ and Lloyd, and the final pass, parallel over points.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/stream/sharp_math.hpp"
#include "apps/stream/stream.hpp"
#include "core/errors.hpp"
#include "datasets/row_cursor.hpp"

namespace mk::stream {
namespace {

using seeding::squared_distance;

// The hot loops with and without FMA, picked at load time (as cpu-openmp and the k-means++ CPU
// path do): the same value either way.
// One string per clone: "arch=x86-64-v3" (AVX2 with FMA). "avx2,fma" made two clones, and the
// AVX2 one, picked first, called libm's fmaf for every dimension (36 % of k-means||'s CPU time).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define MKBENCH_STREAM_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MKBENCH_STREAM_CLONES
#endif

// A draw is located by a walk over the sums of parts of this many points, then inside one part.
constexpr int64_t kPart = 1024;
// Sums over the points are split into at most this many fixed parts, added in order: the same
// bits for any thread count.
constexpr int64_t kMaxParts = 256;
constexpr int64_t kSmallPart = 64;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Sampling {
  const float* points;
  int64_t rows;
  int n;
  const float* weights;  // null: every weight 1
  int rounds;
  int per_round;
  int candidates;  // greedy k-means++ (per_round 1): candidates drawn after the first round
  Draws draws;
  bool parallel;  // OpenMP over the points (the reduce phase); a chunk runs on its own thread
};

struct Scratch {
  std::vector<int64_t> chosen;
  std::vector<float> d2;
  std::vector<int32_t> label;
  std::vector<uint64_t> part_sums;
  std::vector<float> rows;  // a chunk of a data set made on demand, generated here
};

float weight_of(const Sampling& s, int64_t i) { return s.weights ? s.weights[i] : 1.0f; }

// Round 0 samples w (D² counts as 1), later rounds w·D².
MKBENCH_STREAM_CLONES
void part_sums(const Sampling& s, const Scratch& x, int round, const Quantizer& q, std::vector<uint64_t>& sums) {
  const int64_t parts = int64_t(sums.size());
#pragma omp parallel for schedule(static) if (s.parallel)
  for (int64_t p = 0; p < parts; ++p) {
    uint64_t total = 0;
    const int64_t end = std::min(s.rows, (p + 1) * kPart);
    for (int64_t i = p * kPart; i < end; ++i)
      total += q(round == 0 ? weight_of(s, i) : weighted_value(weight_of(s, i), x.d2[size_t(i)]));
    sums[size_t(p)] = total;
  }
}

int64_t locate(const Sampling& s, const Scratch& x, int round, const Quantizer& q, uint64_t target) {
  uint64_t before = 0;
  for (size_t p = 0; p < x.part_sums.size(); ++p) {
    if (before + x.part_sums[p] <= target) {
      before += x.part_sums[p];
      continue;
    }
    const int64_t end = std::min(s.rows, int64_t(p + 1) * kPart);
    for (int64_t i = int64_t(p) * kPart; i < end; ++i) {
      before += q(round == 0 ? weight_of(s, i) : weighted_value(weight_of(s, i), x.d2[size_t(i)]));
      if (before > target) return i;
    }
    break;
  }
  throw std::logic_error("streaming k-means: a draw fell outside the weights it was drawn from");
}

// D² and the nearest chosen point after round `round`'s points; returns the largest w·D².
MKBENCH_STREAM_CLONES
float apply_round(const Sampling& s, Scratch& x, int round) {
  const int first = round * s.per_round;
  float largest = 0.0f;
#pragma omp parallel for schedule(static) reduction(max : largest) if (s.parallel)
  for (int64_t i = 0; i < s.rows; ++i) {
    const float* p = s.points + size_t(i) * size_t(s.n);
    float best = x.d2[size_t(i)];
    int32_t label = x.label[size_t(i)];
    for (int b = 0; b < s.per_round; ++b) {
      const float dist = squared_distance(p, s.points + size_t(x.chosen[size_t(first + b)]) * size_t(s.n), s.n);
      if (dist < best) {
        best = dist;
        label = first + b;
      }
    }
    x.d2[size_t(i)] = best;
    x.label[size_t(i)] = label;
    largest = std::max(largest, weighted_value(weight_of(s, i), best));
  }
  return largest;
}

// Σ q(w·min(D², d²(x, candidate))): the potential if `candidate` were chosen.
MKBENCH_STREAM_CLONES
uint64_t potential_with(const Sampling& s, const Scratch& x, int64_t candidate, const Quantizer& q) {
  const int64_t parts = int64_t(x.part_sums.size());
  std::vector<uint64_t> sums(size_t(parts), 0);
  const float* c = s.points + size_t(candidate) * size_t(s.n);
#pragma omp parallel for schedule(static) if (s.parallel)
  for (int64_t p = 0; p < parts; ++p) {
    uint64_t total = 0;
    const int64_t end = std::min(s.rows, (p + 1) * kPart);
    for (int64_t i = p * kPart; i < end; ++i) {
      const float d2 = std::min(x.d2[size_t(i)], squared_distance(s.points + size_t(i) * size_t(s.n), c, s.n));
      total += q(weighted_value(weight_of(s, i), d2));
    }
    sums[size_t(p)] = total;
  }
  uint64_t total = 0;
  for (uint64_t part : sums) total += part;
  return total;
}

// sharp_math.hpp's rounds of D² sampling: x.chosen gets rounds·per_round point indices, x.label
// every point's nearest (its index in x.chosen).
void sample_rounds(const Sampling& s, Scratch& x) {
  x.chosen.assign(size_t(s.rounds) * size_t(s.per_round), 0);
  x.d2.assign(size_t(s.rows), std::numeric_limits<float>::infinity());
  x.label.assign(size_t(s.rows), -1);
  x.part_sums.assign(size_t((s.rows + kPart - 1) / kPart), 0);
  float largest_weight = 0.0f;
  for (int64_t i = 0; i < s.rows; ++i) largest_weight = std::max(largest_weight, weight_of(s, i));
  Quantizer q = quantizer_for(largest_weight, s.rows);
  for (int round = 0; round < s.rounds; ++round) {
    part_sums(s, x, round, q, x.part_sums);
    uint64_t total = 0;
    for (uint64_t part : x.part_sums) total += part;
    const bool greedy = round > 0 && s.candidates > 1;
    const int draws = greedy ? s.candidates : s.per_round;
    std::vector<int64_t> drawn(static_cast<size_t>(draws));
    for (int b = 0; b < draws; ++b) {
      const uint64_t index = round_draw_index(round, draws, b);
      // Every weight 0 (every point already chosen, as far as the weights resolve): uniform.
      drawn[size_t(b)] =
          total == 0 ? int64_t(s.draws.below(index, uint64_t(s.rows))) : locate(s, x, round, q, s.draws.below(index, total));
    }
    if (greedy) {  // scikit-learn's greedy k-means++: the candidate of lowest potential (first on a tie)
      int best = 0;
      uint64_t lowest = 0;
      for (int b = 0; b < draws; ++b) {
        const uint64_t potential = potential_with(s, x, drawn[size_t(b)], q);
        if (b == 0 || potential < lowest) {
          best = b;
          lowest = potential;
        }
      }
      x.chosen[size_t(round)] = drawn[size_t(best)];
    } else {
      for (int b = 0; b < draws; ++b) x.chosen[size_t(round * s.per_round + b)] = drawn[size_t(b)];
    }
    const float largest = apply_round(s, x, round);
    if (round == 0) {
      if (!std::isfinite(largest))
        throw InputError("--stream: a weighted squared distance overflows float32 (scale the data)");
      q = quantizer_for(largest, s.rows);
    }
  }
}

// Chunk `chunk`'s S intermediate centres and weights into its slots.
void reduce_chunk(const Dataset& data, int64_t chunk, int64_t chunk_points, int k, int per_round, uint64_t seed,
                  float* slot_points, float* slot_weights, Scratch& scratch) {
  const int n = data.n;
  const int64_t slots = int64_t(k) * per_round;
  const int64_t begin = chunk * chunk_points;
  const int64_t rows = std::min(chunk_points, data.m - begin);
  const float* points = nullptr;
  if (data.is_on_demand()) {
    scratch.rows.resize(size_t(rows) * size_t(n));
    copy_rows(data, begin, begin + rows, scratch.rows.data());
    points = scratch.rows.data();
  } else {
    points = data.row(begin);
  }
  if (rows <= slots) {  // a short last chunk: its points are their own centres
    std::memcpy(slot_points, points, size_t(rows) * size_t(n) * sizeof(float));
    std::fill(slot_weights, slot_weights + rows, 1.0f);
    return;
  }
  const Sampling s{points, rows, n, nullptr, k, per_round, 1, stage_draws(seed, chunk), false};
  sample_rounds(s, scratch);
  std::vector<int64_t> counts(size_t(slots), 0);
  for (int64_t i = 0; i < rows; ++i) ++counts[size_t(scratch.label[size_t(i)])];
  for (int64_t j = 0; j < slots; ++j) {
    std::memcpy(slot_points + size_t(j) * n, points + size_t(scratch.chosen[size_t(j)]) * n, size_t(n) * sizeof(float));
    slot_weights[j] = float(counts[size_t(j)]);  // at most C <= 2^24 points: exact
  }
}

// Nearest of k centres (the lowest index on a tie) and its squared distance.
MKBENCH_STREAM_CLONES
inline int nearest(const float* p, const float* centres, int k, int n, float& best) {
  best = std::numeric_limits<float>::infinity();
  int label = 0;
  for (int c = 0; c < k; ++c) {
    const float dist = squared_distance(p, centres + size_t(c) * n, n);
    if (dist < best) {
      best = dist;
      label = c;
    }
  }
  return label;
}

// One weighted Lloyd pass over the intermediate centres: per cluster Σ w·x, Σ w, Σ w·d².
MKBENCH_STREAM_CLONES
std::vector<double> lloyd_sums(const std::vector<float>& points, const std::vector<float>& weights, int n,
                               const std::vector<float>& centres, int k) {
  const int64_t count = int64_t(weights.size());
  // Small parts: the intermediate set can be a few thousand points (Fashion-MNIST at K = 10:
  // 5460), each costing K·N; parts of 4096 left one core doing all of the reduce phase.
  const size_t stride = size_t(k) * (size_t(n) + 2);
  // ... and at most 256 MiB of partial sums.
  const int64_t parts = std::max<int64_t>(
      1, std::min({kMaxParts, count / kSmallPart, int64_t((size_t(32) << 20) / stride)}));
  std::vector<double> partial(size_t(parts) * stride, 0.0);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t part = 0; part < parts; ++part) {
    double* sums = partial.data() + size_t(part) * stride;
    for (int64_t i = count * part / parts; i < count * (part + 1) / parts; ++i) {
      const float w = weights[size_t(i)];
      if (w == 0) continue;
      const float* p = points.data() + size_t(i) * n;
      float d2 = 0;
      const int c = nearest(p, centres.data(), k, n, d2);
      double* s = sums + size_t(c) * (size_t(n) + 2);
      for (int d = 0; d < n; ++d) s[d] += double(w) * double(p[d]);
      s[n] += double(w);
      s[n + 1] += double(w) * double(d2);
    }
  }
  std::vector<double> sums(stride, 0.0);
  for (int64_t part = 0; part < parts; ++part)
    for (size_t e = 0; e < stride; ++e) sums[e] += partial[size_t(part) * stride + e];
  return sums;
}

// Labels and Σ d² of the final centres over the whole data.
MKBENCH_STREAM_CLONES
double final_pass(const Dataset& data, const std::vector<float>& centres, int k, std::vector<int32_t>* labels) {
  const int64_t parts = std::max<int64_t>(1, std::min(kMaxParts, data.m / kSmallPart));
  std::vector<double> partial(size_t(parts), 0.0);
  if (labels) labels->assign(size_t(data.m), 0);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t part = 0; part < parts; ++part) {
    double sum = 0;
    RowCursor rows(data);
    for (int64_t i = data.m * part / parts; i < data.m * (part + 1) / parts; ++i) {
      float d2 = 0;
      const int c = nearest(rows.row(i), centres.data(), k, data.n, d2);
      if (labels) (*labels)[size_t(i)] = c;
      sum += double(d2);
    }
    partial[size_t(part)] = sum;
  }
  double inertia = 0;
  for (double part : partial) inertia += part;
  return inertia;
}

// The reduce phase on the host (the CPU path): weighted k-means++ then weighted Lloyd.
void reduce_on_host(StreamResult& result, int n, const StreamSettings& settings) {
  const int k = settings.k;
  const int64_t count = result.intermediate;
  result.tol_threshold =
      weighted_tolerance(result.intermediate_points.data(), result.intermediate_weights.data(), count, n, settings.tol);
  for (int restart = 0; restart < settings.restarts; ++restart) {
    const Sampling s{result.intermediate_points.data(), count, n, result.intermediate_weights.data(), k, 1,
                     greedy_candidates(k), stage_draws(settings.seed, reduce_stage(restart)), true};
    Scratch scratch;
    sample_rounds(s, scratch);
    std::vector<float> centres(size_t(k) * n);
    for (int c = 0; c < k; ++c)
      std::memcpy(centres.data() + size_t(c) * n,
                  result.intermediate_points.data() + size_t(scratch.chosen[size_t(c)]) * n, size_t(n) * sizeof(float));
    int iterations = 0;
    bool converged = false;
    while (iterations < settings.max_iter && !converged) {
      const std::vector<double> sums = lloyd_sums(result.intermediate_points, result.intermediate_weights, n, centres, k);
      ++iterations;
      converged = weighted_centres_from_sums(sums, k, n, centres) <= result.tol_threshold;
    }
    const double inertia =
        weighted_inertia(lloyd_sums(result.intermediate_points, result.intermediate_weights, n, centres, k), k, n);
    if (restart == 0 || inertia < result.reduce_inertia) {
      result.reduce_inertia = inertia;
      result.restart = restart;
      result.centroids = std::move(centres);
      result.lloyd_iterations = iterations;
      result.converged = converged;
    }
  }
}

}  // namespace

StreamResult stream_fit_cpu(const Dataset& data, const StreamSettings& settings) {
  check_stream_request(data, settings);
  StreamResult result;
  result.path = "cpu-openmp";
  const int n = data.n;
  const int k = settings.k;
  result.per_round = draws_per_round(k);
  result.chunk_points = chunk_size(settings, data.m);
  result.chunks = (data.m + result.chunk_points - 1) / result.chunk_points;
  const int64_t slots = int64_t(k) * result.per_round;
  result.intermediate = result.chunks * slots;

  auto start = std::chrono::steady_clock::now();
  result.intermediate_points.assign(size_t(result.intermediate) * n, 0.0f);
  result.intermediate_weights.assign(size_t(result.intermediate), 0.0f);
  result.seconds.setup = seconds_since(start);

  start = std::chrono::steady_clock::now();
#pragma omp parallel
  {
    Scratch scratch;
#pragma omp for schedule(dynamic, 1)
    for (int64_t chunk = 0; chunk < result.chunks; ++chunk)
      reduce_chunk(data, chunk, result.chunk_points, k, result.per_round, settings.seed,
                   result.intermediate_points.data() + size_t(chunk * slots) * n,
                   result.intermediate_weights.data() + size_t(chunk * slots), scratch);
  }
  result.seconds.chunks = seconds_since(start);
  for (float w : result.intermediate_weights) result.intermediate_weight_check += w;

  start = std::chrono::steady_clock::now();
  reduce_on_host(result, n, settings);
  result.seconds.reduce = seconds_since(start);

  start = std::chrono::steady_clock::now();
  result.inertia = final_pass(data, result.centroids, k, settings.keep_labels ? &result.labels : nullptr);
  result.seconds.final_pass = seconds_since(start);
  return result;
}

}  // namespace mk::stream
