// mkbench report: seed tables in Markdown, CSV rows, self-contained HTML with plots.
// The result files are fabricated fixtures (tests/data/make_report_fixtures.py); expected
// numbers are recomputed here from the fixtures' own medians, not copied from the output.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "core/errors.hpp"
#include "reports/report.hpp"
#include "reports/results_io.hpp"

namespace {

using nlohmann::json;
using namespace mk::reports;
namespace fs = std::filesystem;

std::string data_file(const std::string& name) { return std::string(MKBENCH_TEST_DATA) + "/" + name; }
const std::string kPublished = data_file("published_table1_t4_fixture.json");
const std::string kPublishedTable3 = data_file("published_table3_fixture.json");

std::string quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Rendered {
  int exit_code = -1;
  std::string out, err;
};

Rendered render(const std::vector<std::string>& files, ReportOptions options) {
  std::vector<std::string> paths;
  for (const auto& name : files) paths.push_back(data_file(name));
  std::ostringstream out, err;
  Rendered rendered;
  rendered.exit_code = run_report(paths, options, "", out, err);
  rendered.out = out.str();
  rendered.err = err.str();
  return rendered;
}

ReportOptions with_format(const std::string& format) {
  ReportOptions options;
  options.format = format;
  options.published_table1 = kPublished;
  options.published_table3 = kPublishedTable3;
  return options;
}

std::string speedup_text(double value) {  // same rounding rule the report documents
  char text[32];
  std::snprintf(text, sizeof text, "%.*fx", value >= 100 ? 0 : value >= 10 ? 1 : 2, value);
  return text;
}

double median_of(const json& doc, const std::string& variant, int n, int kmin, int kmax) {
  for (const json& row : doc["rows"]) {
    const json& p = row["problem"];
    if (row["variant"] == variant && p["n"] == n && p["k_min"] == kmin && p["k_max"] == kmax)
      return row["summary"]["median_ms"].get<double>();
  }
  ADD_FAILURE() << "fixture has no row " << variant << " " << n << " " << kmin << ".." << kmax;
  return NAN;
}

std::string table_line_starting(const std::string& md, const std::string& prefix) {
  std::istringstream lines(md);
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind(prefix, 0) == 0) return line;
  return "";
}

std::string find_chromium() {
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome",
                                "/snap/bin/chromium"})
    if (fs::exists(candidate)) return candidate;
  return "";
}

// ---------------------------------------------------------------------------------------

TEST(ReportMarkdown, Table1HasPublishedColumnAndBoldBestRow) {
  const Rendered md = render({"results_table1_fixture.json"}, with_format("md"));
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("published (Tesla T4, seed 000) — another GPU, not our measurement"), std::string::npos)
      << md.out;
  EXPECT_NE(md.out.find("| Grid | Points/thread | Time (ms) | Gops/s | % peak (measured FP32) | T4 Grid¹ | T4 Points/thread¹"),
            std::string::npos)
      << md.out;
  // The fixture's fastest grid is 264 (0.95 ms); its line, and only it, is bold.
  const std::string best = table_line_starting(md.out, "| **264** |");
  EXPECT_FALSE(best.empty()) << md.out;
  size_t bold_lines = 0;
  std::istringstream lines(md.out);
  for (std::string line; std::getline(lines, line);) bold_lines += line.rfind("| **", 0) == 0;
  EXPECT_EQ(bold_lines, 1u);
  // Published grids we did not run (the T4's 40, 200) still appear, with its numbers.
  EXPECT_NE(table_line_starting(md.out, "| 200 |").find("829.10"), std::string::npos) << md.out;
  // Ours at grid 1 sits on the same line as the seed's grid 1.
  EXPECT_NE(table_line_starting(md.out, "| 1 |").find("47.69"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("commit: fixture00000"), std::string::npos);
  EXPECT_NE(md.out.find("dataset: uniform seed=42"), std::string::npos);
  EXPECT_NE(md.out.find("date: 2026-11-22T03:04:05Z"), std::string::npos);
  EXPECT_NE(md.out.find("device: NVIDIA H100 80GB HBM3"), std::string::npos);
}

struct TempFolder {
  fs::path path;
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "mkbench-test-report-XXXXXX").string();
    path = ::mkdtemp(pattern.data()) ? fs::path(pattern) : fs::path();
  }
  ~TempFolder() {
    std::error_code ignored;
    if (!path.empty()) fs::remove_all(path, ignored);
  }
};

