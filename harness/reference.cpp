#include "harness/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include <Eigen/Dense>

#include "core/errors.hpp"
#include "variants/batched/batched_variant.hpp"

namespace mk {

namespace {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr int64_t kChunk = 2048;

// Exact squared distance in FP64, used to judge whether a mismatch is a tie.
double squared_distance(const Dataset& data, int64_t i, const double* centroid) {
  double total = 0;
  for (int d = 0; d < data.n; ++d) {
    double diff = double(data.at(i, d)) - centroid[d];
    total += diff * diff;
  }
  return total;
}

// The spacing of FP32 numbers at |value|: what one rounding of a float result can cost twice.
double float_spacing(double value) {
  const float magnitude = float(std::min(std::abs(value), double(std::numeric_limits<float>::max())));
  return double(std::nextafter(magnitude, std::numeric_limits<float>::infinity())) - double(magnitude);
}

}  // namespace

std::vector<double> column_spread(const Dataset& data) {
  const int n = data.n;
  const int64_t m = data.m;
  std::vector<double> mean(size_t(n), 0.0), spread(size_t(n), 0.0);
  if (m == 0) return spread;
  // Sums over fixed chunks of rows, merged in chunk order: the same result for any thread count.
  const int64_t chunks = (m + kChunk - 1) / kChunk;
  std::vector<double> partial(size_t(chunks) * n);
  auto pass = [&](const std::vector<double>* centre, std::vector<double>& total) {
#pragma omp parallel for schedule(static)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      double* sums = partial.data() + size_t(chunk) * n;
      std::fill(sums, sums + n, 0.0);
      for (int64_t i = chunk * kChunk; i < std::min(m, (chunk + 1) * kChunk); ++i)
        for (int d = 0; d < n; ++d) {
          const double value = double(data.at(i, d)) - (centre ? (*centre)[size_t(d)] : 0.0);
          sums[d] += centre ? value * value : value;
        }
    }
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int d = 0; d < n; ++d) total[size_t(d)] += partial[size_t(chunk) * n + d];
  };
  pass(nullptr, mean);
  for (double& value : mean) value /= double(m);
  pass(&mean, spread);
  for (double& value : spread) value = std::sqrt(value / double(m));
  return spread;
}

void reference_update(const Dataset& data, int k, const int32_t* labels,
                      const float* centroids_before, std::vector<double>& centroids,
                      std::vector<int64_t>& counts) {
  const int n = data.n;
  centroids.assign(size_t(k) * n, 0.0);
  counts.assign(k, 0);
  for (int64_t i = 0; i < data.m; ++i) {
    const int32_t label = labels[i];
    if (label < 0 || label >= k) throw VerifyError("label out of range: " + std::to_string(label));
    counts[label] += 1;
    for (int d = 0; d < n; ++d) centroids[size_t(label) * n + d] += double(data.at(i, d));
  }
  for (int c = 0; c < k; ++c) {
    for (int d = 0; d < n; ++d) {
      double& value = centroids[size_t(c) * n + d];
      value = counts[c] > 0 ? value / double(counts[c]) : double(centroids_before[size_t(c) * n + d]);
    }
  }
}

std::vector<KReference> reference_step(const Dataset& data, const KRange& krange,
                                       const std::vector<float>& centroids_before) {
  const int n = data.n;
  const int64_t m = data.m;
  if (centroids_before.size() != size_t(krange.sum()) * n)
    throw InputError("reference_step: centroid array does not match the K range and N");
  std::vector<KReference> out;
  for (int k = krange.kmin; k <= krange.kmax; ++k) {
    const float* packed = centroids_before.data() + size_t(krange.slot_offset(k)) * n;
    RowMatrix centroids(k, n);
    for (int c = 0; c < k; ++c)
      for (int d = 0; d < n; ++d) centroids(c, d) = packed[size_t(c) * n + d];
    const Eigen::VectorXd centroid_norms = centroids.rowwise().squaredNorm();

    KReference ref;
    ref.k = k;
    ref.labels.resize(m);
    ref.best.resize(m);
    ref.second.resize(m);
    const int64_t chunks = (m + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const int64_t begin = chunk * kChunk;
      const int64_t rows = std::min<int64_t>(kChunk, m - begin);
      Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> block(
          data.row(begin), rows, n);
      const RowMatrix x = block.cast<double>();
      // ‖x‖² + ‖c‖² − 2x·c in FP64 ranks candidates; the winner's and runner-up's distances
      // are then recomputed directly so ties are judged on exact differences.
      const RowMatrix dots = x * centroids.transpose();
      for (int64_t r = 0; r < rows; ++r) {
        const double xnorm = x.row(r).squaredNorm();
        int best_c = 0, second_c = -1;
        double best = std::numeric_limits<double>::infinity(), second = best;
        for (int c = 0; c < k; ++c) {
          double dist = xnorm + centroid_norms(c) - 2.0 * dots(r, c);
          if (dist < best) {
            second = best;
            second_c = best_c;
            best = dist;
            best_c = c;
          } else if (dist < second) {
            second = dist;
            second_c = c;
          }
        }
        const int64_t i = begin + r;
        ref.labels[i] = best_c;
        ref.best[i] = squared_distance(data, i, centroids.row(best_c).data());
        ref.second[i] = second_c >= 0 && k > 1 ? squared_distance(data, i, centroids.row(second_c).data())
                                               : std::numeric_limits<double>::infinity();
        if (ref.second[i] < ref.best[i]) {
          // The expansion mis-ranked a near-tie; the exact distances decide.
          std::swap(ref.second[i], ref.best[i]);
          ref.labels[i] = second_c;
        }
      }
    }
    ref.inertia = 0;
    for (int64_t i = 0; i < m; ++i) ref.inertia += ref.best[i];
    reference_update(data, k, ref.labels.data(), packed, ref.centroids, ref.counts);
    out.push_back(std::move(ref));
  }
  return out;
}

