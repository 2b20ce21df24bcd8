#pragma once
// The report's table builders, one file each (internal to reports/; reports/report.hpp's
// build_report_tables picks among them by the file's suite).
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "reports/report.hpp"

namespace mk::reports::detail {

// One row per result row: any suite, and every file without a suite table.
ReportTable generic_table(const LoadedResults& file);
// Seed Table 1 (reports/table1_work_per_thread.cpp): work per thread over a grid sweep, with the
// published T4 numbers beside ours.
std::vector<ReportTable> table1_tables(const LoadedResults& file, const ReportOptions& options);
// Seed Table 2 (reports/table2_multik_speedups.cpp): MultiK against one run per K and K = ΣK.
std::vector<ReportTable> table2_tables(const LoadedResults& file);

// Seed Table 3 as published (T4 and A100), shown beside a single table3 file.
struct PublishedTable3 {
  bool loaded = false;
  std::string source;
  int64_t m = 0;
  struct Row { double t4_gops, t4_ms, a100_gops, a100_ms; };
  std::map<std::tuple<int64_t, int64_t, int64_t>, Row> rows;  // (n, kmin, kmax)
  std::string why_not_shown;
};
PublishedTable3 load_published_table3(const std::string& path);
// Seed Table 3 and --merge (reports/table3_cross_gpu.cpp): the same problems on several GPUs, with
// speedup and cost-performance.
ReportTable merged_table(const std::vector<LoadedResults>& files, const ReportOptions& options,
                         const PublishedTable3* published = nullptr);

}  // namespace mk::reports::detail