TEST(ReportMarkdown, Table1PairsRowsByPositionWhenCountsMatch) {
  // The table1 suite lists as many grids as the seed, in the seed's order (SM multiples of
  // this GPU standing in for the T4's). With equal counts, row i sits beside seed row i.
  TempFolder temp;
  json published = json::parse(std::ifstream(kPublished));
  const json doc = load_results_file(data_file("results_table1_fixture.json"));
  published["rows"].erase(published["rows"].begin() + long(doc["rows"].size()), published["rows"].end());
  std::ofstream(temp.path / "published.json") << published.dump();
  ReportOptions options = with_format("md");
  options.published_table1 = (temp.path / "published.json").string();
  const Rendered md = render({"results_table1_fixture.json"}, options);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  // Our second row (grid 132) beside the seed's second row (grid 40, 3277 points/thread).
  EXPECT_NE(table_line_starting(md.out, "| 132 |").find("| 40 | 3277 | 134.49 | 737.74 |"), std::string::npos)
      << md.out;
  EXPECT_NE(md.out.find("paired by position"), std::string::npos);
}

TEST(ReportMarkdown, Table1DerivesGridFromPointsPerThread) {
  // The suite's one-point-per-thread row says grid=0, ppt=1: grid = ceil(M/(block·ppt)).
  TempFolder temp;
  json doc = load_results_file(data_file("results_table1_fixture.json"));
  for (json& row : doc["rows"])
    if (row["params"]["grid"] == 131072) row["params"] = {{"block", 256}, {"grid", 0}, {"ppt", 1}, {"layout", "soa"}};
  std::ofstream(temp.path / "table1.json") << doc.dump();
  std::ostringstream out, err;
  ASSERT_EQ(run_report({(temp.path / "table1.json").string()}, with_format("md"), "", out, err), 0) << err.str();
  const std::string line = table_line_starting(out.str(), "| 131072 | 1 |");
  EXPECT_FALSE(line.empty()) << out.str();
  EXPECT_EQ(table_line_starting(out.str(), "| 0 |"), "");
}

TEST(ReportMarkdown, Table3BesidePublishedT4AndA100) {
  const json h100 = load_results_file(data_file("results_table3_h100_fixture.json"));
  ReportOptions options = with_format("md");
  options.prices = parse_prices("H100=1,T4=0.17");
  const Rendered md = render({"results_table3_h100_fixture.json"}, options);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| N | K | H100 80GB HBM3 Gops/s | H100 80GB HBM3 ms | T4 Gops/s² | T4 ms² | A100 Gops/s² | "
                        "A100 ms² | Speedup vs T4² | Relative cost-perf vs T4² | Speedup vs A100² |"),
            std::string::npos)
      << md.out;
  EXPECT_NE(md.out.find("² published (Tesla T4 and A100, seed 000) — other GPUs, not our measurement"),
            std::string::npos);
  // N=8, K=3..5: the seed's T4 took 15.81 ms.
  const double ours = median_of(h100, "registers-multik", 8, 3, 5);
  char relative[32];
  std::snprintf(relative, sizeof relative, "%.2f", 15.81 / ours / (1.0 / 0.17));
  const std::string line = table_line_starting(md.out, "| 8 | 3...5 |");
  EXPECT_NE(line.find("| 610.77 | 15.810 | 2917.30 | 3.310 | " + speedup_text(15.81 / ours) + " | " + relative + " | " +
                      speedup_text(3.31 / ours) + " |"),
            std::string::npos)
      << line;
}

TEST(ReportMarkdown, Table1WithoutPublishedFileSaysSo) {
  ReportOptions options = with_format("md");
  options.published_table1 = "/nonexistent/table1_t4.json";
  const Rendered md = render({"results_table1_fixture.json"}, options);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_EQ(md.out.find("T4 Gops/s"), std::string::npos);
  EXPECT_NE(md.out.find("published T4 column left out"), std::string::npos) << md.out;
}

