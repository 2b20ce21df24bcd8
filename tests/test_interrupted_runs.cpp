// Runs killed with SIGKILL (issue 38, "Faults survived"): a suite's results file keeps every
// row it finished and --resume measures only the rest; a tune resumed after the kill reuses
// every cache record written before it and writes none twice. CPU only (cpu-openmp).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "core/errors.hpp"
#include "harness/results.hpp"
#include "process_helpers.hpp"
#include "tuner/cache.hpp"

namespace mk {
namespace {

using testing_support::kill_when;
using testing_support::read_text;
using testing_support::run_mkbench_args;
using testing_support::start_mkbench;
using testing_support::TempFolder;

// Six cpu-openmp rows of a few tenths of a second each: long enough to be killed between rows.
const char kSixRowSuite[] = R"({"name": "six-rows", "dataset": "uniform", "iters": 20, "warmup": 1,
  "cases": [{"dims": [4], "k": ["3..5"], "points": ["256K"], "variants": ["cpu-openmp"],
             "params": {"threads": [1, 2], "schedule_chunk": [1024, 8192, 65536]}}]})";

std::string write_suite(const TempFolder& folder) {
  const std::string path = folder.file("six.json");
  std::ofstream(path) << kSixRowSuite;
  return path;
}

// Rows of a results file that a reader can parse now (0 while none is written yet).
size_t rows_in(const std::string& path) {
  try {
    return load_results(path).rows.size();
  } catch (const Error&) {
    return 0;
  }
}

TEST(InterruptedSuite, KillNineKeepsEveryFinishedRowAndResumeMeasuresOnlyTheRest) {
  TempFolder folder("killed_suite");
  const std::string suite = write_suite(folder);
  const std::string out = folder.file("six.results.json");
  const std::string log = folder.file("log");
  const pid_t pid = start_mkbench({"suite", suite, "--out", out}, log);
  ASSERT_GT(pid, 0);
  const auto killed = kill_when(pid, [&] { return rows_in(out) >= 2; }, log);
  ASSERT_TRUE(killed.killed_mid_run) << "the suite ended before two rows were written:\n" << killed.result.output;

  const ResultFile survived = load_results(out);  // whole JSON: the writer renames complete files only
  ASSERT_GE(survived.rows.size(), 2u);
  ASSERT_LT(survived.rows.size(), 6u) << "killed after the last row; the test needs slower rows";
  for (const ResultRow& row : survived.rows) {
    EXPECT_EQ(row.status, "ok") << row.name;
    EXPECT_EQ(row.timing.samples_ms.size(), 20u) << row.name;
  }

  const auto resumed = run_mkbench_args({"suite", suite, "--out", out, "--resume"});
  ASSERT_EQ(resumed.exit_code, kExitOk) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming suite six-rows: " + std::to_string(survived.rows.size()) + " of 6 rows"),
            std::string::npos)
      << resumed.output;
  const ResultFile complete = load_results(out);
  ASSERT_EQ(complete.rows.size(), 6u);
  std::set<std::string> names;
  for (const ResultRow& row : complete.rows) {
    EXPECT_EQ(row.status, "ok") << row.name;
    EXPECT_TRUE(names.insert(row.name).second) << "row measured twice: " << row.name;
  }
  for (size_t i = 0; i < survived.rows.size(); ++i) {
    EXPECT_EQ(complete.rows[i].name, survived.rows[i].name);
    EXPECT_EQ(complete.rows[i].timing.samples_ms, survived.rows[i].timing.samples_ms)
        << "row " << i + 1 << " was measured again";
  }
}

TEST(InterruptedSuite, ResumeRefusesAnotherSuitesFile) {
  TempFolder folder("resume_other");
  const std::string suite = write_suite(folder);
  const std::string out = folder.file("smoke.json");
  const auto smoke = run_mkbench_args({"suite", "smoke", "--quick", "--out", out});
  ASSERT_EQ(smoke.exit_code, kExitOk) << smoke.output;
  const std::string before = read_text(out);
  const auto resumed = run_mkbench_args({"suite", suite, "--out", out, "--resume"});
  EXPECT_EQ(resumed.exit_code, kExitBadInput) << resumed.output;
  EXPECT_NE(resumed.output.find("holds suite 'smoke', not 'six-rows'"), std::string::npos) << resumed.output;
  EXPECT_EQ(read_text(out), before);

  const auto without_out = run_mkbench_args({"suite", suite, "--resume"});
  EXPECT_EQ(without_out.exit_code, kExitBadInput) << without_out.output;
}

