#include "harness/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mk {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  if (sorted.size() == 1) return sorted.front();
  const double position = (double(sorted.size()) - 1.0) * std::clamp(q, 0.0, 1.0);
  const size_t below = size_t(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - double(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

Summary summarize(const std::vector<double>& samples_ms) {
  Summary s;
  if (samples_ms.empty()) return s;
  std::vector<double> sorted = samples_ms;
  std::sort(sorted.begin(), sorted.end());
  s.count = int64_t(sorted.size());
  s.min_ms = sorted.front();
  s.max_ms = sorted.back();
  s.mean_ms = std::accumulate(sorted.begin(), sorted.end(), 0.0) / double(sorted.size());
  s.median_ms = quantile_sorted(sorted, 0.5);
  s.q1_ms = quantile_sorted(sorted, 0.25);
  s.q3_ms = quantile_sorted(sorted, 0.75);
  s.iqr_ms = s.q3_ms - s.q1_ms;
  return s;
}

double percent_of(double value, double peak) { return peak > 0 ? 100.0 * value / peak : 0.0; }

Peaks sum_peaks(const std::vector<Peaks>& peaks) {
  Peaks total;
  bool all_measured = !peaks.empty();
  for (const Peaks& p : peaks) {
    total.fp32_gflops_theoretical += p.fp32_gflops_theoretical;
    total.dram_gbps_theoretical += p.dram_gbps_theoretical;
    total.fp32_gflops_measured += p.fp32_gflops_measured;
    total.dram_read_gbps_measured += p.dram_read_gbps_measured;
    total.dram_copy_gbps_measured += p.dram_copy_gbps_measured;
    all_measured &= !p.measured_at.empty();
    if (!p.measured_at.empty() && (total.measured_at.empty() || p.measured_at < total.measured_at))
      total.measured_at = p.measured_at;
  }
  if (!all_measured) {
    // A sum with a device missing would pass for the whole set's roof.
    total.fp32_gflops_measured = total.dram_read_gbps_measured = total.dram_copy_gbps_measured = 0;
    total.measured_at.clear();
  }
  return total;
}

Metrics compute_metrics(const Problem& problem, double time_ms, const Peaks& peaks) {
  Metrics m;
  const double ops = problem.paper_ops();
  const double bytes = problem.data_bytes();
  m.arithmetic_intensity = bytes > 0 ? ops / bytes : 0;
  if (time_ms > 0) {
    const double seconds = time_ms * 1e-3;
    m.gops = ops / seconds / 1e9;
    m.effective_gbps = bytes / seconds / 1e9;
  }
  m.pct_fp32_theoretical = percent_of(m.gops, peaks.fp32_gflops_theoretical);
  m.pct_fp32_measured = percent_of(m.gops, peaks.fp32_gflops_measured);
  m.pct_dram_theoretical = percent_of(m.effective_gbps, peaks.dram_gbps_theoretical);
  m.pct_dram_measured = percent_of(m.effective_gbps, peaks.dram_read_gbps_measured);

  // Measured roofs are what the machine really sustains, so they give the tighter
  // (achievable) bound; theoretical roofs stand in until `mkbench peak` has run.
  const double fp32 = peaks.fp32_gflops_measured > 0 ? peaks.fp32_gflops_measured : peaks.fp32_gflops_theoretical;
  const double dram = peaks.dram_read_gbps_measured > 0 ? peaks.dram_read_gbps_measured : peaks.dram_gbps_theoretical;
  const double memory_ms = dram > 0 ? bytes / (dram * 1e9) * 1e3 : 0;
  const double compute_ms = fp32 > 0 ? ops / (fp32 * 1e9) * 1e3 : 0;
  if (memory_ms > 0 || compute_ms > 0) {
    m.roofline_bound_ms = std::max(memory_ms, compute_ms);
    m.roofline_limit = memory_ms >= compute_ms ? "memory" : "compute";
  }
  return m;
}

}  // namespace mk