TEST(ReportMarkdown, Table2SpeedupsFollowFromTheRows) {
  const json doc = load_results_file(data_file("results_table2_fixture.json"));
  const Rendered md = render({"results_table2_fixture.json"}, with_format("md"));
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| N | K range | M | Gops/s | ms | vs naive-atomics Vários | vs naive-atomics Único | vs CPU |"),
            std::string::npos)
      << md.out;
  const double multik = median_of(doc, "registers-multik", 4, 3, 5);
  const double per_k = median_of(doc, "naive-atomics", 4, 3, 3) + median_of(doc, "naive-atomics", 4, 4, 4) +
                       median_of(doc, "naive-atomics", 4, 5, 5);
  const double single = median_of(doc, "naive-atomics", 4, 12, 12);
  const double cpu = median_of(doc, "cpu-openmp", 4, 3, 5);
  const std::string line = table_line_starting(md.out, "| 4 | 3...5 |");
  ASSERT_FALSE(line.empty()) << md.out;
  EXPECT_NE(line.find("| " + speedup_text(per_k / multik) + " | " + speedup_text(single / multik) + " | " +
                      speedup_text(cpu / multik) + " |"),
            std::string::npos)
      << line;
  EXPECT_FALSE(table_line_starting(md.out, "| Mean |").empty());
}

// Two variants that run K ranges in one pass: each range row is measured against the faster.
TEST(ReportMarkdown, Table2ReferenceIsTheFastestRangedVariantOfEachRow) {
  json doc = load_results_file(data_file("results_table2_fixture.json"));
  const double registers = median_of(doc, "registers-multik", 4, 3, 5);
  json faster;
  for (const json& row : doc["rows"])
    if (row["variant"] == "registers-multik" && row["problem"]["n"] == 4 && row["problem"]["k_min"] == 3 &&
        row["problem"]["k_max"] == 5)
      faster = row;
  ASSERT_FALSE(faster.is_null());
  faster["variant"] = "tensor-multik";
  faster["summary"]["median_ms"] = registers / 2;
  doc["rows"].push_back(faster);
  const fs::path path = fs::temp_directory_path() / ("mkbench_table2_two_multik_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << doc.dump();
  std::ostringstream out, err;
  ASSERT_EQ(run_report({path.string()}, with_format("md"), "", out, err), 0) << err.str();
  fs::remove(path);
  EXPECT_NE(out.str().find("fastest of registers-multik, tensor-multik"), std::string::npos) << out.str();
  const double single = median_of(doc, "naive-atomics", 4, 12, 12);
  const std::string halved = table_line_starting(out.str(), "| 4 | 3...5 |");
  EXPECT_NE(halved.find(speedup_text(single / (registers / 2))), std::string::npos) << halved;
  // Rows only registers-multik ran keep it as their reference.
  const std::string other = table_line_starting(out.str(), "| 4 | 3...7 |");
  EXPECT_NE(other.find(speedup_text(median_of(doc, "naive-atomics", 4, 25, 25) /
                                    median_of(doc, "registers-multik", 4, 3, 7))),
            std::string::npos)
      << other;
}

TEST(ReportMarkdown, Table2RolesAreInferredWithoutTags) {
  const Rendered tagged = render({"results_table2_fixture.json"}, with_format("md"));
  const Rendered untagged = render({"results_table2_untagged_fixture.json"}, with_format("md"));
  ASSERT_EQ(untagged.exit_code, 0) << untagged.err;
  EXPECT_EQ(table_line_starting(tagged.out, "| 4 | 3...5 |"), table_line_starting(untagged.out, "| 4 | 3...5 |"));
  EXPECT_EQ(table_line_starting(tagged.out, "| 4 | 3...7 |"), table_line_starting(untagged.out, "| 4 | 3...7 |"));
}

TEST(ReportMarkdown, MergeGivesSpeedupAndCostPerformance) {
  const json t4 = load_results_file(data_file("results_table3_t4_fixture.json"));
  const json h100 = load_results_file(data_file("results_table3_h100_fixture.json"));
  ReportOptions options = with_format("md");
  options.merge = true;
  options.prices = parse_prices("H100=1,T4=0.17");
  const Rendered md = render({"results_table3_t4_fixture.json", "results_table3_h100_fixture.json"}, options);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| N | K | T4 Gops/s | T4 ms | H100 80GB HBM3 Gops/s | H100 80GB HBM3 ms | Speedup H100 80GB "
                        "HBM3 vs T4 | Relative cost-perf H100 80GB HBM3 |"),
            std::string::npos)
      << md.out;
  const double speedup = median_of(t4, "registers-multik", 8, 3, 5) / median_of(h100, "registers-multik", 8, 3, 5);
  char relative[32];
  std::snprintf(relative, sizeof relative, "%.2f", speedup / (1.0 / 0.17));
  const std::string line = table_line_starting(md.out, "| 8 | 3...5 |");
  EXPECT_NE(line.find("| " + speedup_text(speedup) + " | " + relative + " |"), std::string::npos) << line;
  EXPECT_NE(md.out.find("device: Tesla T4"), std::string::npos);
  EXPECT_NE(md.out.find("device: NVIDIA H100 80GB HBM3"), std::string::npos);
}

