#include "harness/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/errors.hpp"

namespace mk {

namespace {

// Display width of UTF-8 text: count code points, not bytes, so ✓ and — align.
size_t display_width(const std::string& text) {
  size_t width = 0;
  for (unsigned char c : text)
    if ((c & 0xC0) != 0x80) ++width;
  return width;
}

std::string csv_escape(const std::string& cell) {
  if (cell.find_first_of(",\"\n") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) out += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string md_escape(const std::string& cell) {
  std::string out;
  for (char c : cell) out += (c == '|') ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string format_ms(double ms) {
  if (ms >= 100) return format_number(ms, 1);
  if (ms >= 10) return format_number(ms, 2);
  if (ms >= 1) return format_number(ms, 3);
  return format_number(ms, 4);
}

// Rates span 1e-3 (a CPU on a tiny problem) to 1e5 (a GPU); keep ~4 significant digits.
std::string format_rate(double value) {
  const double magnitude = std::fabs(value);
  if (magnitude >= 100 || magnitude == 0) return format_number(value, 1);
  if (magnitude >= 1) return format_number(value, 2);
  if (magnitude >= 0.01) return format_number(value, 4);
  return format_number(value, 6);
}

std::string pair_cell(double theoretical, double measured) {
  return format_number(theoretical, 1) + "/" + (measured > 0 ? format_number(measured, 1) : std::string("-"));
}

}  // namespace

const std::vector<std::string>& output_format_names() {
  static const std::vector<std::string> names = {"table", "csv", "json", "md"};
  return names;
}

OutputFormat parse_output_format(const std::string& text) {
  if (text == "table") return OutputFormat::Table;
  if (text == "csv") return OutputFormat::Csv;
  if (text == "json") return OutputFormat::Json;
  if (text == "md" || text == "markdown") return OutputFormat::Markdown;
  throw InputError("unknown format '" + text + "' (expected table, csv, json or md)");
}

std::string formatted(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string format_number(double value, int decimals) {
  if (!std::isfinite(value)) return "-";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

void print_table(std::ostream& out, const TextTable& table, OutputFormat format) {
  const size_t columns = table.header.size();
  auto cell = [&](const std::vector<std::string>& row, size_t c) -> std::string {
    return c < row.size() ? row[c] : std::string();
  };
  switch (format) {
    case OutputFormat::Csv: {
      for (size_t c = 0; c < columns; ++c) out << (c ? "," : "") << csv_escape(table.header[c]);
      out << "\n";
      for (const auto& row : table.rows) {
        for (size_t c = 0; c < columns; ++c) out << (c ? "," : "") << csv_escape(cell(row, c));
        out << "\n";
      }
      return;
    }
    case OutputFormat::Json: {
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& row : table.rows) {
        nlohmann::json object = nlohmann::json::object();
        for (size_t c = 0; c < columns; ++c) object[table.header[c]] = cell(row, c);
        rows.push_back(object);
      }
      out << rows.dump(2) << "\n";
      return;
    }
    case OutputFormat::Markdown: {
      out << "|";
      for (const auto& h : table.header) out << " " << md_escape(h) << " |";
      out << "\n|";
      for (size_t c = 0; c < columns; ++c) {
        const bool right = c < table.right_align.size() && table.right_align[c];
        out << (right ? " ---: |" : " --- |");
      }
      out << "\n";
      for (const auto& row : table.rows) {
        out << "|";
        for (size_t c = 0; c < columns; ++c) out << " " << md_escape(cell(row, c)) << " |";
        out << "\n";
      }
      return;
    }
    case OutputFormat::Table: {
      std::vector<size_t> widths(columns, 0);
      for (size_t c = 0; c < columns; ++c) widths[c] = display_width(table.header[c]);
      for (const auto& row : table.rows)
        for (size_t c = 0; c < columns; ++c) widths[c] = std::max(widths[c], display_width(cell(row, c)));
      auto print_row = [&](const std::vector<std::string>& row) {
        std::string line;
        for (size_t c = 0; c < columns; ++c) {
          const std::string text = cell(row, c);
          const std::string pad(widths[c] - display_width(text), ' ');
          const bool right = c < table.right_align.size() && table.right_align[c];
          if (c) line += "  ";
          line += right ? pad + text : text + (c + 1 < columns ? pad : "");
        }
        out << line << "\n";
      };
      print_row(table.header);
      std::vector<std::string> rule;
      for (size_t c = 0; c < columns; ++c) rule.push_back(std::string(widths[c], '-'));
      print_row(rule);
      for (const auto& row : table.rows) print_row(row);
      return;
    }
  }
}

std::string verify_cell(const ResultRow& row) {
  if (!row.verified()) return "-";
  return row.verify_passed() ? "pass" : "FAIL";
}

TextTable rows_table(const std::vector<ResultRow>& rows) {
  TextTable table;
  table.header = {"Variant", "Params", "N",      "K",    "M",     "median ms",     "min ms",        "IQR ms",
                  "Gops/s",  "GB/s",   "%FP32 th/meas", "%DRAM th/meas", "bound ms", "verify"};
  table.right_align = {false, false, true, true, true, true, true, true, true, true, true, true, true, false};
  for (const auto& row : rows) {
    std::vector<std::string> cells = {row.variant,
                                      params_label(row.params),
                                      std::to_string(row.problem.n),
                                      row.problem.k.str(),
                                      format_count(row.problem.m) +
                                          (row.problem.batch > 1 ? "x" + std::to_string(row.problem.batch) : "")};
    if (row.ok()) {
      cells.push_back(format_ms(row.summary.median_ms));
      cells.push_back(format_ms(row.summary.min_ms));
      cells.push_back(format_ms(row.summary.iqr_ms));
      cells.push_back(format_rate(row.metrics.gops));
      cells.push_back(format_rate(row.metrics.effective_gbps));
      cells.push_back(pair_cell(row.metrics.pct_fp32_theoretical, row.metrics.pct_fp32_measured));
      cells.push_back(pair_cell(row.metrics.pct_dram_theoretical, row.metrics.pct_dram_measured));
      cells.push_back(row.metrics.roofline_bound_ms > 0 ? format_ms(row.metrics.roofline_bound_ms) : "-");
      cells.push_back(verify_cell(row));
    } else {
      for (int i = 0; i < 8; ++i) cells.push_back("-");
      cells.push_back(row.status + ": " + row.reason);
    }
    table.rows.push_back(std::move(cells));
  }
  return table;
}

void print_results(std::ostream& out, const ResultFile& file, OutputFormat format) {
  if (format == OutputFormat::Json) {
    out << results_to_json(file).dump(2) << "\n";
    return;
  }
  print_table(out, rows_table(file.rows), format);
}

}  // namespace mk
