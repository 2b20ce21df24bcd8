#pragma once
// Printing result rows as an aligned table, CSV, JSON or Markdown.
#include <ostream>
#include <string>
#include <vector>

#include "harness/results.hpp"

namespace mk {

enum class OutputFormat { Table, Csv, Json, Markdown };
OutputFormat parse_output_format(const std::string& text);  // table|csv|json|md; InputError otherwise
const std::vector<std::string>& output_format_names();

// A plain grid of cells printed in any format: header row + data rows.
struct TextTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  // Columns right-aligned in the table format (numbers).
  std::vector<bool> right_align;
};
void print_table(std::ostream& out, const TextTable& table, OutputFormat format);

// The standard row view: Variant, Params, N, K, M, median/min/IQR ms, Gops/s, GB/s,
// %FP32 (th/meas), %DRAM (th/meas), bound ms, verify. JSON prints the whole file.
TextTable rows_table(const std::vector<ResultRow>& rows);
void print_results(std::ostream& out, const ResultFile& file, OutputFormat format);

// Number formatting shared by the printers: fixed with `digits` significant-ish decimals.
std::string format_number(double value, int decimals);
// snprintf of one double into a std::string, e.g. formatted("%.1f%%", 12.5).
std::string formatted(const char* format, double value);
std::string verify_cell(const ResultRow& row);

}  // namespace mk