TEST(ReportMarkdown, GenericSuiteHasOneLinePerRow) {
  const json doc = load_results_file(data_file("results_gate_baseline_fixture.json"));
  const Rendered md = render({"results_gate_baseline_fixture.json"}, with_format("md"));
  ASSERT_EQ(md.exit_code, 0) << md.err;
  for (const json& row : doc["rows"])
    EXPECT_FALSE(table_line_starting(md.out, "| " + row["name"].get<std::string>() + " | ok |").empty())
        << row["name"] << "\n" << md.out;
}

TEST(ReportMarkdown, RefusedRowsShowNoTimingRatherThanZeros) {
  json doc = load_results_file(data_file("results_gate_baseline_fixture.json"));
  json& refused = doc["rows"][0];
  refused["status"] = "refused";
  refused["reason"] = "needs N >= 16";
  refused["summary"]["median_ms"] = 0.0;  // what a refusal leaves in the summary
  refused["summary"]["min_ms"] = 0.0;
  refused["summary"]["q3_ms"] = 0.0;
  const fs::path path = fs::temp_directory_path() / "mkbench_report_refused_row.json";
  std::ofstream(path) << doc.dump();
  std::ostringstream out, err;
  ASSERT_EQ(run_report({path.string()}, with_format("md"), "", out, err), 0) << err.str();
  const std::string line = table_line_starting(out.str(), "| " + refused["name"].get<std::string>() + " | refused");
  ASSERT_FALSE(line.empty()) << out.str();
  EXPECT_EQ(line.find("0.0000"), std::string::npos) << line;
  EXPECT_NE(line.find("—"), std::string::npos) << line;
  fs::remove(path);
}

TEST(ReportCsv, OneLinePerRowWithAllColumns) {
  const json doc = load_results_file(data_file("results_table1_fixture.json"));
  const Rendered csv = render({"results_table1_fixture.json"}, with_format("csv"));
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::istringstream lines(csv.out);
  std::string header;
  std::getline(lines, header);
  for (const char* column : {"device_slug", "git_sha", "median_ms", "q3_ms", "gops", "pct_fp32_measured",
                             "roofline_limit", "dataset"})
    EXPECT_NE(header.find(column), std::string::npos) << column;
  size_t count = 0;
  for (std::string line; std::getline(lines, line);) {
    ++count;
    EXPECT_NE(line.find("\"block=256,grid="), std::string::npos) << "comma fields must be quoted: " << line;
  }
  EXPECT_EQ(count, doc["rows"].size());
}

TEST(ReportHtml, SelfContainedWithTablesAndPlots) {
  const Rendered html = render({"results_table1_fixture.json", "results_table2_fixture.json"}, with_format("html"));
  ASSERT_EQ(html.exit_code, 0) << html.err;
  EXPECT_EQ(html.out.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.out.find("<style>"), std::string::npos);
  EXPECT_NE(html.out.find("Table 1 — work per thread"), std::string::npos);
  EXPECT_NE(html.out.find("Table 2 — MultiK"), std::string::npos);
  EXPECT_NE(html.out.find("<tr class=\"best\">"), std::string::npos);
  EXPECT_NE(html.out.find("published (Tesla T4, seed 000) — another GPU, not our measurement"), std::string::npos);
  // Opens offline: nothing is fetched from anywhere.
  for (const char* external : {"src=\"http", "href=", "<link", "<script", "url("})
    EXPECT_EQ(html.out.find(external), std::string::npos) << external;
  if (find_python_with_matplotlib().empty())
    GTEST_SKIP() << "no python3 with matplotlib (python3 -c 'import matplotlib' fails): the table part "
                    "was checked, the embedded-plot part is skipped";
  // iVBORw0KGgo is the base64 of the PNG signature.
  EXPECT_NE(html.out.find("data:image/png;base64,iVBORw0KGgo"), std::string::npos) << html.err;
  EXPECT_NE(html.out.find("Table 1 — Gops/s against grid size"), std::string::npos);
  EXPECT_NE(html.out.find("Roofline"), std::string::npos);
  EXPECT_NE(html.out.find("time per variant"), std::string::npos);
}

