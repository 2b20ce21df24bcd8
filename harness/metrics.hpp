#pragma once
// Pure arithmetic over timing samples: summaries and the derived throughput/roofline
// numbers every report shows. No I/O, no CUDA, so it is unit-tested exactly.
#include <cstdint>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"

namespace mk {

struct Summary {
  int64_t count = 0;
  double median_ms = 0, min_ms = 0, max_ms = 0, mean_ms = 0;
  double q1_ms = 0, q3_ms = 0, iqr_ms = 0;
};

// Quantile of already-sorted values with linear interpolation between closest ranks
// (h = (n-1)·q, the common "type 7" definition). 0 for an empty vector.
double quantile_sorted(const std::vector<double>& sorted, double q);

// All zeros (count 0) for an empty sample list.
Summary summarize(const std::vector<double>& samples_ms);

struct Metrics {
  double gops = 0;            // paper ops (3·ΣK·N·M) per second, in 1e9/s
  double effective_gbps = 0;  // M·N·4 bytes of points read per second, in 1e9 B/s
  double pct_fp32_theoretical = 0, pct_fp32_measured = 0;
  double pct_dram_theoretical = 0, pct_dram_measured = 0;
  double arithmetic_intensity = 0;  // paper ops per byte of points
  double roofline_bound_ms = 0;     // the fastest time the roofs allow; 0 when no peak is known
  std::string roofline_limit;       // "memory" | "compute" | "" when no peak is known
};

// Percent of `peak`, or 0 when the peak is unknown (0).
double percent_of(double value, double peak);

// The roofs of several devices working on one problem (a sharded row): every rate added up.
// The measured rates count only when every device has them (else 0, "not measured", as for
// one device); measured_at is then the oldest measurement's date.
Peaks sum_peaks(const std::vector<Peaks>& peaks);

// time_ms is the representative time of one iteration (the median).
Metrics compute_metrics(const Problem& problem, double time_ms, const Peaks& peaks);

}  // namespace mk