VerifyReport compare_with_reference(const Dataset& data, const KRange& krange,
                                    const std::vector<float>& centroids_before,
                                    const IterationResult& got, const Tolerances& tol) {
  return compare_with_reference(data, krange, centroids_before, got, reference_step(data, krange, centroids_before),
                                tol);
}

VerifyReport compare_with_reference(const Dataset& data, const KRange& krange,
                                    const std::vector<float>& centroids_before,
                                    const IterationResult& got, const std::vector<KReference>& reference,
                                    const Tolerances& tol) {
  if (got.per_k.size() != reference.size())
    throw VerifyError("variant returned " + std::to_string(got.per_k.size()) + " K results, expected " +
                      std::to_string(reference.size()));
  VerifyReport report;
  report.tolerances = tol;
  report.passed = true;
  const int n = data.n;
  const std::vector<double> spread = column_spread(data);
  for (size_t index = 0; index < reference.size(); ++index) {
    const KReference& ref = reference[index];
    const KResult& mine = got.per_k[index];
    const int k = ref.k;
    const float* before = centroids_before.data() + size_t(krange.slot_offset(k)) * n;
    KVerdict verdict;
    verdict.k = k;
    for (int64_t i = 0; i < data.m; ++i)
      if (ref.second[i] - ref.best[i] <= tol.tie_relative * ref.best[i]) ++verdict.ties;

    // Labels: a mismatch is acceptable only if the variant's centroid is as near as the
    // reference's best within the tie tolerance.
    std::vector<double> expected_centroids = ref.centroids;
    std::vector<int64_t> expected_counts = ref.counts;
    if (!mine.labels.empty()) {
      if (mine.labels.size() != size_t(data.m)) throw VerifyError("variant returned the wrong number of labels");
      for (int64_t i = 0; i < data.m; ++i) {
        const int32_t label = mine.labels[i];
        if (label == ref.labels[i]) continue;
        if (label < 0 || label >= k) {
          ++verdict.label_mismatches;
          continue;
        }
        double centroid[512];
        std::vector<double> wide;
        double* c = centroid;
        if (n > 512) {
          wide.resize(n);
          c = wide.data();
        }
        for (int d = 0; d < n; ++d) c[d] = before[size_t(label) * n + d];
        const double dist = squared_distance(data, i, c);
        if (dist - ref.best[i] <= tol.tie_relative * ref.best[i]) ++verdict.tie_flips;
        else ++verdict.label_mismatches;
      }
      if (verdict.label_mismatches == 0 && verdict.tie_flips > 0)
        reference_update(data, k, mine.labels.data(), before, expected_centroids, expected_counts);
    }
    for (int c = 0; c < k; ++c)
      if (mine.counts.size() != size_t(k) || mine.counts[c] != expected_counts[c]) ++verdict.count_mismatches;

    // Each coordinate against its own allowance (Tolerances): the data's spread in its
    // dimension plus the FP32 floor at its value. A missing or NaN value fails outright.
    const double infinity = std::numeric_limits<double>::infinity();
    auto ratio = [](double error, double unit) { return error == 0 ? 0.0 : unit > 0 ? error / unit : HUGE_VAL; };
    for (size_t j = 0; j < expected_centroids.size(); ++j) {
      const double value = j < mine.centroids.size() ? double(mine.centroids[j]) : std::nan("");
      double error = std::abs(value - expected_centroids[j]);
      if (std::isnan(error)) error = infinity;
      const double sigma = spread[j % size_t(n)];
      const double ulp = float_spacing(expected_centroids[j]);
      const double allowance = tol.centroid_spread * sigma + tol.centroid_ulps * ulp;
      verdict.centroid_error_spread = std::max(verdict.centroid_error_spread, ratio(error, sigma));
      verdict.centroid_error_ulps = std::max(verdict.centroid_error_ulps, ratio(error, ulp));
      verdict.centroid_tolerance_used = std::max(verdict.centroid_tolerance_used, ratio(error, allowance));
    }
    const double inertia_diff = std::abs(mine.inertia - ref.inertia);
    verdict.inertia_rel_error = ref.inertia > 0 ? inertia_diff / ref.inertia : inertia_diff;
    if (std::isnan(mine.inertia)) verdict.inertia_rel_error = std::numeric_limits<double>::infinity();
    verdict.passed = verdict.label_mismatches == 0 && verdict.count_mismatches == 0 &&
                     verdict.centroid_tolerance_used <= 1.0 &&
                     verdict.inertia_rel_error <= tol.inertia_relative;
    report.passed = report.passed && verdict.passed;
    report.per_k.push_back(verdict);
  }
  return report;
}