// A file of a suite of the same name whose rows set other parameters, or another shape, is not
// this suite's progress (it was taken for done: a bad-input audit at 04dfbaa).
TEST(InterruptedSuite, ResumeRefusesRowsOfOtherParametersOrShape) {
  TempFolder folder("resume_params");
  auto suite_with = [&](const std::string& name, const std::string& dims, const std::string& threads) {
    const std::string path = folder.file(name);
    std::ofstream(path) << R"({"name": "one-row", "dataset": "uniform", "iters": 2, "warmup": 1,
      "cases": [{"dims": [)" << dims << R"(], "k": ["3"], "points": ["4K"], "variants": ["cpu-openmp"],
                 "params": {"threads": [)" << threads << "]}}]}";
    return path;
  };
  const std::string out = folder.file("one-row.results.json");
  const auto first = run_mkbench_args({"suite", suite_with("a.json", "4", "1"), "--out", out});
  ASSERT_EQ(first.exit_code, kExitOk) << first.output;
  const std::string before = read_text(out);
  for (const auto& other : {suite_with("b.json", "4", "2"), suite_with("c.json", "5", "1")}) {
    const auto resumed = run_mkbench_args({"suite", other, "--out", out, "--resume"});
    EXPECT_EQ(resumed.exit_code, kExitBadInput) << other << "\n" << resumed.output;
    EXPECT_NE(resumed.output.find("is not the suite's row 1"), std::string::npos) << resumed.output;
    EXPECT_EQ(read_text(out), before);
  }
  const auto same = run_mkbench_args({"suite", suite_with("d.json", "4", "1"), "--out", out, "--resume"});
  EXPECT_EQ(same.exit_code, kExitOk) << same.output;
}

// Complete lines of the cache (a kill during a write leaves a torn last line, ignored on load).
std::vector<tuner::CacheRecord> cache_records(const std::string& path) {
  std::ostringstream warnings;
  return tuner::load_cache_records(path, &warnings);
}

TEST(InterruptedTune, ResumeReusesEveryFinishedRecordAndDuplicatesNone) {
  TempFolder folder("killed_tune");
  const std::string cache = folder.file("cache.jsonl");
  const std::vector<std::string> command = {
      "tune",         "--dims",      "4",     "--k",          "3..5",  "--points",     "64K",
      "--variants",   "cpu-openmp",  "--strategy", "exhaustive", "--samples", "10",      "--warmup",
      "1",            "--cache",     cache,   "--config-out", folder.file("config.json")};
  const std::string log = folder.file("log");
  const pid_t pid = start_mkbench(command, log);
  ASSERT_GT(pid, 0);
  const auto killed = kill_when(pid, [&] { return cache_records(cache).size() >= 3; }, log);
  ASSERT_TRUE(killed.killed_mid_run) << "the tune ended before three points were cached:\n" << killed.result.output;

  const std::vector<tuner::CacheRecord> before = cache_records(cache);
  ASSERT_GE(before.size(), 3u);
  const auto resumed = run_mkbench_args(command);
  ASSERT_EQ(resumed.exit_code, kExitOk) << resumed.output;

  const std::vector<tuner::CacheRecord> after = cache_records(cache);
  std::map<std::string, int> seen;
  for (const auto& record : after) ++seen[record.key()];
  for (const auto& [key, count] : seen) EXPECT_EQ(count, 1) << "measured twice: " << key;
  for (const auto& record : before) EXPECT_EQ(seen.count(record.key()), 1u) << "lost: " << record.key();
  // The summary's evals(new/cached/space): the resumed run took every earlier record from the cache.
  const std::string counts = std::to_string(after.size() - before.size()) + "/" + std::to_string(before.size()) +
                             "/" + std::to_string(after.size());
  EXPECT_NE(resumed.output.find(counts), std::string::npos) << counts << "\n" << resumed.output;
}

}  // namespace
}  // namespace mk
