// Summaries and derived metrics against hand-computed values.
#include <gtest/gtest.h>

#include "harness/metrics.hpp"

namespace mk {
namespace {

Problem table1_problem() {
  Problem p;
  p.n = 8;
  p.k = KRange{3, 7};
  p.m = int64_t(1) << 25;
  return p;
}

TEST(Quantile, InterpolatesLinearlyBetweenClosestRanks) {
  const std::vector<double> sorted = {1, 2, 3, 4};
  // h = (n-1)·q: 0.75, 1.5, 2.25
  EXPECT_DOUBLE_EQ(quantile_sorted(sorted, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(quantile_sorted(sorted, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile_sorted(sorted, 0.75), 3.25);
  EXPECT_DOUBLE_EQ(quantile_sorted(sorted, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile_sorted(sorted, 1.0), 4.0);
}

TEST(Summarize, OddCountUnsortedInput) {
  const Summary s = summarize({5, 1, 3});
  EXPECT_EQ(s.count, 3);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.max_ms, 5);
  EXPECT_DOUBLE_EQ(s.mean_ms, 3);
  EXPECT_DOUBLE_EQ(s.median_ms, 3);
  EXPECT_DOUBLE_EQ(s.q1_ms, 2);  // h = 0.5 between 1 and 3
  EXPECT_DOUBLE_EQ(s.q3_ms, 4);  // h = 1.5 between 3 and 5
  EXPECT_DOUBLE_EQ(s.iqr_ms, 2);
}

TEST(Summarize, SingleSampleHasZeroSpread) {
  const Summary s = summarize({0.41});
  EXPECT_EQ(s.count, 1);
  EXPECT_DOUBLE_EQ(s.median_ms, 0.41);
  EXPECT_DOUBLE_EQ(s.q1_ms, 0.41);
  EXPECT_DOUBLE_EQ(s.iqr_ms, 0.0);
}

TEST(Summarize, EmptyIsAllZero) {
  const Summary s = summarize({});
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.median_ms, 0);
  EXPECT_EQ(s.max_ms, 0);
}

TEST(Metrics, Table1OpsAndBytes) {
  // ops = 3·25·8·2^25 = 20'132'659'200; bytes = 2^25·8·4 = 1'073'741'824
  const Metrics m = compute_metrics(table1_problem(), 100.0, Peaks{});
  EXPECT_DOUBLE_EQ(m.gops, 201.326592);
  EXPECT_DOUBLE_EQ(m.effective_gbps, 10.73741824);
  EXPECT_DOUBLE_EQ(m.arithmetic_intensity, 18.75);
}

TEST(Metrics, PercentagesOfTheoreticalAndMeasuredPeaks) {
  Peaks peaks;
  peaks.fp32_gflops_theoretical = 1000;
  peaks.dram_gbps_theoretical = 100;
  peaks.fp32_gflops_measured = 500;
  peaks.dram_read_gbps_measured = 50;
  const Metrics m = compute_metrics(table1_problem(), 100.0, peaks);
  EXPECT_NEAR(m.pct_fp32_theoretical, 20.1326592, 1e-9);
  EXPECT_NEAR(m.pct_fp32_measured, 40.2653184, 1e-9);
  EXPECT_NEAR(m.pct_dram_theoretical, 10.73741824, 1e-9);
  EXPECT_NEAR(m.pct_dram_measured, 21.47483648, 1e-9);
}

TEST(Metrics, RooflineUsesTheoreticalRoofsWhenNothingMeasured) {
  Peaks peaks;
  peaks.fp32_gflops_theoretical = 1000;  // compute: 20.1326592 ms
  peaks.dram_gbps_theoretical = 100;     // memory: 10.73741824 ms
  const Metrics m = compute_metrics(table1_problem(), 100.0, peaks);
  EXPECT_NEAR(m.roofline_bound_ms, 20.1326592, 1e-9);
  EXPECT_EQ(m.roofline_limit, "compute");
  EXPECT_DOUBLE_EQ(m.pct_fp32_measured, 0);
}

TEST(Metrics, RooflinePrefersMeasuredRoofs) {
  Peaks peaks;
  peaks.fp32_gflops_theoretical = 1000;
  peaks.dram_gbps_theoretical = 100;
  peaks.fp32_gflops_measured = 2000;   // compute: 10.0663296 ms
  peaks.dram_read_gbps_measured = 40;  // memory: 26.8435456 ms
  const Metrics m = compute_metrics(table1_problem(), 100.0, peaks);
  EXPECT_NEAR(m.roofline_bound_ms, 26.8435456, 1e-9);
  EXPECT_EQ(m.roofline_limit, "memory");
}

TEST(Metrics, NoPeaksMeansNoBound) {
  const Metrics m = compute_metrics(table1_problem(), 1.0, Peaks{});
  EXPECT_EQ(m.roofline_bound_ms, 0);
  EXPECT_EQ(m.roofline_limit, "");
  EXPECT_EQ(m.pct_fp32_theoretical, 0);
}

TEST(Metrics, ZeroTimeGivesZeroRatesNotInfinity) {
  const Metrics m = compute_metrics(table1_problem(), 0.0, Peaks{});
  EXPECT_EQ(m.gops, 0);
  EXPECT_EQ(m.effective_gbps, 0);
}

TEST(PercentOf, UnknownPeakIsZero) {
  EXPECT_EQ(percent_of(5, 0), 0);
  EXPECT_DOUBLE_EQ(percent_of(5, 20), 25);
}

}  // namespace
}  // namespace mk