VerifyReport compare_batch_with_reference(const Dataset& data, const Problem& problem,
                                          const std::vector<float>& centroids_before, const IterationResult& got,
                                          const Tolerances& tol) {
  if (problem.batch <= 1) return compare_with_reference(data, problem.k, centroids_before, got, tol);
  VerifyReport report;
  report.tolerances = tol;
  report.passed = true;
  for (int b = 0; b < problem.batch; ++b) {
    VerifyReport one = compare_with_reference(problem_rows(data, problem, b), problem.k,
                                              problem_centroids(centroids_before, problem, b),
                                              problem_result(got, problem, b), tol);
    report.passed = report.passed && one.passed;
    for (KVerdict& verdict : one.per_k) {
      verdict.problem = b;
      report.per_k.push_back(verdict);
    }
  }
  return report;
}

std::string VerifyReport::summary() const {
  std::ostringstream out;
  out << (passed ? "PASS" : "FAIL");
  int64_t ties = 0, flips = 0, mismatches = 0;
  double spread = 0, ulps = 0, used = 0, inertia = 0;
  for (const auto& v : per_k) {
    ties += v.ties;
    flips += v.tie_flips;
    mismatches += v.label_mismatches;
    spread = std::max(spread, v.centroid_error_spread);
    ulps = std::max(ulps, v.centroid_error_ulps);
    used = std::max(used, v.centroid_tolerance_used);
    inertia = std::max(inertia, v.inertia_rel_error);
  }
  out << " labels-off=" << mismatches << " ties=" << ties << " tie-flips=" << flips << " centroid-err=" << spread
      << "sd/" << ulps << "ulp (" << used << " of tolerance) inertia-err=" << inertia;
  for (const auto& v : per_k)
    if (!v.passed)
      out << " [" << (v.problem >= 0 ? "problem " + std::to_string(v.problem) + " " : std::string()) << "K=" << v.k
          << ": " << v.label_mismatches << " labels, " << v.count_mismatches << " counts, centroid "
          << v.centroid_error_spread << "sd/" << v.centroid_error_ulps << "ulp = " << v.centroid_tolerance_used
          << " of tolerance, inertia " << v.inertia_rel_error << "]";
  return out.str();
}

nlohmann::json VerifyReport::to_json() const {
  nlohmann::json per = nlohmann::json::array();
  for (const auto& v : per_k) {
    per.push_back({{"k", v.k},
                   {"passed", v.passed},
                   {"label_mismatches", v.label_mismatches},
                   {"tie_flips", v.tie_flips},
                   {"ties", v.ties},
                   {"count_mismatches", v.count_mismatches},
                   {"centroid_error_spread", v.centroid_error_spread},
                   {"centroid_error_ulps", v.centroid_error_ulps},
                   {"centroid_tolerance_used", v.centroid_tolerance_used},
                   {"inertia_rel_error", v.inertia_rel_error}});
    if (v.problem >= 0) per.back()["problem"] = v.problem;
  }
  return {{"passed", passed},
          {"tolerances",
           {{"tie_relative", tolerances.tie_relative},
            {"centroid_spread", tolerances.centroid_spread},
            {"centroid_ulps", tolerances.centroid_ulps},
            {"inertia_relative", tolerances.inertia_relative}}},
          {"per_k", per}};
}

}  // namespace mk