TEST(ReportHtml, WithoutMatplotlibTablesStillRenderUnlessPlotsAreRequired) {
  const char* previous = std::getenv("MKBENCH_PYTHON");
  const std::string saved = previous ? previous : "";
  ::setenv("MKBENCH_PYTHON", "/nonexistent/python3", 1);
  const Rendered html = render({"results_table1_fixture.json"}, with_format("html"));
  ReportOptions strict = with_format("html");
  strict.require_plots = true;
  const Rendered required = render({"results_table1_fixture.json"}, strict);
  if (previous) ::setenv("MKBENCH_PYTHON", saved.c_str(), 1);
  else ::unsetenv("MKBENCH_PYTHON");
  EXPECT_EQ(html.exit_code, 0) << html.err;
  EXPECT_NE(html.out.find("Plots unavailable: no Python with matplotlib"), std::string::npos);
  EXPECT_NE(html.out.find("<table>"), std::string::npos);
  EXPECT_EQ(html.out.find("data:image/png"), std::string::npos);
  EXPECT_EQ(required.exit_code, 2);
  EXPECT_NE(required.err.find("--require-plots"), std::string::npos) << required.err;
}

TEST(ReportHtml, RendersInHeadlessChromium) {
  const std::string chromium = find_chromium();
  if (chromium.empty())
    GTEST_SKIP() << "no chromium at /usr/bin/chromium (or chromium-browser, google-chrome): the headless "
                    "rendering check is skipped";
  std::string pattern = (fs::temp_directory_path() / "mkbench-test-html-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const fs::path folder(pattern);
  const fs::path page = folder / "report.html", shot = folder / "out.png";
  ReportOptions options = with_format("html");
  std::ostringstream out, err;
  ASSERT_EQ(run_report({data_file("results_table1_fixture.json")}, options, page.string(), out, err), 0) << err.str();
  const std::string command =
      quote(chromium) + " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync --user-data-dir=" +
      quote((folder / "profile").string()) + " --screenshot=" + quote(shot.string()) +
      " --window-size=1400,2000 " + quote("file://" + page.string()) + " >/dev/null 2>&1";
  const int status = std::system(command.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command;
  ASSERT_TRUE(fs::exists(shot));
  EXPECT_GT(fs::file_size(shot), 20000u) << "a 1400x2000 screenshot of tables and plots is not tiny";
  std::error_code ignored;
  fs::remove_all(folder, ignored);
}

TEST(ReportInput, BadInputsExitTwo) {
  EXPECT_EQ(render({"does_not_exist.json"}, with_format("md")).exit_code, 2);
  EXPECT_EQ(render({"results_table1_fixture.json"}, with_format("pdf")).exit_code, 2);
  EXPECT_THROW(parse_prices("H100"), mk::InputError);
  EXPECT_THROW(parse_prices("H100=free"), mk::InputError);
  EXPECT_THROW(parse_prices("H100=-1"), mk::InputError);
  const auto prices = parse_prices("H100=1,T4=0.17");
  ASSERT_EQ(prices.size(), 2u);
  EXPECT_EQ(prices[1].first, "T4");
  EXPECT_DOUBLE_EQ(prices[1].second, 0.17);
}

TEST(ReportCommand, BinaryWritesMarkdownAndRejectsEmptyFiles) {
  std::string pattern = (fs::temp_directory_path() / "mkbench-test-report-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const fs::path folder(pattern);
  const fs::path out = folder / "table1.md";
  const std::string command = quote(MKBENCH_BINARY) + " report " + quote(data_file("results_table1_fixture.json")) +
                              " --format md --published " + quote(kPublished) + " --out " + quote(out.string());
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("another GPU, not our measurement"), std::string::npos);

  json empty = load_results_file(data_file("results_table1_fixture.json"));
  empty["rows"] = json::array();
  std::ofstream(folder / "empty.json") << empty.dump();
  const int status = std::system((quote(MKBENCH_BINARY) + " report " + quote((folder / "empty.json").string()) +
                                  " >/dev/null 2>&1").c_str());
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  std::error_code ignored;
  fs::remove_all(folder, ignored);
}

TEST(Base64, Rfc4648TestVectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode(std::string("\x89PNG\r\n\x1a\n", 8)), "iVBORw0KGgo=");
}

TEST(HtmlEscape, EscapesMarkup) {
  EXPECT_EQ(html_escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

}  // namespace
