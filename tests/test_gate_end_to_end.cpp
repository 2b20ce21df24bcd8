// The results writer (harness/results.cpp) and its readers (reports/) meet here through the
// real binary: `run --out` and `suite --out` on cpu-openmp at small sizes produce the files,
// and `compare` and `report` must read them and give the verdicts the gate relies on. The
// files are measured once per test binary run; the candidates are edited copies of them.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "reports/results_io.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

Outcome mkbench(const std::string& arguments) {
  Outcome outcome;
  FILE* pipe = ::popen((quoted(MKBENCH_BINARY) + " " + arguments + " 2>&1").c_str(), "r");
  if (!pipe) return outcome;
  char buffer[4096];
  size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) outcome.output.append(buffer, got);
  const int status = ::pclose(pipe);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return outcome;
}

void write_json(const fs::path& path, const json& doc) { std::ofstream(path) << doc.dump(1); }

// Two cases of cpu-openmp, three rows, seconds on a 2-core machine; 12 samples a row so the
// test has the power the gate's rule assumes (more than 8 samples a side).
const char* kSuite = R"({
  "name": "gate-e2e",
  "description": "writer/reader round trip for the perf gate's tests",
  "dataset": "uniform",
  "iters": 12,
  "warmup": 1,
  "cases": [
    {"dims": [2, 4], "k": ["3..5"], "points": ["20000"], "variants": ["cpu-openmp"]},
    {"dims": [4], "k": ["8"], "points": ["20000"], "variants": ["cpu-openmp"]}
  ]
})";

class WriterAndReader : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string pattern = (fs::temp_directory_path() / "mkbench-e2e-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    std::ofstream(dir_ / "suite.json") << kSuite;
    suite_run_ = mkbench("suite " + quoted((dir_ / "suite.json").string()) + " --out " + quoted(suite_file()));
    single_run_ = mkbench("run --variant cpu-openmp --dims 3 --k 4 --points 10000 --iters 12 --warmup 1 --out " +
                          quoted(run_file()));
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  void SetUp() override {
    ASSERT_EQ(suite_run_.exit_code, 0) << suite_run_.output;
    ASSERT_EQ(single_run_.exit_code, 0) << single_run_.output;
  }
  static std::string suite_file() { return (dir_ / "suite-out.json").string(); }
  static std::string run_file() { return (dir_ / "run-out.json").string(); }
  static json suite_results() { return mk::reports::load_results_file(suite_file()); }
  static std::string candidate(const std::string& name, const json& doc) {
    write_json(dir_ / name, doc);
    return quoted((dir_ / name).string());
  }

  static fs::path dir_;
  static Outcome suite_run_, single_run_;
};

fs::path WriterAndReader::dir_;
Outcome WriterAndReader::suite_run_;
Outcome WriterAndReader::single_run_;

TEST_F(WriterAndReader, SuiteFileHoldsEveryRowWithItsSamples) {
  const json doc = suite_results();
  EXPECT_EQ(doc.at("suite"), "gate-e2e");
  ASSERT_EQ(doc.at("rows").size(), 3u);
  for (const json& row : doc.at("rows")) {
    EXPECT_EQ(row.at("status"), "ok") << row.dump();
    EXPECT_EQ(mk::reports::row_samples_ms(row).size(), 12u);
  }
}

TEST_F(WriterAndReader, EachFileComparedWithItselfIsAllSame) {
  for (const std::string& file : {suite_file(), run_file()}) {
    const Outcome outcome = mkbench("compare " + quoted(file) + " " + quoted(file) + " --format json");
    ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
    const json result = json::parse(outcome.output.substr(outcome.output.find('{')));
    const size_t rows = mk::reports::load_results_file(file).at("rows").size();
    EXPECT_EQ(result.at("counts").at("SAME"), rows) << outcome.output;
    EXPECT_EQ(result.at("unjudged"), 0);
  }
}

// Every sample ×1.5, or more where this machine's samples of a row spread wider than that,
// so the planted slowdown is unmistakable even on a loaded CI machine.
TEST_F(WriterAndReader, PlantedSlowdownIsSlowerAndExitsOne) {
  json slowed = suite_results();
  for (json& row : slowed["rows"]) {
    std::vector<double> samples = mk::reports::row_samples_ms(row);
    const auto [low, high] = std::minmax_element(samples.begin(), samples.end());
    const double factor = std::max(1.5, 1.01 * *high / *low);
    for (double& sample : samples) sample *= factor;
    row["timing"]["samples_ms"] = samples;
    row["summary"]["median_ms"] = row["summary"]["median_ms"].get<double>() * factor;
  }
  const Outcome outcome = mkbench("compare " + quoted(suite_file()) + " " + candidate("slowed.json", slowed) +
                                  " --format table");
  EXPECT_EQ(outcome.exit_code, 1) << outcome.output;
  EXPECT_NE(outcome.output.find("3 rows compared: 3 SLOWER"), std::string::npos) << outcome.output;
}

TEST_F(WriterAndReader, MissingRowsExitTwoAndAllowMissingAcceptsThem) {
  json partial = suite_results();
  partial["rows"].erase(partial["rows"].begin());
  const std::string file = candidate("partial.json", partial);
  const Outcome refused = mkbench("compare " + quoted(suite_file()) + " " + file);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("1 of 3 baseline rows could not be judged"), std::string::npos) << refused.output;
  const Outcome allowed = mkbench("compare " + quoted(suite_file()) + " " + file + " --allow-missing");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
}

TEST_F(WriterAndReader, RowsWithoutSamplesExitTwo) {
  json unsampled = suite_results();
  for (json& row : unsampled["rows"]) row["timing"]["samples_ms"] = json::array();
  const Outcome outcome = mkbench("compare " + quoted(suite_file()) + " " + candidate("unsampled.json", unsampled));
  EXPECT_EQ(outcome.exit_code, 2) << outcome.output;
  EXPECT_NE(outcome.output.find("no timing.samples_ms in the candidate"), std::string::npos) << outcome.output;
}

TEST_F(WriterAndReader, ARetunedRowIsParamsChangedNotDropped) {
  json retuned = suite_results();
  retuned["rows"][1]["params"]["schedule_chunk"] = 1024;
  const Outcome outcome = mkbench("compare " + quoted(suite_file()) + " " + candidate("retuned.json", retuned) +
                                  " --format json");
  EXPECT_EQ(outcome.exit_code, 0) << outcome.output;
  const json result = json::parse(outcome.output.substr(outcome.output.find('{')));
  EXPECT_EQ(result.at("counts").at("PARAMS-CHANGED"), 1);
  EXPECT_EQ(result.at("rows")[1].at("timing_verdict"), "SAME");
  EXPECT_TRUE(result.at("missing").empty());
}

TEST_F(WriterAndReader, ReportReadsTheSuiteAndTheRunFiles) {
  const Outcome md = mkbench("report " + quoted(suite_file()) + " " + quoted(run_file()) + " --format md");
  ASSERT_EQ(md.exit_code, 0) << md.output;
  // A named copy: a range-for over suite_results().at(...) reads a temporary that is freed
  // before the loop's first step (AddressSanitizer's heap-use-after-free, the asan preset).
  const json suite = suite_results();
  for (const json& row : suite.at("rows"))
    EXPECT_NE(md.output.find(row.at("name").get<std::string>()), std::string::npos) << md.output;
  const Outcome csv = mkbench("report " + quoted(suite_file()) + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.output;
  EXPECT_EQ(std::count(csv.output.begin(), csv.output.end(), '\n'), 4) << csv.output;  // header + 3 rows
}

}  // namespace
